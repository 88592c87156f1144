"""The selection gate: one forced tool call decides what the next reply gets.

After a retrieval pass has gathered candidate pages, the gate asks an LLM to
call ``decide_selection``: ``ready`` with the final ordered selection, or
``more`` with follow-up questions that seed another pass. The answer is
validated (pydantic); the selection is restricted to the candidates and sticky
pages (injected on earlier turns) are always unioned back. The gate fails
*open*: with no provider, an exception, no tool call or a schema mismatch it
returns ``ready`` with every candidate, because injecting what was found beats
injecting nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from heard.errors import ProviderError
from heard.llm.provider import Provider, ToolSpec

__all__ = ["GATE_TOOL_NAME", "CallRecord", "GateResult", "run_gate"]

GATE_TOOL_NAME = "decide_selection"
GATE_SYSTEM = (
    "You decide which memory pages a voice assistant should have in context for its next "
    "reply. Keep every candidate that plausibly helps; for a list or 'all of X' request keep "
    "every candidate that applies. If the candidates do not cover the question, answer 'more' "
    "with short follow-up questions (not the user's words) for another search."
)


@dataclass(frozen=True, slots=True)
class CallRecord:
    """One LLM call, for a capture sink (``heard memory simulate`` prints them)."""

    lane: str
    request: dict[str, Any]
    response: dict[str, Any] | None
    error: str | None
    ms: float
    pass_number: int = 0


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
                    "description": "Final ordered slugs, only from the candidates (left of ' - ').",
                },
                "questions": {"type": "array", "items": {"type": "string"}},
                "reasoning": {"type": "string"},
            },
            "required": ["decision"],
        },
    )


def run_gate(
    query: str,
    candidates: list[str],
    *,
    sticky: Iterable[str] = (),
    summaries: Mapping[str, str] | None = None,
    pass_number: int = 1,
    provider: Provider | None = None,
    capture: CaptureSink | None = None,
    timeout_s: float = 20.0,
) -> GateResult:
    sticky = list(sticky)
    pool = _order(candidates, candidates, sticky)
    if provider is None:
        return GateResult("ready", pool, failed_open="no provider")
    lines = "\n".join(
        f"{s} - {summaries[s]}" if summaries and summaries.get(s) else s for s in pool
    )
    prompt = (
        f"<question>\n{query}\n</question>\n<pass_number>{pass_number}</pass_number>\n"
        f"<sticky_slugs>\n{chr(10).join(sticky)}\n</sticky_slugs>\n<candidates>\n{lines}\n</candidates>"
    )
    tool = _tool(pool)
    started = time.perf_counter()
    request = {
        "system": GATE_SYSTEM,
        "prompt": prompt,
        "tool": tool.name,
        "parameters": tool.parameters,
    }
    try:
        call = provider.call_tool(system=GATE_SYSTEM, prompt=prompt, tool=tool, timeout_s=timeout_s)
    except (ProviderError, Exception) as e:  # noqa: BLE001 - the gate fails open on anything
        if capture:
            capture(
                CallRecord("gate", request, None, str(e), (time.perf_counter() - started) * 1000)
            )
        return GateResult("ready", pool, failed_open=f"provider error: {e}")
    if capture:
        capture(
            CallRecord(
                "gate", request, call.arguments, None, (time.perf_counter() - started) * 1000
            )
        )
    if call.name != GATE_TOOL_NAME:
        return GateResult("ready", pool, failed_open=f"no {GATE_TOOL_NAME} call")
    try:
        answer = _GateAnswer.model_validate(call.arguments)
    except ValidationError as e:
        return GateResult("ready", pool, failed_open=f"schema mismatch: {e.error_count()} errors")
    selected = _order(answer.selected_slugs or [], pool, sticky)
    if answer.decision == "more":
        questions = [q.strip() for q in answer.questions or [] if q.strip()]
        return GateResult("more", selected, questions)
    return GateResult("ready", selected)
