"""The ``Provider`` protocol: one forced tool call to an LLM, with a timeout.

heard asks LLMs for structured answers only (a gate decision, a translation, a
tree step), so the one operation is: given a system text, a prompt and a tool,
make the model call that tool and return its arguments. Adapters wrap the
official SDKs (``heard.llm.openai_provider``, ``heard.llm.anthropic_provider``,
``heard.llm.gemini_provider``);
``provider_from_env`` picks one from the environment, or returns None, in which
case every lane that needs an LLM is skipped or fails open.

* ``HEARD_LLM_PROVIDER``: ``openai``, ``anthropic`` or ``gemini`` (unset: no provider);
* ``HEARD_LLM_MODEL``: the model name;
* ``HEARD_LLM_BASE_URL``: an OpenAI-compatible server (llama.cpp, Ollama, vLLM);
* the SDK's own key variable (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``, ``GEMINI_API_KEY``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from heard.errors import InputError

__all__ = ["Provider", "ToolCall", "ToolSpec", "provider_from_env"]


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


def provider_from_env() -> Provider | None:
    kind = os.environ.get("HEARD_LLM_PROVIDER", "").strip().lower()
    if not kind:
        return None
    model = os.environ.get("HEARD_LLM_MODEL", "").strip()
    if not model:
        raise InputError("HEARD_LLM_PROVIDER is set but HEARD_LLM_MODEL is not")
    if kind == "openai":
        from heard.llm.openai_provider import OpenAIProvider

        return OpenAIProvider(model, base_url=os.environ.get("HEARD_LLM_BASE_URL") or None)
    if kind == "anthropic":
        from heard.llm.anthropic_provider import AnthropicProvider

        return AnthropicProvider(model)
    if kind == "gemini":
        from heard.llm.gemini_provider import GeminiProvider

        return GeminiProvider(model)
    raise InputError(f"HEARD_LLM_PROVIDER {kind!r}: choose openai, anthropic or gemini")
