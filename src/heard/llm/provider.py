"""The ``Provider`` protocol: one forced tool call to an LLM, with a timeout.

heard asks LLMs for structured answers only (a gate decision, a translation, a
tree step), so the one operation is: given a system text, a prompt and a tool,
make the model call that tool and return its arguments. Adapters wrap the
official SDKs (``heard.llm.openai_provider``, ``heard.llm.anthropic_provider``,
``heard.llm.gemini_provider``); ``heard.llm.providers`` chooses one by name from the
settings, or none, in which case every lane that needs an LLM is skipped or fails open.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

__all__ = ["Provider", "ToolCall", "ToolSpec"]


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict[str, Any] = field(default_factory=dict)
    """JSON schema of the tool's arguments (an object)."""


@dataclass(frozen=True, slots=True)
class ToolCall:
    name: str
    arguments: dict[str, Any]
    raw: Any = None
    """The SDK's response object, for capture sinks and debugging."""


@runtime_checkable
class Provider(Protocol):
    name: str

    def call_tool(
        self, *, system: str, prompt: str, tool: ToolSpec, timeout_s: float = 20.0
    ) -> ToolCall:
        """Make the model call ``tool``; raise ``ProviderError`` if it does not."""
        ...
