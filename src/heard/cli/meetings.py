"""Meeting commands: ``transcribe``, ``phrases``, ``export``, ``meetings``, ``status``."""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeRemainingColumn

from heard.asr.audio import probe_audio
from heard.cli.app import app, reports_errors
from heard.errors import InputError, NotFoundError
from heard.pipeline import PipelineOutcome, TrackProgress, run_pipeline
from heard.pipeline.steps import ClaimedTrack
from heard.store.database import Database
from heard.store.meetings import (
    TrackSpec,
    create_meeting,
    get_meeting,
    list_meetings,
    meeting_phrases,
    track_states,
)
from heard.store.models import TrackStatus
from heard.timeline.formats import FORMATS, TimedPhrase, TranscriptDoc, render
from heard.timeline.phrases import INTERJECTION_THRESHOLD_S, build_phrases
from heard.timeline.segments_json import read_segments

_CHANNELS = {"left": 0, "l": 0, "0": 0, "right": 1, "r": 1, "1": 1}
_OFFSET = re.compile(r"^(?:(\d+):)?(\d+(?:\.\d+)?)$")

DbOption = Annotated[
    str | None,
    typer.Option("--db", help="Database URL (default: $HEARD_DATABASE_URL or a SQLite file)."),
]
FormatOption = Annotated[
    str, typer.Option("--format", "-f", help=f"Transcript format: {', '.join(FORMATS)}.")
]
OutputOption = Annotated[
    Path | None, typer.Option("--output", "-o", help="Write here instead of standard output.")
]


def parse_track(arg: str) -> TrackSpec:
    """``NAME=PATH[#left|#right][@OFFSET]``; OFFSET in seconds or ``M:SS``."""
    name, sep, rest = arg.partition("=")
    if not sep or not name.strip() or not rest:
        raise InputError(f"track {arg!r}: expected NAME=FILE[#left|#right][@OFFSET]")
    offset_s = 0.0
    if "@" in rest:
        rest, _, offset_text = rest.rpartition("@")
        match = _OFFSET.match(offset_text.strip())
        if not match:
            raise InputError(
                f"track {arg!r}: bad offset {offset_text!r}; expected seconds (30, 12.5) or M:SS"
            )
        minutes, seconds = match.groups()
        offset_s = int(minutes or 0) * 60 + float(seconds)
    channel = None
    if "#" in rest:
        path_text, _, channel_text = rest.rpartition("#")
        if channel_text.lower() not in _CHANNELS:
            raise InputError(f"track {arg!r}: bad channel {channel_text!r}; expected left or right")
        rest, channel = path_text, _CHANNELS[channel_text.lower()]
    if not rest:
        raise InputError(f"track {arg!r}: no file")
    return TrackSpec(name.strip(), str(Path(rest).expanduser().resolve()), offset_s, channel)


def write_output(text: str, output: Path | None) -> None:
    """Write atomically to ``output`` (temp file + rename), or to standard output."""
    if output is None:
        sys.stdout.write(text)
        return
    if output.exists() and not output.is_file():
        # A device or a pipe (/dev/null, a FIFO): renaming over it would replace it with a file.
        with output.open("w", encoding="utf-8") as f:
            f.write(text)
        return
    directory = output.resolve().parent
    if not directory.is_dir():
        raise InputError(f"{output}: directory {directory} does not exist")
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{output.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, output)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


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


@app.command()
@reports_errors
def transcribe(
    tracks: Annotated[
        list[str],
        typer.Argument(
            help="NAME=FILE[#left|#right][@OFFSET]: one per participant; OFFSET is when their "
            "track starts in the meeting (seconds or M:SS); #left/#right takes one channel "
            "of a stereo file.",
            show_default=False,
        ),
    ],
    title: Annotated[str, typer.Option(help="Meeting title.")] = "",
    db: DbOption = None,
    fmt: FormatOption = "txt",
    output: OutputOption = None,
    queue: Annotated[
        bool,
        typer.Option(
            "--queue",
            help="Enqueue for Celery workers ($HEARD_BROKER_URL) instead of transcribing here; "
            "prints the meeting id.",
        ),
    ] = False,
) -> None:
    """Transcribe one track per participant and store the meeting; print its transcript.

    Example: heard transcribe alice=alice.wav bob=bob.wav@30 -f srt -o meeting.srt
    """
    FORMATS[fmt]  # reject an unknown format before any work
    specs = [parse_track(arg) for arg in tracks]
    database = Database(db)
    started = datetime.now(UTC)
    if queue:
        typer.echo(enqueue(specs, title=title, db=database, started_at=started))
        return
    meeting_id = transcribe_meeting(
        specs, title=title or f"Meeting {started:%Y-%m-%d %H:%M}", db=database, started_at=started
    )
    write_output(render(document(database, meeting_id), fmt), output)


@app.command()
@reports_errors
def phrases(
    segments: Annotated[
        Path, typer.Argument(help="Segment JSON (see ARCHITECTURE.md), or - for standard input.")
    ],
    interjection_s: Annotated[
        float,
        typer.Option(min=0, help="Shorter speech by someone else does not break a phrase."),
    ] = INTERJECTION_THRESHOLD_S,
) -> None:
    """Merge per-participant segments into phrases on one timeline; print phrase JSON."""
    drafts = build_phrases(read_segments(segments), interjection_threshold_s=interjection_s)
    json.dump([d.to_dict() for d in drafts], sys.stdout, ensure_ascii=False, indent=1)
    typer.echo()


@app.command()
@reports_errors
def export(
    meeting_id: Annotated[str, typer.Argument(help="Meeting id (or its first 8+ characters).")],
    db: DbOption = None,
    fmt: FormatOption = "txt",
    output: OutputOption = None,
) -> None:
    """Write a stored meeting's transcript in any format."""
    FORMATS[fmt]
    write_output(render(document(open_store(db, meeting_id), meeting_id), fmt), output)


@app.command()
@reports_errors
def meetings(
    db: DbOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List stored meetings, newest first."""
    database = open_store(db)
    rows = list_meetings(database) if database.has_schema() else []
    if as_json:
        payload = [
            {"id": str(m.id), "title": m.title, "started_at": m.started_at.isoformat(),
             "status": str(m.status), "participants": list(m.participants), "phrases": m.phrases}
            for m in rows
        ]  # fmt: skip
        typer.echo(json.dumps(payload, indent=1))
        return
    if not rows:
        typer.echo(f"no meetings in {database.safe_url}")
    for m in rows:
        typer.echo(
            f"{m.id}  {m.started_at:%Y-%m-%d %H:%M}  {m.status:<8}  {m.phrases:>4} phrases  "
            f"{m.title}  ({', '.join(m.participants)})"
        )


@app.command()
@reports_errors
def status(
    meeting_id: Annotated[str, typer.Argument(help="Meeting id (or its first 8+ characters).")],
    db: DbOption = None,
) -> None:
    """Show a meeting's tracks: status, attempts and the last error."""
    database = open_store(db, meeting_id)
    meeting = get_meeting(database, meeting_id)
    typer.echo(f"{meeting.id}  {meeting.status}  {meeting.title}")
    for t in track_states(database, meeting.id):
        channel = "" if t.channel is None else f"#{'left' if t.channel == 0 else 'right'}"
        error = f"  ({t.last_error})" if t.last_error else ""
        typer.echo(
            f"  {t.participant:<16} {t.status:<12} attempts {t.attempts}  "
            f"@{t.offset_s:g}s  {t.location}{channel}{error}"
        )
