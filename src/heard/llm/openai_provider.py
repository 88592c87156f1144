"""OpenAI (and OpenAI-compatible servers) behind ``Provider``, with the official SDK."""

from __future__ import annotations

import json
from typing import Any

from heard.errors import MissingDependencyError, ProviderError
from heard.llm.provider import ToolCall, ToolSpec

__all__ = ["OpenAIProvider"]


class OpenAIProvider:
    """Chat Completions with one function tool and ``tool_choice`` forcing it."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        http_client: Any = None,
        max_retries: int = 1,
    ) -> None:
        try:
            import openai
        except ImportError as e:
            raise MissingDependencyError(
                "the OpenAI SDK is missing (pip install 'heard[llm]')"
            ) from e
        self._openai = openai
        self.model = model
        self.name = f"openai:{model}" + (f"@{base_url}" if base_url else "")
        self.client = openai.OpenAI(
            api_key=api_key or ("not-needed" if base_url else None),
            base_url=base_url,
            http_client=http_client,
            max_retries=max_retries,
        )

    def call_tool(
        self, *, system: str, prompt: str, tool: ToolSpec, timeout_s: float = 20.0
    ) -> ToolCall:
        try:
            response = self.client.chat.completions.create(
                model=self.model,
                messages=[
                    {"role": "system", "content": system},
                    {"role": "user", "content": prompt},
                ],
                tools=[
                    {
                        "type": "function",
                        "function": {
                            "name": tool.name,
                            "description": tool.description,
                            "parameters": tool.parameters,
                        },
                    }
                ],
                tool_choice={"type": "function", "function": {"name": tool.name}},
                timeout=timeout_s,
            )
        except self._openai.OpenAIError as e:
            raise ProviderError(f"{self.name}: {type(e).__name__}: {e}") from e
        from openai.types.chat import ChatCompletionMessageFunctionToolCall as FunctionCall

        calls = response.choices[0].message.tool_calls if response.choices else None
        call = next(
            (
                c
                for c in calls or []
                if isinstance(c, FunctionCall) and c.function.name == tool.name
            ),
            None,
        )
        if call is None:
            raise ProviderError(f"{self.name}: the answer holds no {tool.name} call")
        try:
            arguments = json.loads(call.function.arguments or "{}")
        except json.JSONDecodeError as e:
            raise ProviderError(
                f"{self.name}: {tool.name} arguments are not JSON ({e.msg})"
            ) from None
        if not isinstance(arguments, dict):
            raise ProviderError(f"{self.name}: {tool.name} arguments are not an object")
        return ToolCall(tool.name, arguments, response)
