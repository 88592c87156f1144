"""Gemini behind ``Provider``, with the official ``google-genai`` SDK."""

from __future__ import annotations

from typing import Any

from heard.errors import MissingDependencyError, ProviderError
from heard.llm.provider import ToolCall, ToolSpec

__all__ = ["GeminiProvider"]


class GeminiProvider:
    """``generate_content`` with one function declaration and calling mode ANY (forced)."""

    def __init__(self, model: str, *, api_key: str | None = None, http_client: Any = None) -> None:
        try:
            from google import genai
            from google.genai import types
        except ImportError as e:
            raise MissingDependencyError(
                "the google-genai SDK is missing (pip install 'heard[llm]')"
            ) from e
        self._genai, self._types = genai, types
        self.model = model
        self.name = f"gemini:{model}"
        options = types.HttpOptions(httpx_client=http_client) if http_client is not None else None
        self.client = genai.Client(api_key=api_key, http_options=options)

    def call_tool(
        self, *, system: str, prompt: str, tool: ToolSpec, timeout_s: float = 20.0
    ) -> ToolCall:
        t = self._types
        config = t.GenerateContentConfig(
            system_instruction=system,
            tools=[
                t.Tool(
                    function_declarations=[
                        t.FunctionDeclaration(
                            name=tool.name,
                            description=tool.description,
                            parameters_json_schema=tool.parameters,
                        )
                    ]
                )
            ],
            tool_config=t.ToolConfig(
                function_calling_config=t.FunctionCallingConfig(
                    mode="ANY", allowed_function_names=[tool.name]
                )
            ),
            http_options=t.HttpOptions(timeout=int(timeout_s * 1000)),
        )
        try:
            response = self.client.models.generate_content(
                model=self.model, contents=prompt, config=config
            )
        except Exception as e:
            raise ProviderError(f"{self.name}: {type(e).__name__}: {e}") from e
        call = next((c for c in response.function_calls or [] if c.name == tool.name), None)
        if call is None:
            raise ProviderError(f"{self.name}: the answer holds no {tool.name} call")
        if not isinstance(call.args, dict):
            raise ProviderError(f"{self.name}: {tool.name} arguments are not an object")
        return ToolCall(tool.name, dict(call.args), response)
