"""The meeting pipeline's steps, each one short transaction, safe to repeat.

The same steps serve the in-process run (``run_pipeline``) and the Celery tasks:

* ``recover_stuck`` returns tracks left in ``transcribing`` by a runner that died to
  ``pending``, or marks them ``failed`` after the last attempt: at once when the runner was a
  process of this host that is gone, else once the claim is older than a timeout;
* ``claim_track`` moves one track ``pending -> transcribing`` with a
  compare-and-set UPDATE, so two runners never transcribe the same track, and records
  which process holds the claim (``heard.pipeline.holder``);
* ``transcribe_claimed`` runs the transcriber outside any transaction and
  records segments (``done``) or the error (``pending`` again, or ``failed``);
* ``build_meeting`` replaces the meeting's phrases in one transaction once every
  track is done or failed. It locks the meeting row on PostgreSQL so concurrent
  builds serialize; phrase positions are unique per meeting, so a duplicate
  insert fails instead of doubling the transcript.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import CursorResult, delete, select, update

from heard.asr.transcriber import ProgressCallback, Transcriber
from heard.errors import InputError
from heard.pipeline.holder import holder_is_gone, this_holder
from heard.settings import Settings
from heard.store.database import Database
from heard.store.models import AudioTrack, Meeting, MeetingStatus, Participant, Phrase, TrackStatus
from heard.timeline.phrases import INTERJECTION_THRESHOLD_S, Segment, Track, Word, build_phrases

__all__ = [
    "BuildResult",
    "PipelineOptions",
    "build_meeting",
    "claim_track",
    "recover_stuck",
    "segments_from_json",
    "segments_to_json",
    "transcribe_claimed",
]

Clock = Callable[[], datetime]


@dataclass(frozen=True, slots=True)
class PipelineOptions:
    stuck_after_s: float = 1800.0
    """A track ``transcribing`` this long was abandoned by a crashed runner (tiny.en
    transcribes an hour of audio in a few minutes on 2 cores; 30 min is a wide margin)."""
    max_attempts: int = 3
    """Transcription attempts before a track is marked failed."""
    retry_delay_s: float = 30.0
    """How long to wait before trying again while a track is still recording."""
    interjection_threshold_s: float = INTERJECTION_THRESHOLD_S

    @classmethod
    def from_settings(cls, chosen: Settings) -> PipelineOptions:
        """These options, with what ``chosen`` sets in place of the defaults."""
        default = cls()
        return cls(
            stuck_after_s=chosen.stuck_after_s or default.stuck_after_s,
            retry_delay_s=chosen.retry_delay_s or default.retry_delay_s,
        )


def segments_to_json(segments: list[Segment]) -> list[dict[str, Any]]:
    return [
        {
            "start": s.start,
            "end": s.end,
            "text": s.text,
            "words": [[w.start, w.end, w.text, w.probability] for w in s.words],
        }
        for s in segments
    ]


def segments_from_json(data: list[dict[str, Any]]) -> list[Segment]:
    return [
        Segment(d["start"], d["end"], d["text"], tuple(Word(*w) for w in d.get("words", ())))
        for d in data
    ]


def recover_stuck(
    db: Database, meeting_id: uuid.UUID, now: datetime, options: PipelineOptions
) -> int:
    """Return abandoned ``transcribing`` tracks to ``pending`` (or ``failed``); count them.

    A track is abandoned when the process holding its claim is gone (known at once on this
    host) or when its claim is older than ``stuck_after_s`` (a runner elsewhere).
    """
    cutoff = now - timedelta(seconds=options.stuck_after_s)
    with db.session() as s:
        transcribing = s.scalars(
            select(AudioTrack).where(
                AudioTrack.meeting_id == meeting_id,
                AudioTrack.status == TrackStatus.TRANSCRIBING,
            )
        ).all()
        stuck = 0
        for track in transcribing:
            if holder_is_gone(track.claimed_by):
                why = f"its process {track.claimed_by} is gone"
            elif track.updated_at < cutoff:
                why = f"no progress for {options.stuck_after_s:.0f} s"
            else:
                continue
            stuck += 1
            if track.attempts >= options.max_attempts:
                track.status = TrackStatus.FAILED
                track.last_error = (
                    f"abandoned in transcribing after {track.attempts} attempts ({why})"
                )
            else:
                track.status = TrackStatus.PENDING
                track.last_error = f"abandoned in transcribing ({why})"
            track.updated_at = now
            track.claimed_by = None
        return stuck


@dataclass(frozen=True, slots=True)
class ClaimedTrack:
    id: uuid.UUID
    participant: str
    location: str
    channel: int | None
    attempts: int


def claim_track(
    db: Database, track_id: uuid.UUID, now: datetime, holder: str | None = None
) -> ClaimedTrack | None:
    """``pending -> transcribing`` if still pending (compare-and-set); None if someone else won.

    ``holder`` names the process that will transcribe it (default: this one).
    """
    with db.session() as s:
        result = s.execute(
            update(AudioTrack)
            .where(AudioTrack.id == track_id, AudioTrack.status == TrackStatus.PENDING)
            .values(
                status=TrackStatus.TRANSCRIBING,
                attempts=AudioTrack.attempts + 1,
                updated_at=now,
                claimed_by=holder or this_holder(),
            )
        )
        if cast(CursorResult[Any], result).rowcount != 1:
            return None
        track = s.get_one(AudioTrack, track_id)
        name = s.get_one(Participant, track.participant_id).name
        return ClaimedTrack(track.id, name, track.location, track.channel, track.attempts)


def transcribe_claimed(
    db: Database,
    claim: ClaimedTrack,
    transcriber: Transcriber,
    clock: Clock,
    options: PipelineOptions,
    on_progress: ProgressCallback | None = None,
) -> TrackStatus:
    """Transcribe a claimed track and record the outcome; returns the track's new status.

    A bad file (``InputError``) fails the track at once; any other error leaves it
    ``pending`` for another attempt until ``max_attempts``.
    """
    try:
        segments = transcriber.transcribe(
            claim.location, channel=claim.channel, on_progress=on_progress
        )
        error: str | None = None
        permanent = False
    except InputError as e:
        segments, error, permanent = [], str(e), True
    except Exception as e:  # noqa: BLE001 - any transcriber failure is recorded on the track
        segments, error, permanent = [], f"{type(e).__name__}: {e}", False
    with db.session() as s:
        values: dict[str, Any] = {"updated_at": clock(), "claimed_by": None}
        if error is None:
            values |= {
                "status": TrackStatus.DONE,
                "segments": segments_to_json(segments),
                "transcriber": transcriber.name,
                "last_error": None,
            }
        elif permanent or claim.attempts >= options.max_attempts:
            values |= {"status": TrackStatus.FAILED, "last_error": error}
        else:
            values |= {"status": TrackStatus.PENDING, "last_error": error}
        # Only the claim's own transcribing state may be overwritten: a track that was
        # recovered and re-claimed meanwhile belongs to the newer attempt.
        s.execute(
            update(AudioTrack)
            .where(
                AudioTrack.id == claim.id,
                AudioTrack.status == TrackStatus.TRANSCRIBING,
                AudioTrack.attempts == claim.attempts,
            )
            .values(**values)
        )
        return TrackStatus(values.get("status", TrackStatus.TRANSCRIBING))


@dataclass(frozen=True, slots=True)
class BuildResult:
    built: bool
    """False when some track is not finished yet (nothing was written)."""
    status: MeetingStatus
    phrases: int
    waiting_on: tuple[str, ...] = ()
    failed: tuple[str, ...] = ()


def build_meeting(db: Database, meeting_id: uuid.UUID, options: PipelineOptions) -> BuildResult:
    """Replace the meeting's phrases with those of all done tracks, in one transaction."""
    with db.session() as s:
        meeting = s.scalars(select(Meeting).where(Meeting.id == meeting_id).with_for_update()).one()
        rows = s.execute(
            select(AudioTrack, Participant.name)
            .join(Participant, AudioTrack.participant_id == Participant.id)
            .where(AudioTrack.meeting_id == meeting_id)
        ).all()
        waiting = tuple(
            sorted(
                name for t, name in rows if t.status not in (TrackStatus.DONE, TrackStatus.FAILED)
            )
        )
        if waiting:
            return BuildResult(False, meeting.status, 0, waiting_on=waiting)
        failed = tuple(sorted(name for t, name in rows if t.status is TrackStatus.FAILED))
        ids = {name: t.participant_id for t, name in rows}
        tracks = {
            name: Track(segments_from_json(t.segments or []), t.offset_s)
            for t, name in rows
            if t.status is TrackStatus.DONE
        }
        drafts = build_phrases(tracks, interjection_threshold_s=options.interjection_threshold_s)
        s.execute(delete(Phrase).where(Phrase.meeting_id == meeting_id))
        t0 = meeting.started_at
        s.add_all(
            Phrase(
                meeting_id=meeting_id,
                participant_id=ids[d.participant],
                position=i,
                text=d.text,
                start_at=t0 + timedelta(seconds=d.start),
                end_at=t0 + timedelta(seconds=d.end),
            )
            for i, d in enumerate(drafts)
        )
        if not failed:
            meeting.status = MeetingStatus.COMPLETE
        elif len(failed) == len(rows):
            meeting.status = MeetingStatus.FAILED
        else:
            meeting.status = MeetingStatus.PARTIAL
        return BuildResult(True, meeting.status, len(drafts), failed=failed)
