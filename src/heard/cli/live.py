"""``heard live``: replay a conversation's transcript events against memory, on their timing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from heard.cli.app import app, reports_errors
from heard.cli.meetings import DbOption
from heard.cli.memory import DenseOption, MemoryDirOption, _workspace, memory_parts

if TYPE_CHECKING:
    from heard.live.prepared import PreparedContext


def _render(context: PreparedContext) -> str:
    how = {
        "speculative": typer.style("prefetched", fg="green", bold=True),
        "final": typer.style("on the final", fg="yellow"),
        "none": typer.style("failed", fg="red"),
    }[context.source]
    lines = [
        typer.style(f"{context.turn}: {context.final}", bold=True),
        f"   context ready {context.ready_after_final_ms:.1f} ms after the final ({how};"
        f" {context.retrievals} retrievals, {context.wasted} wasted)",
    ]
    if context.error:
        lines.append(f"   error: {context.error}")
    lines += [f"   page     {slug}" for slug in context.pages]
    lines += [
        f"   evidence {r.id:<14} {r.speaker + ': ' if r.speaker else ''}{r.text}"
        for r in context.evidence[:5]
    ]
    if len(context.evidence) > 5:
        lines.append(f"   ... and {len(context.evidence) - 5} more")
    if not context.pages and not context.evidence:
        lines.append("   (nothing recalled)")
    return "\n".join(lines)


@app.command()
@reports_errors
def live(
    events: Annotated[
        Path, typer.Argument(help="Transcript events (JSONL: t_ms, type, text, speaker).")
    ],
    memory: MemoryDirOption = None,
    db: DbOption = None,
    speed: Annotated[
        float, typer.Option(min=0.0, help="Replay speed: 1 = the events' own timing, 0 = at once.")
    ] = 1.0,
    prefetch: Annotated[
        bool, typer.Option("--prefetch/--no-prefetch", help="Retrieve while the user speaks.")
    ] = True,
    remember: Annotated[
        bool, typer.Option("--remember", help="Store the conversation's finals in the database.")
    ] = False,
    dense: DenseOption = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print JSON lines, one per turn.")
    ] = False,
) -> None:
    """Replay a conversation and show, per turn, when its memory context was ready and what it held.

    Memory is the evidence in the database (if any) plus the --memory workspace (if any);
    every final of the replay becomes evidence for the turns after it. Partials prefetch.
    """
    import asyncio

    from heard.cli.stores import open_store
    from heard.live.session import feed_at_pace, live_session
    from heard.memory.factory import build_memory
    from heard.settings import settings
    from heard.transcript.events import read_events

    loaded = read_events(events)
    database = open_store(db)
    recall = build_memory(database, memory_parts(dense), workspace=_workspace(memory))
    if remember:
        database.migrate()

    def show(context: PreparedContext) -> None:
        if as_json:
            typer.echo(json.dumps(context.to_dict(), ensure_ascii=False))
        else:
            typer.echo(_render(context))

    conversation = live_session(
        recall,
        conversation_id=events.stem,
        database=database if remember else None,
        prefetch=prefetch,
        on_context=show,
        language=settings().language or "",  # the language $HEARD_LANGUAGE says is spoken
    )
    asyncio.run(feed_at_pace(conversation, loaded, speed))
    s = conversation.stats
    if not as_json:
        typer.echo(
            typer.style("== ", bold=True)
            + f"{s.turns} turns · {s.speculations} speculative retrievals · {s.reused} prefetched"
            f" contexts used · {s.fresh} retrieved on the final · {s.wasted} wasted"
            f" · {s.stale_dropped} stale dropped · {s.failed} failed"
        )
