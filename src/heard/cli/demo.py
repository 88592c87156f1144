"""``heard demo``: heard's main job on bundled samples."""

from __future__ import annotations

from typing import Annotated

import typer

from heard.cli.app import app, reports_errors
from heard.cli.transcript import replay_events
from heard.samples import SAMPLE_LOGS, sample_path
from heard.transcript.events import read_events
from heard.transcript.session import TranscriptSession


@app.command()
@reports_errors
def demo(
    pace: Annotated[
        float,
        typer.Option(min=0, help="Replay at this multiple of real time (0: as fast as possible)."),
    ] = 0.0,
) -> None:
    """Show heard at work on its bundled samples: real faster-whisper partials of two
    recordings, stabilized as they arrive."""
    for name in SAMPLE_LOGS:
        typer.echo(typer.style(f"\n== {name}", bold=True))
        session = TranscriptSession()
        replay_events(read_events(sample_path(name)), session, as_json=False, pace=pace)
    typer.echo(
        "\nStable text is green; the unstable tail is [bracketed]. Only finals become evidence."
    )
