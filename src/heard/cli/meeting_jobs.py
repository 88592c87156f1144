"""The work behind the meeting commands: the store, the pipeline with progress bars, the queue.

The commands import this inside their bodies, so that ``heard --help`` loads none of it.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeRemainingColumn

from heard.asr.audio import probe_audio
from heard.errors import InputError, NotFoundError
from heard.pipeline import PipelineOutcome, TrackProgress, run_pipeline
from heard.pipeline.steps import ClaimedTrack
from heard.store.database import Database
from heard.store.meetings import (
    TrackSpec,
    create_meeting,
    get_meeting,
    meeting_phrases,
    track_states,
)
from heard.store.models import TrackStatus
from heard.timeline.formats import TimedPhrase, TranscriptDoc


def open_store(url: str | None, meeting_id: str | None = None) -> Database:
    """The store, its schema upgraded; asking for a meeting in an empty store is not found."""
    db = Database(url)
    if db.has_schema():
        db.migrate()
    elif meeting_id is not None:
        raise NotFoundError(f"no meeting {meeting_id!r} (no meetings in {db.safe_url})")
    return db


def document(db: Database, meeting_id: str) -> TranscriptDoc:
    meeting = get_meeting(db, meeting_id)
    phrases = [
        TimedPhrase(p.participant, p.start_s, p.end_s, p.text, p.start_at, p.end_at)
        for p in meeting_phrases(db, meeting.id)
    ]
    return TranscriptDoc(phrases, meeting.title, meeting.started_at, str(meeting.id))


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


def transcribe_meeting(
    tracks: list[TrackSpec],
    *,
    title: str,
    db: Database,
    started_at: datetime | None = None,
    quiet: bool = False,
) -> str:
    """Check the files, store the meeting, run the pipeline with progress bars; the meeting id."""
    for spec in tracks:
        info = probe_audio(spec.location)
        if spec.channel is not None and info.channels < 2:
            raise InputError(f"{spec.location}: has {info.channels} channel, cannot take #right")
    db.migrate()
    meeting_id = create_meeting(db, title=title, tracks=tracks, started_at=started_at)
    from heard.asr.whisper import FasterWhisperTranscriber

    transcriber = FasterWhisperTranscriber()
    console = Console(stderr=True, quiet=quiet)
    console.print(f"meeting [bold]{meeting_id}[/] in {db.safe_url}")
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed:>6.1f}/{task.total:.1f} s audio"),
        TimeRemainingColumn(),
        TextColumn("{task.fields[status]}"),
    )
    with Progress(*columns, console=console, transient=False) as progress:
        result = run_pipeline(meeting_id, db=db, transcriber=transcriber, progress=_Bars(progress))
    if result.outcome is PipelineOutcome.RETRY_LATER:
        console.print(f"waiting on {', '.join(result.waiting_on)}; run again later")
    if result.failed:
        reasons = {t.participant: t.last_error for t in track_states(db, meeting_id)}
        lines = "; ".join(f"{name}: {reasons.get(name)}" for name in result.failed)
        raise InputError(
            f"meeting {meeting_id} is stored without its failed tracks ({lines});"
            f" `heard export {str(meeting_id)[:8]}` writes what was transcribed"
        )
    return str(meeting_id)


def enqueue(tracks: list[TrackSpec], *, title: str, db: Database, started_at: datetime) -> str:
    """Check files and broker, store the meeting, send its tasks; the meeting id.

    Nothing is stored when a file or the broker is bad.
    """
    from heard.pipeline.celery_app import check_broker, enqueue_meeting

    for spec in tracks:
        probe_audio(spec.location)
    check_broker()
    db.migrate()
    meeting_id = create_meeting(
        db, title=title or f"Meeting {started_at:%Y-%m-%d %H:%M}", tracks=tracks,
        started_at=started_at,
    )  # fmt: skip
    enqueue_meeting(db, meeting_id)
    return str(meeting_id)
