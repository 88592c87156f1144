"""The work behind the meeting commands: the store, the pipeline with progress bars, the queue.

The commands import this inside their bodies, so that ``heard --help`` loads none of it.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeRemainingColumn

from heard.errors import InputError
from heard.meetings import PipelineOutcome, TrackProgress, jobs, run_pipeline
from heard.meetings.steps import ClaimedTrack
from heard.settings import settings
from heard.store.database import Database
from heard.store.meetings import TrackSpec
from heard.store.models import TrackStatus
from heard.store.views import get_meeting, track_states

if TYPE_CHECKING:
    from heard.asr.transcriber import Transcriber
    from heard.asr.whisper import WhisperOptions


class _Bars(TrackProgress):
    """One progress bar per track, in seconds of audio."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.tasks: dict[object, TaskID] = {}

    def started(self, track: ClaimedTrack) -> None:
        label = f"{track.participant} ({Path(track.location).name})"
        self.tasks[track.id] = self.progress.add_task(label, total=0.0, status="")

    def advanced(self, track: ClaimedTrack, done_s: float, total_s: float) -> None:
        self.progress.update(self.tasks[track.id], completed=done_s, total=total_s)

    def finished(self, track: ClaimedTrack, status: TrackStatus) -> None:
        task = self.tasks[track.id]
        total = self.progress.tasks[task].total or 1
        mark = "[green]done" if status is TrackStatus.DONE else f"[red]{status}"
        self.progress.update(task, completed=total, total=total, status=mark)


def store_meeting(
    tracks: list[TrackSpec], *, title: str, db: Database, started_at: datetime | None = None
) -> str:
    """Check every file (and the diarization models, for a recording of several people), then
    store the meeting with its tracks pending; the meeting id."""
    meeting_id = jobs.submit(
        db, tracks, title=title, started_at=started_at, migrate=True,
        max_track_s=settings().max_track_s, diarize_here=True,
    )  # fmt: skip
    return str(meeting_id)


def recognizer(whisper: WhisperOptions, languages: Iterable[str | None]) -> Transcriber:
    """faster-whisper as ``whisper`` chooses, loaded and checked against every language the
    tracks ask for: a model or language that cannot be had fails here, before work is stored."""
    from heard.asr.whisper import FasterWhisperTranscriber

    transcriber = FasterWhisperTranscriber(whisper)
    transcriber.prepare(languages)
    return transcriber


def transcribe_stored(
    db: Database,
    meeting_id: str,
    *,
    whisper: WhisperOptions | None = None,
    transcriber: Transcriber | None = None,
    quiet: bool = False,
) -> str:
    """Run the pipeline on a stored meeting with a progress bar per track; the meeting id.

    The same call finishes a meeting whose run was interrupted: tracks left behind by a dead
    process are taken up again, finished ones are kept, and the phrases are rebuilt once.
    """
    from heard.asr.whisper import WhisperOptions

    meeting = get_meeting(db, meeting_id)
    if transcriber is None:
        languages = [t.language_asked for t in track_states(db, meeting.id)]
        transcriber = recognizer(whisper or WhisperOptions(), languages)
    console = Console(stderr=True, quiet=quiet)
    console.print(f"meeting [bold]{meeting.id}[/] in {db.safe_url}")
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed:>6.1f}/{task.total:.1f} s audio"),
        TimeRemainingColumn(),
        TextColumn("{task.fields[status]}"),
    )
    with Progress(*columns, console=console, transient=False) as progress:
        result = run_pipeline(meeting.id, db=db, transcriber=transcriber, progress=_Bars(progress))
    short = str(meeting.id)[:8]
    if result.outcome is PipelineOutcome.RETRY_LATER:
        raise InputError(
            f"meeting {short} waits on {', '.join(result.waiting_on)} (still recording, or being"
            f" transcribed by another process); `heard status {short}` shows which"
        )
    states = track_states(db, meeting.id)
    for t in states:
        for warning in t.warnings:
            console.print(f"warning: {t.participant}: {warning}", markup=False,
                          highlight=False, soft_wrap=True)  # fmt: skip
    if result.failed:
        reasons = {t.participant: t.last_error for t in states}
        lines = "; ".join(f"{name}: {reasons.get(name)}" for name in result.failed)
        raise InputError(
            f"meeting {meeting.id} is stored without its failed tracks ({lines});"
            f" `heard export {short}` writes what was transcribed"
        )
    return str(meeting.id)


def transcribe_meeting(
    tracks: list[TrackSpec],
    *,
    title: str,
    db: Database,
    whisper: WhisperOptions | None = None,
    started_at: datetime | None = None,
    quiet: bool = False,
) -> str:
    """Check the files and the model, store the meeting, run the pipeline with progress bars;
    the meeting id."""
    from heard.asr.whisper import WhisperOptions

    transcriber = recognizer(whisper or WhisperOptions(), [t.language for t in tracks])
    meeting_id = store_meeting(tracks, title=title, db=db, started_at=started_at)
    return transcribe_stored(db, meeting_id, transcriber=transcriber, quiet=quiet)


def enqueue(tracks: list[TrackSpec], *, title: str, db: Database, started_at: datetime) -> str:
    """Check files and broker, store the meeting, send its tasks; the meeting id.

    Nothing is stored when a file or the broker is bad.
    """
    title = title or f"Meeting {started_at:%Y-%m-%d %H:%M}"
    meeting_id = jobs.submit(
        db, tracks, title=title, started_at=started_at, workers=True, migrate=True,
        max_track_s=settings().max_track_s,
    )  # fmt: skip
    return str(meeting_id)
