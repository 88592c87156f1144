"""The selection gate: one forced tool call decides what the next reply gets.

After a retrieval pass has gathered candidate pages, the gate asks an LLM to
call ``decide_selection``: ``ready`` with the final ordered selection, or
``more`` with follow-up questions that seed another pass. The model may pick
only candidates: the tool's ``selected_slugs`` enum holds the candidate slugs
and nothing else, and the sticky pages (injected on earlier turns) are listed to
it on their own. The answer is validated (pydantic); the selection is the
model's picks in its order, each once, anything that is not a candidate skipped
(a sticky page outside the candidates included), then every sticky page not
already picked, in the order given, candidates or not: dropping one
mid-conversation would make the assistant forget what it was just shown. A
``ready`` answer that selects nothing (or leaves ``selected_slugs`` out)
selects the sticky pages only. The gate fails *open*: with no provider, an
exception, no tool call or a schema mismatch it returns ``ready`` with every
candidate, then the sticky pages that are not candidates, because injecting
what was found beats injecting nothing.

Each candidate is shown to the model as ``slug \u2014 summary`` (an em-dash; the
bare slug when it has no summary), and the model answers with slugs only.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from heard.errors import ProviderError
from heard.llm.provider import Provider, ToolCall, ToolSpec

__all__ = [
    "GATE_CALL_SITE",
    "GATE_TOOL_NAME",
    "CallRecord",
    "GateResult",
    "call_with_timeout",
    "render_candidate",
    "render_turn",
    "run_gate",
]

GATE_TOOL_NAME = "decide_selection"
GATE_CALL_SITE = "memory_gate"
"""The gate's call site in capture records (each lane's LLM call has its own)."""
EM_DASH = "\u2014"
"""Separates a candidate's slug from its summary in the gate's prompt."""
GATE_SYSTEM = (
    "You decide which memory pages a voice assistant should have in context for its next "
    "reply. Keep every candidate that plausibly helps; for a list or 'all of X' request keep "
    "every candidate that applies. If the candidates do not cover the question, answer 'more' "
    "with short follow-up questions (not the user's words) for another search."
)


@dataclass(frozen=True, slots=True)
class CallRecord:
    """One LLM call, for a capture sink (``heard memory simulate`` prints them)."""

    lane: Literal["filter", "descent", "gate"]
    call_site: str
    """Which call this was (``memory_gate``, ``memory_filter``, ``memory_descent``)."""
    request: dict[str, Any]
    response: dict[str, Any] | None
    """The tool call's arguments as the model returned them (None when the call failed)."""
    error: str | None
    ms: float
    pass_number: int = 0
    node: str | None = None
    """The tree node whose index a descent call judged."""
    raw: Any = None
    """The SDK's own response object, unparsed."""


def call_with_timeout(
    provider: Provider, *, system: str, prompt: str, tool: ToolSpec, timeout_s: float
) -> ToolCall:
    """``provider.call_tool``, abandoned after ``timeout_s`` whatever the provider does
    (``ProviderError``): a slow or hung provider must not hold up the reply."""
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="heard-llm")
    future = pool.submit(
        provider.call_tool, system=system, prompt=prompt, tool=tool, timeout_s=timeout_s
    )
    pool.shutdown(wait=False)
    try:
        return future.result(timeout=timeout_s)
    except FutureTimeout:
        future.cancel()
        raise ProviderError(f"{provider.name}: no answer within {timeout_s} s") from None


CaptureSink = Callable[[CallRecord], None]


@dataclass(frozen=True, slots=True)
class GateResult:
    decision: Literal["ready", "more"]
    selected: list[str]
    questions: list[str] = field(default_factory=list)
    failed_open: str | None = None
    """Why the gate failed open, when it did."""


class _GateAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore")
    decision: Literal["ready", "more"]
    selected_slugs: list[str] | None = None
    questions: list[str] | None = None
    reasoning: str | None = None


def _order(model_slugs: Iterable[str], candidates: list[str], sticky: Iterable[str]) -> list[str]:
    """``model_slugs`` that are candidates, in their order, then the ``sticky`` slugs not among
    them (candidates or not), each slug once: a sticky slug outside the candidates is never
    placed where the model put it, only after."""
    allowed = set(candidates)
    out: list[str] = []
    for slug in [*(s for s in model_slugs if s in allowed), *sticky]:
        if slug not in out:
            out.append(slug)
    return out


