"""``heard demo``: heard's main job on bundled samples."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Annotated

import typer

from heard.cli.app import app, reports_errors


@app.command()
@reports_errors
def demo(
    pace: Annotated[
        float,
        typer.Option(min=0, help="Replay partials at this multiple of real time (0: at once)."),
    ] = 0.0,
    db: Annotated[
        str | None,
        typer.Option(
            "--db", help="Store the demo meeting here (default: a temporary SQLite file)."
        ),
    ] = None,
) -> None:
    """Show heard at work on its bundled samples.

    A three-person meeting transcribed with faster-whisper onto one timeline, live partials
    stabilized as they arrive, and a question recalled from the meeting's memory.
    """
    from heard.cli.meeting_jobs import transcribe_meeting
    from heard.cli.transcript import show_replay
    from heard.meetings.jobs import document
    from heard.meetings.memory import MEETING_CONVERSATION
    from heard.memory.evidence import EvidenceIndex
    from heard.samples import SAMPLE_LOGS, sample_meeting, sample_path
    from heard.store.database import Database
    from heard.store.evidence import load_utterances
    from heard.store.meetings import TrackSpec
    from heard.timeline.formats import render
    from heard.transcript.events import read_events
    from heard.transcript.stabilizer import TranscriptStabilizer

    meeting = sample_meeting()
    typer.echo(typer.style(f"== Meeting: {meeting.title}", bold=True))
    typer.echo("   tracks: " + ", ".join(f"{who} ({path.name} @{offset:g}s)"
                                         for who, path, offset in meeting.tracks))  # fmt: skip
    specs = [TrackSpec(who, str(path), offset) for who, path, offset in meeting.tracks]
    with tempfile.TemporaryDirectory() as tmp:
        database = Database(db or f"sqlite:///{Path(tmp) / 'demo.db'}")
        try:
            meeting_id = transcribe_meeting(specs, title=meeting.title, db=database)
            doc = document(database, meeting_id, finished=True)
            typer.echo(render(doc, "txt"), nl=False)
            # the built meeting's phrases are memory evidence (heard.store.meetings)
            conversation = f"{MEETING_CONVERSATION}{meeting_id}"
            said = [e for e in load_utterances(database) if e.conversation == conversation]
        finally:
            database.dispose()
    memory = EvidenceIndex()
    memory.extend(said)
    for name in SAMPLE_LOGS:
        typer.echo(typer.style(f"\n== Live partials: {name}", bold=True))
        stabilizer = TranscriptStabilizer()
        show_replay(read_events(sample_path(name)), stabilizer, as_json=False, pace=pace)
    typer.echo(
        "\nStable text is green; the unstable tail is [bracketed]. Only finals become evidence."
    )
    question = "When do we meet again?"
    typer.echo(typer.style(f"\n== Memory: {question!r} recalled from the meeting", bold=True))
    for hit in memory.recall(question, k=2):
        typer.echo(f"   {hit.score:6.2f}  {hit.speaker}: {hit.text}")
