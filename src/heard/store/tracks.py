"""A track's life in the store: the one place its status changes.

    create    -> recording | pending           (heard.store.meetings.create_meeting)
    upload    recording | failed | done -> pending   (new audio; a pending track only gets
                                                      the new file, a transcribing one refuses)
    claim     pending -> transcribing          (compare-and-set: one runner wins)
    recover   transcribing -> pending | failed (its holder is gone, or it is too old)
    record    transcribing -> done | pending | failed   (the claim's outcome; only while
                                                          the claim is still the current one)

``TRANSITIONS`` holds the table; every function below changes a status only from the states
the table allows, each in one transaction.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import CursorResult, select, true, update

from heard.errors import ConflictError, NotFoundError
from heard.store.database import Database
from heard.store.holder import LOCAL, Holders, this_holder
from heard.store.ids import resolve_meeting_id
from heard.store.models import AudioTrack, Participant, TrackStatus

__all__ = [
    "TRANSITIONS",
    "ClaimedTrack",
    "claim_track",
    "meeting_finished",
    "open_track_ids",
    "pending_track_ids",
    "record_diarization",
    "record_outcome",
    "recover_abandoned",
    "release_claims",
    "track_of",
    "track_status",
    "unheard_track",
    "upload_track",
]

S = TrackStatus
TRANSITIONS: dict[str, tuple[frozenset[TrackStatus], frozenset[TrackStatus]]] = {
    "upload": (frozenset({S.RECORDING, S.FAILED, S.DONE}), frozenset({S.PENDING})),
    "claim": (frozenset({S.PENDING}), frozenset({S.TRANSCRIBING})),
    "recover": (frozenset({S.TRANSCRIBING}), frozenset({S.PENDING, S.FAILED})),
    "record": (frozenset({S.TRANSCRIBING}), frozenset({S.DONE, S.PENDING, S.FAILED})),
    "unheard": (frozenset({S.RECORDING}), frozenset({S.FAILED})),
}
"""Each event: the statuses it may leave, and those it may lead to."""
FINISHED = frozenset({S.DONE, S.FAILED})


@dataclass(frozen=True, slots=True)
class ClaimedTrack:
    id: uuid.UUID
    participant: str
    location: str
    channel: int | None
    attempts: int
    language: str | None = None
    """The language the user gave for this track; None: the recognizer decides."""
    speakers: str | None = None
    """``auto`` or a number: a recording of several people, to diarize first."""
    diarization: dict[str, Any] | None = None
    """Who spoke when, when an earlier attempt made it already."""


def track_of(db: Database, meeting_id: uuid.UUID | str, participant: str, owner: str) -> uuid.UUID:
    """The id of ``participant``'s track in the meeting (``NotFoundError`` if none)."""
    with db.session() as s:
        mid = resolve_meeting_id(s, meeting_id, owner)
        track_id = s.scalar(
            select(AudioTrack.id)
            .join(Participant, AudioTrack.participant_id == Participant.id)
            .where(AudioTrack.meeting_id == mid, Participant.name == participant)
        )
        if track_id is None:
            raise NotFoundError(f"meeting {meeting_id} has no participant {participant!r}")
        return track_id


def track_status(db: Database, track_id: uuid.UUID) -> tuple[uuid.UUID, TrackStatus, datetime]:
    """The track's meeting, status and last change (``NotFoundError`` if it is gone)."""
    with db.session() as s:
        track = s.get(AudioTrack, track_id)
        if track is None:
            raise NotFoundError(f"no track {track_id}")
        return track.meeting_id, track.status, track.updated_at


def pending_track_ids(db: Database, meeting_id: uuid.UUID) -> list[uuid.UUID]:
    with db.session() as s:
        return list(
            s.scalars(
                select(AudioTrack.id)
                .where(AudioTrack.meeting_id == meeting_id, AudioTrack.status == S.PENDING)
                .order_by(AudioTrack.id)
            )
        )


def transcribing_meeting_ids(db: Database) -> list[uuid.UUID]:
    """Every meeting (any owner's) with a track some process claimed and has not finished."""
    with db.session() as s:
        return list(
            s.scalars(
                select(AudioTrack.meeting_id)
                .where(AudioTrack.status == S.TRANSCRIBING)
                .distinct()
                .order_by(AudioTrack.meeting_id)
            )
        )