def _tool(candidates: list[str]) -> ToolSpec:
    return ToolSpec(
        GATE_TOOL_NAME,
        "Decide whether the candidate pages cover the next turn: 'ready' with the final ordered "
        "selection, or 'more' with generated follow-up questions for another retrieval pass.",
        {
            "type": "object",
            "properties": {
                "decision": {"type": "string", "enum": ["ready", "more"]},
                "selected_slugs": {
                    "type": "array",
                    "items": {"type": "string", "enum": candidates},
                    "description": (
                        "Final ordered slugs to inject, only from the candidates. A candidate "
                        f"with a summary is listed as 'slug {EM_DASH} summary': answer with the "
                        "slug only (left of the em-dash). Keep a plausibly relevant page rather "
                        "than drop it."
                    ),
                },
                "questions": {"type": "array", "items": {"type": "string"}},
                "reasoning": {"type": "string"},
            },
            "required": ["decision"],
        },
    )


def render_candidate(slug: str, summary: str | None) -> str:
    """How the gate shows one candidate: ``slug \u2014 summary``, or the bare slug when it
    has no summary."""
    return f"{slug} {EM_DASH} {summary}" if summary else slug


def _gate_record(
    request: dict[str, Any],
    response: dict[str, Any] | None,
    error: str | None,
    ms: float,
    pass_number: int,
    raw: Any = None,
) -> CallRecord:
    return CallRecord(
        lane="gate",
        call_site=GATE_CALL_SITE,
        request=request,
        response=response,
        error=error,
        ms=ms,
        pass_number=pass_number,
        raw=raw,
    )


def render_turn(turn: str, context: Sequence[str] = (), questions: Sequence[str] = ()) -> str:
    """What every gate pass shows the model: the conversation so far, the user's turn, and
    (from the second pass on) that pass's follow-up questions."""
    parts = []
    if context:
        parts.append("<conversation>\n" + "\n".join(context) + "\n</conversation>")
    parts.append(f"<turn>\n{turn}\n</turn>")
    if questions:
        parts.append("<follow_up_questions>\n" + "\n".join(questions) + "\n</follow_up_questions>")
    return "\n".join(parts)


def run_gate(
    turn: str,
    candidates: list[str],
    *,
    context: Sequence[str] = (),
    questions: Sequence[str] = (),
    sticky: Iterable[str] = (),
    summaries: Mapping[str, str] | None = None,
    pass_number: int = 1,
    provider: Provider | None = None,
    capture: CaptureSink | None = None,
    timeout_s: float = 20.0,
) -> GateResult:
    """One pass's gate over ``candidates`` for the user's ``turn`` (with the conversation
    ``context`` and the pass's follow-up ``questions``); fails open on anything. The model
    is shown the candidates and may pick only them; the ``sticky`` pages are listed to it
    apart and come after its picks, but for the candidates among them it picked."""
    candidates = list(dict.fromkeys(candidates))
    sticky = list(dict.fromkeys(sticky))
    # failing open: every candidate, then the sticky pages that are not candidates
    pool = _order(candidates, candidates, sticky)
    if provider is None:
        return GateResult("ready", pool, failed_open="no provider")
    lines = "\n".join(render_candidate(s, (summaries or {}).get(s)) for s in candidates)
    prompt = (
        f"{render_turn(turn, context, questions)}\n<pass_number>{pass_number}</pass_number>\n"
        f"<sticky_slugs>\n{chr(10).join(sticky)}\n</sticky_slugs>\n<candidates>\n{lines}\n</candidates>"
    )
    tool = _tool(candidates)
    started = time.perf_counter()
    request = {
        "system": GATE_SYSTEM,
        "prompt": prompt,
        "tool": tool.name,
        "parameters": tool.parameters,
    }
    try:
        call = call_with_timeout(
            provider, system=GATE_SYSTEM, prompt=prompt, tool=tool, timeout_s=timeout_s
        )
    except Exception as e:  # noqa: BLE001 - the gate fails open on anything
        if capture:
            ms = (time.perf_counter() - started) * 1000
            capture(_gate_record(request, None, str(e), ms, pass_number))
        return GateResult("ready", pool, failed_open=f"provider error: {e}")
    if capture:
        ms = (time.perf_counter() - started) * 1000
        capture(_gate_record(request, call.arguments, None, ms, pass_number, call.raw))
    if call.name != GATE_TOOL_NAME:
        return GateResult("ready", pool, failed_open=f"no {GATE_TOOL_NAME} call")
    try:
        answer = _GateAnswer.model_validate(call.arguments)
    except ValidationError as e:
        return GateResult("ready", pool, failed_open=f"schema mismatch: {e.error_count()} errors")
    # no selection is an empty one: the sticky pages only, not every candidate
    selected = _order(answer.selected_slugs or [], candidates, sticky)
    if answer.decision == "more":
        follow_ups = [q.strip() for q in answer.questions or [] if q.strip()]
        return GateResult("more", selected, follow_ups)
    return GateResult("ready", selected)
