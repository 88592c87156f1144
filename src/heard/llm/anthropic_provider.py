"""Anthropic behind ``Provider``, with the official SDK."""

from __future__ import annotations

from typing import Any

from heard.errors import MissingDependencyError, ProviderError
from heard.llm.provider import ToolCall, ToolSpec

__all__ = ["AnthropicProvider"]


class AnthropicProvider:
    """Messages API with one tool and ``tool_choice`` forcing it."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        http_client: Any = None,
        max_tokens: int = 1024,
        max_retries: int = 1,
    ) -> None:
        try:
            import anthropic
        except ImportError as e:
            raise MissingDependencyError(
                "the Anthropic SDK is missing (pip install 'heard[llm]')"
            ) from e
        self._anthropic = anthropic
        self.model = model
        self.max_tokens = max_tokens
        self.name = f"anthropic:{model}"
        self.client = anthropic.Anthropic(
            api_key=api_key, http_client=http_client, max_retries=max_retries
        )

    def call_tool(
        self, *, system: str, prompt: str, tool: ToolSpec, timeout_s: float = 20.0
    ) -> ToolCall:
        try:
            response = self.client.messages.create(
                model=self.model,
                max_tokens=self.max_tokens,
                system=system,
                messages=[{"role": "user", "content": prompt}],
                tools=[
                    {
                        "name": tool.name,
                        "description": tool.description,
                        "input_schema": tool.parameters,
                    }
                ],
                tool_choice={"type": "tool", "name": tool.name},
                timeout=timeout_s,
            )
        except self._anthropic.AnthropicError as e:
            raise ProviderError(f"{self.name}: {type(e).__name__}: {e}") from e
        from anthropic.types import ToolUseBlock

        block: ToolUseBlock | None = None
        for candidate in response.content:
            if isinstance(candidate, ToolUseBlock) and candidate.name == tool.name:
                block = candidate
                break
        if block is None:
            raise ProviderError(f"{self.name}: the answer holds no {tool.name} call")
        if not isinstance(block.input, dict):
            raise ProviderError(f"{self.name}: {tool.name} input is not an object")
        return ToolCall(tool.name, dict(block.input), response)
