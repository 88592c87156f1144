"""The track state machine: each event changes a status only from the states its row allows."""

from __future__ import annotations

import contextlib
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import update

from heard.errors import ConflictError
from heard.store.database import Database
from heard.store.meetings import TrackSpec, create_meeting
from heard.store.models import AudioTrack, TrackStatus
from heard.store.tracks import (
    TRANSITIONS,
    ClaimedTrack,
    claim_track,
    record_outcome,
    recover_abandoned,
    unheard_track,
    upload_track,
)
from heard.store.views import track_states

T0 = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)
LATER = T0 + timedelta(hours=2)


def track_in(db: Database, status: TrackStatus, attempts: int = 1) -> tuple[uuid.UUID, uuid.UUID]:
    """A meeting with one track in ``status``: (meeting id, track id)."""
    mid = create_meeting(db, title="t", started_at=T0, tracks=[TrackSpec("ana", "a.wav")])
    [track] = track_states(db, mid)
    with db.session() as s:
        s.execute(
            update(AudioTrack)
            .where(AudioTrack.id == track.id)
            .values(status=status, attempts=attempts, updated_at=T0, claimed_by="elsewhere:1:1")
        )
    return mid, track.id


def status_of(db: Database, mid: uuid.UUID) -> TrackStatus:
    return track_states(db, mid)[0].status


def apply(event: str, db: Database, mid: uuid.UUID, tid: uuid.UUID, attempts: int) -> None:
    if event == "upload":
        with contextlib.suppress(ConflictError):  # a transcribing track refuses new audio
            upload_track(db, tid, "new.wav")
    elif event == "claim":
        claim_track(db, tid, LATER)
    elif event == "recover":
        recover_abandoned(db, mid, LATER, stuck_after_s=60, max_attempts=3)
    elif event == "unheard":
        unheard_track(db, tid, "no audio")
    else:
        claim = ClaimedTrack(tid, "ana", "a.wav", None, attempts)
        record_outcome(db, claim, LATER, segments=[], transcriber="fake")


@pytest.mark.parametrize("status", list(TrackStatus), ids=str)
@pytest.mark.parametrize("event", list(TRANSITIONS))
def test_an_event_moves_a_track_only_from_the_states_its_row_allows(
    db: Database, event: str, status: TrackStatus
) -> None:
    sources, targets = TRANSITIONS[event]
    mid, tid = track_in(db, status)
    apply(event, db, mid, tid, attempts=1)
    after = status_of(db, mid)
    if status in sources:
        assert after in targets
    else:
        assert after is status


@pytest.mark.parametrize(
    ("attempts", "expected"), [(1, TrackStatus.PENDING), (3, TrackStatus.FAILED)]
)
def test_recover_gives_a_track_another_attempt_until_the_last(
    db: Database, attempts: int, expected: TrackStatus
) -> None:
    mid, _ = track_in(db, TrackStatus.TRANSCRIBING, attempts)
    assert recover_abandoned(db, mid, T0 + timedelta(seconds=30), stuck_after_s=60,
                             max_attempts=3) == 0  # fmt: skip
    assert recover_abandoned(db, mid, LATER, stuck_after_s=60, max_attempts=3) == 1
    [track] = track_states(db, mid)
    assert (track.status, track.claimed_by) == (expected, None)
    assert "no progress for 60 s" in (track.last_error or "")


def test_record_writes_only_over_the_claim_it_belongs_to(db: Database) -> None:
    mid, tid = track_in(db, TrackStatus.TRANSCRIBING, attempts=2)
    stale = ClaimedTrack(tid, "ana", "a.wav", None, attempts=1)  # an earlier, abandoned attempt
    record_outcome(db, stale, LATER, segments=[], transcriber="fake")
    assert status_of(db, mid) is TrackStatus.TRANSCRIBING
    current = ClaimedTrack(tid, "ana", "a.wav", None, attempts=2)
    assert record_outcome(db, current, LATER, segments=None, transcriber="fake",
                          error="GPU lost", retry=True) is TrackStatus.PENDING  # fmt: skip
    assert track_states(db, mid)[0].last_error == "GPU lost"


def test_new_audio_leaves_none_of_the_old_transcriptions_warnings(db: Database) -> None:
    mid, tid = track_in(db, TrackStatus.TRANSCRIBING, attempts=1)
    claim = ClaimedTrack(tid, "ana", "a.wav", None, attempts=1)
    record_outcome(db, claim, LATER, segments=[], transcriber="fake",
                   warnings=["this speech may not be English"])  # fmt: skip
    assert track_states(db, mid)[0].warnings == ("this speech may not be English",)
    upload_track(db, tid, "english.wav")
    assert track_states(db, mid)[0].warnings == ()


def test_upload_starts_a_finished_track_over_and_a_running_one_refuses(db: Database) -> None:
    mid, tid = track_in(db, TrackStatus.DONE, attempts=2)
    upload_track(db, tid, "again.wav")
    [track] = track_states(db, mid)
    assert (track.status, track.attempts, track.location) == (TrackStatus.PENDING, 0, "again.wav")
    assert upload_track(db, tid, "third.wav") == "again.wav"  # what it replaced, to delete
    mid, tid = track_in(db, TrackStatus.TRANSCRIBING)
    with pytest.raises(ConflictError, match="being transcribed"):
        upload_track(db, tid, "later.wav")
    [track] = track_states(db, mid)
    assert (track.status, track.location) == (TrackStatus.TRANSCRIBING, "a.wav")
