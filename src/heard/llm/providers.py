"""LLM providers chosen by name: the registry behind ``HEARD_LLM_PROVIDER``.

Each entry is a factory that imports its SDK adapter only when chosen, so heard runs (and
starts fast) without any LLM SDK installed. Unset, there is no provider, and every lane that
needs an LLM is skipped or fails open.
"""

from __future__ import annotations

from collections.abc import Callable

from heard.errors import InputError, UnknownNameError
from heard.llm.provider import Provider
from heard.registry import Registry
from heard.settings import Settings

__all__ = ["PROVIDERS", "provider_from_env"]


def _openai(model: str, chosen: Settings) -> Provider:
    from heard.llm.openai_provider import OpenAIProvider

    return OpenAIProvider(model, base_url=chosen.llm_base_url)


def _anthropic(model: str, chosen: Settings) -> Provider:
    from heard.llm.anthropic_provider import AnthropicProvider

    return AnthropicProvider(model)


def _gemini(model: str, chosen: Settings) -> Provider:
    from heard.llm.gemini_provider import GeminiProvider

    return GeminiProvider(model)


PROVIDERS: Registry[Callable[[str, Settings], Provider]] = Registry(
    "LLM provider", {"openai": _openai, "anthropic": _anthropic, "gemini": _gemini}
)
"""Each provider's factory, given the model name and the settings."""


def provider_from_env(s: Settings) -> Provider | None:
    """The provider the settings name (the environment's: ``heard.settings.settings()``, read
    at the edge that calls this), or None when unset."""
    if not s.llm_provider:
        return None
    if not s.llm_model:
        raise InputError("HEARD_LLM_PROVIDER is set but HEARD_LLM_MODEL is not")
    try:
        factory = PROVIDERS[s.llm_provider.lower()]
    except UnknownNameError:
        *first, last = PROVIDERS
        raise InputError(
            f"HEARD_LLM_PROVIDER {s.llm_provider!r}: choose {', '.join(first)} or {last}"
        ) from None
    return factory(s.llm_model, s)
