"""``heard replay``: transcript-event logs through the stabilization core."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated

import typer

from heard.cli.app import app, reports_errors
from heard.transcript.events import TranscriptEvent, read_events
from heard.transcript.signals import SignalExtractor
from heard.transcript.speculation import GateConfig, GateDecision
from heard.transcript.stabilizer import TranscriptStabilizer, TranscriptStep
from heard.transcript.words import WORD_MATCHERS

_DEFAULT_GATE = GateConfig()

_DECISION_COLOURS = {
    GateDecision.FIRE: "cyan",
    GateDecision.FIRE_FINAL: "magenta",
    GateDecision.FIRE_SIGNAL: "bright_cyan",
}


def _render_step(step: TranscriptStep) -> str:
    h = step.hypothesis
    stable = typer.style(h.stable_prefix, fg="green", bold=True)
    tail = typer.style(f"[{h.unstable_suffix}]", dim=True) if h.unstable_suffix else ""
    text = " ".join(part for part in (stable, tail) if part)
    decision = f"{step.decision:<24}"
    colour = _DECISION_COLOURS.get(step.decision)
    if colour:
        decision = typer.style(decision, fg=colour, bold=True)
    marks = []
    if h.contradiction:
        marks.append(typer.style("contradiction", fg="red"))
    if step.signals:
        marks.append(", ".join((*step.signals.entities, *step.signals.recall_phrases)))
    suffix = f"  ({'; '.join(marks)})" if marks else ""
    return f"{step.t_ms:>8}  {step.turn_id!s:<12} {decision} {text}{suffix}"


def _render_summary(stabilizer: TranscriptStabilizer) -> str:
    s = stabilizer.summary
    return (
        f"turns {s.turns} · revisions {s.revisions} · speculations fired {s.speculations}"
        f" · contradictions {s.contradictions}"
        f" · finals that contradicted the stable prefix {s.finals_contradicting_stable}"
    )


def show_replay(
    events: Iterable[TranscriptEvent],
    stabilizer: TranscriptStabilizer,
    *,
    as_json: bool,
    pace: float = 0.0,
) -> None:
    steps = []
    header = f"{'t_ms':>8}  {'turn':<12} {'decision':<24} stable [unstable]"
    if not as_json:
        typer.echo(typer.style(header, bold=True))
    started = time.monotonic()
    for event in events:
        if pace:
            delay = event.t_ms / 1000 / pace - (time.monotonic() - started)
            if delay > 0:
                time.sleep(delay)
        step = stabilizer.on_event(event)
        if as_json:
            steps.append(step.to_dict())
        else:
            typer.echo(_render_step(step))
    if as_json:
        json.dump({"steps": steps, "summary": stabilizer.summary.to_dict()}, sys.stdout, indent=1)
        typer.echo()
    else:
        typer.echo(_render_summary(stabilizer))


WordMatchOption = Annotated[
    str,
    typer.Option(
        help=f"How words of consecutive revisions are compared: {', '.join(WORD_MATCHERS)}.",
    ),
]
DebounceOption = Annotated[
    int, typer.Option(min=0, help="Speculation debounce window in milliseconds.")
]
MinNewOption = Annotated[
    int, typer.Option(min=0, help="New content tokens needed before speculating again.")
]
EntityOption = Annotated[
    list[str] | None,
    typer.Option("--entity", help="A known entity that triggers speculation (repeatable)."),
]


def _stabilizer(
    word_match: str, debounce_ms: int, min_new_tokens: int, entities: list[str] | None
) -> TranscriptStabilizer:
    WORD_MATCHERS[word_match]  # reject unknown names before reading anything
    return TranscriptStabilizer(
        gate=GateConfig(debounce_ms=debounce_ms, min_new_content_tokens=min_new_tokens),
        word_match=word_match,
        signals=SignalExtractor(entities or ()),
    )


@app.command()
@reports_errors
def replay(
    events: Annotated[Path, typer.Argument(help="Transcript events, JSONL (see docs/formats.md).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document.")] = False,
    word_match: WordMatchOption = "normalized",
    debounce_ms: DebounceOption = _DEFAULT_GATE.debounce_ms,
    min_new_tokens: MinNewOption = _DEFAULT_GATE.min_new_content_tokens,
    entity: EntityOption = None,
) -> None:
    """Replay a transcript-event log through the stabilization core.

    Per event: the turn, stable text, unstable tail and the speculation gate's decision;
    then a summary.
    """
    stabilizer = _stabilizer(word_match, debounce_ms, min_new_tokens, entity)
    show_replay(read_events(events), stabilizer, as_json=as_json)
