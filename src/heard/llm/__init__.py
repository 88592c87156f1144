"""LLMs behind one protocol: forced tool calls with timeouts, over the official SDKs."""

from heard.llm.provider import Provider, ToolCall, ToolSpec
from heard.llm.providers import PROVIDERS, provider_from_env

__all__ = ["PROVIDERS", "Provider", "ToolCall", "ToolSpec", "provider_from_env"]
