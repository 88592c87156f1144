"""``heard cadence``: the cost and latency of each release mode on event logs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from heard.cli.app import app, reports_errors

if TYPE_CHECKING:
    from heard.release.cadence import CadenceRow


def render_table(rows: list[CadenceRow]) -> str:
    header = (
        f"{'fixture':<19}{'mode':<10}{'units':>6}{'x relaxed':>10}{'x live':>8}{'words':>7}"
        f"{'p50 ms':>8}{'p95 ms':>8}{'corrections':>13}{'escalations':>13}"
    )
    lines = [header]
    for r in rows:
        lines.append(
            f"{r.fixture:<19}{r.mode:<10}{r.units:>6}{r.x_relaxed:>10.2f}{r.x_live:>8.2f}"
            f"{r.words:>7}{r.p50_ms:>8.0f}{r.p95_ms:>8.0f}{r.corrections:>13}{r.escalations:>13}"
        )
    return "\n".join(lines)


@app.command()
@reports_errors
def cadence(
    events: Annotated[list[Path], typer.Argument(help="Transcript-event logs (JSONL).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON rows.")] = False,
) -> None:
    """Cost and latency of each release mode (relaxed, balanced, live) on event logs.

    Per log and mode: units released, cost against Relaxed, words, p50/p95 latency from a
    word first heard to its release, and Balanced's escalation transitions.
    """
    from heard.release.cadence import cadence_rows
    from heard.transcript.events import read_events

    rows = [row for path in events for row in cadence_rows(path.stem, read_events(path))]
    if as_json:
        typer.echo(json.dumps([r.to_dict(detail=True) for r in rows], indent=1, ensure_ascii=False))
    else:
        typer.echo(render_table(rows))
