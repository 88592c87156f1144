"""``run_pipeline``: a meeting's tracks to stored phrases, in this process.

Idempotent: run it again after a crash at any point, or after it asked to retry
later, and it converges on the same phrases without duplicates.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from heard.asr.transcriber import Transcriber
from heard.diarize import Diarizer
from heard.errors import StoppingError
from heard.meetings.steps import (
    ClaimedTrack,
    Clock,
    PipelineOptions,
    build_meeting,
    claim_track,
    recover_stuck,
    transcribe_claimed,
)
from heard.store.database import Database
from heard.store.ids import find_meeting_id
from heard.store.models import MeetingStatus, TrackStatus, utc_now
from heard.store.tracks import pending_track_ids

__all__ = ["PipelineOutcome", "PipelineResult", "TrackProgress", "run_pipeline"]


class PipelineOutcome(StrEnum):
    COMPLETE = "complete"
    PARTIAL = "partial"
    """Phrases were built, but one or more tracks failed."""
    FAILED = "failed"
    """Every track failed; there are no phrases."""
    RETRY_LATER = "retry_later"
    """A track is still recording (or being transcribed elsewhere); run again later."""
    NOOP = "noop"
    """No transcriber is configured; nothing was done."""
    STOPPED = "stopped"
    """The process began to shut down: the track being transcribed was given back (its attempt
    not counted; the next start resumes it) and no other was started."""


@dataclass(frozen=True, slots=True)
class PipelineResult:
    meeting_id: uuid.UUID
    outcome: PipelineOutcome
    phrases: int = 0
    retry_in_s: float | None = None
    waiting_on: tuple[str, ...] = ()
    failed: tuple[str, ...] = ()


class TrackProgress:
    """Callbacks a caller may pass to watch the run (the CLI draws progress bars with it)."""

    def started(self, track: ClaimedTrack) -> None: ...
    def advanced(self, track: ClaimedTrack, done_s: float, total_s: float) -> None: ...
    def finished(self, track: ClaimedTrack, status: TrackStatus) -> None: ...


def run_pipeline(
    meeting_id: uuid.UUID | str,
    *,
    db: Database,
    transcriber: Transcriber | None,
    options: PipelineOptions | None = None,
    clock: Clock = utc_now,
    progress: TrackProgress | None = None,
    stop: threading.Event | None = None,
    diarizer: Diarizer | None = None,
) -> PipelineResult:
    """Transcribe the meeting's pending tracks, then (re)build its phrases.

    ``transcriber=None`` means transcription is disabled: nothing is done. A recording of
    several people is diarized by ``diarizer`` (default: ``heard.diarize.default_diarizer``,
    loaded only when such a track is met). Once ``stop`` is
    set (the process is shutting down) the run ends at the track's next segment: STOPPED.
    """
    options = options or PipelineOptions()
    mid = find_meeting_id(db, meeting_id)
    if transcriber is None:
        return PipelineResult(mid, PipelineOutcome.NOOP)
    recover_stuck(db, mid, clock(), options)
    while True:
        pending = pending_track_ids(db, mid)
        if not pending:
            break
        for track_id in pending:
            if stop is not None and stop.is_set():
                return PipelineResult(mid, PipelineOutcome.STOPPED)
            claim = claim_track(db, track_id, clock())
            if claim is None:
                continue  # another runner has it
            if progress:
                progress.started(claim)
            advance = _watch(claim, progress, stop)
            status = transcribe_claimed(
                db, claim, transcriber, clock, options, advance, diarizer=diarizer
            )
            if progress:
                progress.finished(claim, status)
    built = build_meeting(db, mid, options)
    if not built.built:
        return PipelineResult(
            mid,
            PipelineOutcome.RETRY_LATER,
            retry_in_s=options.retry_delay_s,
            waiting_on=built.waiting_on,
        )
    outcome = {
        MeetingStatus.COMPLETE: PipelineOutcome.COMPLETE,
        MeetingStatus.PARTIAL: PipelineOutcome.PARTIAL,
        MeetingStatus.FAILED: PipelineOutcome.FAILED,
    }[built.status]
    return PipelineResult(mid, outcome, phrases=built.phrases, failed=built.failed)


def _watch(
    claim: ClaimedTrack, progress: TrackProgress | None, stop: threading.Event | None
) -> Callable[[float, float], None] | None:
    """What the transcriber calls after each segment: ``progress``, and a look at ``stop``."""
    if progress is None and stop is None:
        return None

    def advanced(done_s: float, total_s: float) -> None:
        if stop is not None and stop.is_set():
            raise StoppingError(f"stopped at {done_s:.0f} of {total_s:.0f} s: shutting down")
        if progress is not None:
            progress.advanced(claim, done_s, total_s)

    return advanced
