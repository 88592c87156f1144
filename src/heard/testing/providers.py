"""Scripted services heard calls out to: an LLM provider and a translator."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from heard.errors import ProviderError
from heard.llm.provider import ToolCall, ToolSpec

__all__ = ["Answer", "ProviderCall", "ScriptedProvider", "ScriptedTranslator"]

Answer = Mapping[str, Any] | ToolCall | BaseException
"""A scripted reply: the tool's arguments, a whole ``ToolCall``, or an exception to raise."""


@dataclass(frozen=True, slots=True)
class ProviderCall:
    tool: str
    system: str
    prompt: str
    timeout_s: float


class ScriptedProvider:
    """An LLM provider that answers from a script and records every call.

    A call to tool T takes the next answer from ``per_tool[T]`` when the script has a queue
    for T, else from ``answers``. An answer is the tool's arguments (a mapping), a whole
    ``ToolCall``, or an exception to raise. An empty queue fails the call with
    ``ProviderError``, as a real provider's failure would. ``delay_s`` makes every call take
    that long; past the call's ``timeout_s`` it fails as a timeout, unless ``hangs`` (a provider
    that ignores its timeout, which heard must abandon on its own).
    """

    name = "scripted"

    def __init__(
        self,
        *answers: Answer,
        per_tool: Mapping[str, Sequence[Answer]] | None = None,
        delay_s: float = 0.0,
        hangs: bool = False,
    ) -> None:
        self.answers = list(answers)
        self.per_tool = {tool: list(queue) for tool, queue in (per_tool or {}).items()}
        self.delay_s = delay_s
        self.hangs = hangs
        self.calls: list[ProviderCall] = []

    def call_tool(
        self, *, system: str, prompt: str, tool: ToolSpec, timeout_s: float = 20.0
    ) -> ToolCall:
        self.calls.append(ProviderCall(tool.name, system, prompt, timeout_s))
        if self.delay_s:
            time.sleep(self.delay_s if self.hangs else min(self.delay_s, timeout_s))
            if self.delay_s > timeout_s and not self.hangs:
                raise ProviderError(f"{tool.name}: timed out after {timeout_s} s")
        queue = self.per_tool.get(tool.name, self.answers)
        if not queue:
            raise ProviderError(f"{tool.name}: nothing scripted")
        answer = queue.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        if isinstance(answer, ToolCall):
            return answer
        return ToolCall(tool.name, dict(answer))


class ScriptedTranslator:
    """Translates by tagging: ``"[de] text"``. A text named in ``failures`` fails that many
    times (a timeout) before it succeeds; one named in ``delays`` takes that long each call.
    ``calls`` counts the calls per text."""

    name = "scripted"
    is_identity = False

    def __init__(
        self,
        delays: Mapping[str, float] | None = None,
        failures: Mapping[str, int] | None = None,
    ) -> None:
        self.delays = dict(delays or {})
        self.failures = dict(failures or {})
        self.calls: dict[str, int] = {}

    async def translate(self, text: str, source: str, target: str) -> str:
        self.calls[text] = self.calls.get(text, 0) + 1
        await asyncio.sleep(self.delays.get(text, 0.0))
        if self.calls[text] <= self.failures.get(text, 0):
            raise TimeoutError(f"translation of {text!r} timed out")
        return f"[{target}] {text}"