def open_track_ids(db: Database, meeting_id: uuid.UUID) -> list[uuid.UUID]:
    """The meeting's tracks that are neither done nor failed."""
    with db.session() as s:
        return list(
            s.scalars(
                select(AudioTrack.id).where(
                    AudioTrack.meeting_id == meeting_id, AudioTrack.status.not_in(FINISHED)
                )
            )
        )


def meeting_finished(db: Database, meeting_id: uuid.UUID) -> bool:
    """True when every track of the meeting is done or failed."""
    return not open_track_ids(db, meeting_id)


def upload_track(db: Database, track_id: uuid.UUID, location: str) -> str:
    """New audio for a track: a recording, failed or done track starts over as pending; a
    pending one takes the new file. A track being transcribed refuses it (``ConflictError``):
    its transcript must be of the audio it read.

    Returns the location this upload replaced. The swap is a compare-and-set on the old
    location, so of racing uploads each replaces exactly one other and none is lost track of.
    """
    while True:
        with db.session() as s:
            track = s.get(AudioTrack, track_id)
            if track is None:
                raise NotFoundError("the meeting was deleted during the upload; nothing was kept")
            status, before = track.status, track.location
            if status is S.TRANSCRIBING:
                raise ConflictError("the track is being transcribed; upload again once it is done")
            values: dict[str, Any] = {"location": location, "diarization": None}
            if status in TRANSITIONS["upload"][0]:
                values |= {"status": S.PENDING, "attempts": 0, "last_error": None, "segments": None,
                           "language": None, "language_probability": None,
                           "warnings": None}  # fmt: skip
            result = s.execute(
                update(AudioTrack)
                .where(
                    AudioTrack.id == track_id,
                    AudioTrack.status == status,
                    AudioTrack.location == before,
                )
                .values(**values)
            )
            if cast(CursorResult[Any], result).rowcount == 1:
                return before
        # another upload (or a claim) changed the row between the read and the write: again


def unheard_track(db: Database, track_id: uuid.UUID, reason: str) -> bool:
    """A track still waiting for its recording that will get none (a call's track that
    carried no audio, or whose audio could not be kept): failed with ``reason``, so that its
    meeting is built from the others. Whether it was still recording."""
    with db.session() as s:
        result = s.execute(
            update(AudioTrack)
            .where(AudioTrack.id == track_id, AudioTrack.status.in_(TRANSITIONS["unheard"][0]))
            .values(status=S.FAILED, last_error=reason)
        )
    return cast(CursorResult[Any], result).rowcount == 1


def claim_track(
    db: Database, track_id: uuid.UUID, now: datetime, holder: str | None = None
) -> ClaimedTrack | None:
    """``pending -> transcribing`` if still pending (compare-and-set); None if someone else won.

    ``holder`` names the process that will transcribe it (default: this one).
    """
    with db.session() as s:
        result = s.execute(
            update(AudioTrack)
            .where(AudioTrack.id == track_id, AudioTrack.status.in_(TRANSITIONS["claim"][0]))
            .values(
                status=S.TRANSCRIBING,
                attempts=AudioTrack.attempts + 1,
                updated_at=now,
                claimed_by=holder or this_holder(),
            )
        )
        if cast(CursorResult[Any], result).rowcount != 1:
            return None
        track = s.get_one(AudioTrack, track_id)
        name = s.get_one(Participant, track.participant_id).name
        return ClaimedTrack(
            track.id, name, track.location, track.channel, track.attempts, track.language_asked,
            track.speakers, track.diarization,
        )  # fmt: skip


def recover_abandoned(
    db: Database,
    meeting_id: uuid.UUID,
    now: datetime,
    *,
    stuck_after_s: float,
    max_attempts: int,
    holders: Holders = LOCAL,
) -> int:
    """Return abandoned ``transcribing`` tracks to ``pending`` (or ``failed`` after the last
    attempt); count them.

    A track is abandoned when the process holding its claim is gone (``holders`` knows: at once
    for a process of this host, by its lease for one that keeps one) or when its claim is
    older than ``stuck_after_s`` and its holder keeps no lease (a runner elsewhere).
    """
    cutoff = now - timedelta(seconds=stuck_after_s)
    with db.session() as s:
        transcribing = s.scalars(
            select(AudioTrack).where(
                AudioTrack.meeting_id == meeting_id,
                AudioTrack.status.in_(TRANSITIONS["recover"][0]),
            )
        ).all()
        recovered = 0
        for track in transcribing:
            if holders.gone(track.claimed_by):
                why = f"its process {track.claimed_by} is gone"
            elif track.updated_at < cutoff and not holders.renewing(track.claimed_by):
                why = f"no progress for {stuck_after_s:.0f} s"
            else:
                continue
            recovered += 1
            if track.attempts >= max_attempts:
                track.status = S.FAILED
                track.last_error = (
                    f"abandoned in transcribing after {track.attempts} attempts ({why})"
                )
            else:
                track.status = S.PENDING
                track.last_error = f"abandoned in transcribing ({why})"
            track.updated_at = now
            track.claimed_by = None
        return recovered


def release_claims(
    db: Database, holder: str, keep: set[uuid.UUID], now: datetime
) -> list[uuid.UUID]:
    """Give back the ``transcribing`` tracks ``holder`` claimed in meetings other than ``keep``
    (those it is running): a run cut short by a store that went away mid-track left them so.
    They are pending again, the attempt counted; the meetings they belong to."""
    with db.session() as s:
        claimed = s.scalars(
            select(AudioTrack).where(
                AudioTrack.claimed_by == holder,
                AudioTrack.status.in_(TRANSITIONS["recover"][0]),
                AudioTrack.meeting_id.not_in(keep) if keep else true(),
            )
        ).all()
        for track in claimed:
            track.status = S.PENDING
            track.last_error = "given back: its run stopped while the store was away"
            track.updated_at = now
            track.claimed_by = None
        return sorted({track.meeting_id for track in claimed})


def record_diarization(db: Database, claim: ClaimedTrack, diarization: dict[str, Any]) -> bool:
    """Keep who spoke when on the claimed track, so that a later attempt reuses it; False
    when the claim is no longer the track's current one (nothing is written)."""
    with db.session() as s:
        result = s.execute(
            update(AudioTrack)
            .where(
                AudioTrack.id == claim.id,
                AudioTrack.status == S.TRANSCRIBING,
                AudioTrack.attempts == claim.attempts,
            )
            .values(diarization=diarization)
        )
        return cast(CursorResult[Any], result).rowcount == 1


def record_outcome(
    db: Database,
    claim: ClaimedTrack,
    now: datetime,
    *,
    segments: list[dict[str, Any]] | None,
    transcriber: str,
    language: str | None = None,
    language_probability: float | None = None,
    warnings: Sequence[str] = (),
    error: str | None = None,
    retry: bool = False,
    given_back: bool = False,
) -> TrackStatus:
    """Write what the claim's transcription gave: its ``segments`` and their ``language``
    (``done``), or its ``error``: ``pending`` again when ``retry``, else ``failed``;
    ``given_back``: its process is stopping; the track stays claimed by it, its attempt not
    counted, so that the next start takes it back and resumes it. Returns the new status.

    Only the claim's own ``transcribing`` state is overwritten: a track recovered and claimed
    again meanwhile belongs to the newer attempt, and is left as it is.
    """
    values: dict[str, Any] = {"updated_at": now, "claimed_by": None}
    if given_back:  # still this process's claim: once it is gone, the next start resumes it
        values = {"updated_at": now, "last_error": error, "attempts": AudioTrack.attempts - 1,
                  "status": S.TRANSCRIBING}  # fmt: skip
    elif error is None:
        values |= {"status": S.DONE, "segments": segments, "transcriber": transcriber,
                   "last_error": None, "language": language,
                   "language_probability": language_probability,
                   "warnings": list(warnings) or None}  # fmt: skip
    else:
        values |= {"status": S.PENDING if retry else S.FAILED, "last_error": error}
    with db.session() as s:
        s.execute(
            update(AudioTrack)
            .where(
                AudioTrack.id == claim.id,
                AudioTrack.status.in_(TRANSITIONS["record"][0]),
                AudioTrack.attempts == claim.attempts,
            )
            .values(**values)
        )
    return TrackStatus(values["status"])
