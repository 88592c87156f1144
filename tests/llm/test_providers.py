"""The official SDKs run for real over a faked HTTP transport.

The request shape is asserted and the tool call parsed."""

from __future__ import annotations

import json
from typing import Any

import pytest

from heard.errors import InputError, ProviderError
from heard.llm import ToolSpec, provider_from_env
from heard.llm.anthropic_provider import AnthropicProvider
from heard.llm.gemini_provider import GeminiProvider
from heard.llm.openai_provider import OpenAIProvider
from heard.settings import settings

TOOL = ToolSpec(
    "emit_translation",
    "Return the translation.",
    {
        "type": "object",
        "properties": {"translation": {"type": "string"}},
        "required": ["translation"],
    },
)


def sdk_http() -> Any:
    """The HTTP library the SDKs are built on: httpx2 for openai 3.x / anthropic 2.x, else httpx."""
    try:
        import httpx2

        return httpx2
    except ImportError:
        import httpx

        return httpx


def transport(reply: dict[str, Any] | int, seen: list[Any], http: Any = None) -> Any:
    """A mock transport answering every request with ``reply`` (a JSON body or a status)."""
    http = http or sdk_http()

    def handle(request: Any) -> Any:
        seen.append(request)
        if isinstance(reply, int):
            return http.Response(reply, json={"error": {"message": "boom", "type": "server_error"}})
        return http.Response(200, json=reply)

    return http.MockTransport(handle)


def client(reply: dict[str, Any] | int, seen: list[Any]) -> Any:
    return sdk_http().Client(transport=transport(reply, seen))


def openai_reply(arguments: str, name: str = "emit_translation") -> dict[str, Any]:
    return {
        "id": "c1", "object": "chat.completion", "created": 0, "model": "m",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": None,
            "tool_calls": [
                {"id": "t1", "type": "function", "function": {"name": name, "arguments": arguments}}
            ],
        }}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }  # fmt: skip


def anthropic_reply(content: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "m",
        "content": content, "stop_reason": "tool_use", "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }  # fmt: skip


def test_openai_forces_the_tool_and_parses_its_arguments() -> None:
    seen: list[Any] = []
    http_client = client(openai_reply('{"translation": "Hallo Welt"}'), seen)
    provider = OpenAIProvider("gpt-test", api_key="k", http_client=http_client)
    call = provider.call_tool(system="Translate.", prompt="hello world", tool=TOOL, timeout_s=5)
    assert call.arguments == {"translation": "Hallo Welt"}
    body = json.loads(seen[0].content)
    assert seen[0].url.path.endswith("/chat/completions")
    assert body["model"] == "gpt-test"
    assert body["tool_choice"] == {"type": "function", "function": {"name": "emit_translation"}}
    assert body["tools"][0]["function"]["parameters"] == TOOL.parameters
    assert [m["role"] for m in body["messages"]] == ["system", "user"]


def test_openai_compatible_local_server() -> None:
    seen: list[Any] = []
    http_client = client(openai_reply('{"translation": "Hola"}'), seen)
    provider = OpenAIProvider("llama", base_url="http://127.0.0.1:8080/v1", http_client=http_client)
    assert provider.call_tool(system="s", prompt="p", tool=TOOL).arguments == {
        "translation": "Hola"
    }
    assert str(seen[0].url).startswith("http://127.0.0.1:8080/v1/")
    assert "llama@http://127.0.0.1:8080/v1" in provider.name


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        (openai_reply('{"translation": "x"}', name="other_tool"), "no emit_translation call"),
        (openai_reply("not json"), "not JSON"),
        (openai_reply("[1, 2]"), "not an object"),
        (500, "InternalServerError"),
    ],
)
def test_openai_failures_are_provider_errors(reply: dict[str, Any] | int, problem: str) -> None:
    provider = OpenAIProvider("gpt-test", api_key="k", http_client=client(reply, []), max_retries=0)
    with pytest.raises(ProviderError, match=problem):
        provider.call_tool(system="s", prompt="p", tool=TOOL)


def test_anthropic_forces_the_tool_and_parses_its_input() -> None:
    seen: list[Any] = []
    reply = anthropic_reply([
        {"type": "text", "text": "Sure."},
        {"type": "tool_use", "id": "tu_1", "name": "emit_translation",
         "input": {"translation": "Bonjour"}},
    ])  # fmt: skip
    provider = AnthropicProvider("claude-test", api_key="k", http_client=client(reply, seen))
    call = provider.call_tool(system="Translate.", prompt="hello", tool=TOOL)
    assert call.arguments == {"translation": "Bonjour"}
    body = json.loads(seen[0].content)
    assert seen[0].url.path.endswith("/v1/messages")
    assert body["tool_choice"] == {"type": "tool", "name": "emit_translation"}
    assert body["tools"][0]["input_schema"] == TOOL.parameters
    assert body["system"] == "Translate."


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        (anthropic_reply([{"type": "text", "text": "no tool"}]), "no emit_translation call"),
        (529, "Error"),
    ],
)
def test_anthropic_failures_are_provider_errors(reply: dict[str, Any] | int, problem: str) -> None:
    http_client = client(reply, [])
    provider = AnthropicProvider("claude-test", api_key="k", http_client=http_client, max_retries=0)
    with pytest.raises(ProviderError, match=problem):
        provider.call_tool(system="s", prompt="p", tool=TOOL)


def test_provider_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HEARD_LLM_PROVIDER", raising=False)
    assert provider_from_env(settings()) is None
    monkeypatch.setenv("HEARD_LLM_PROVIDER", "openai")
    monkeypatch.delenv("HEARD_LLM_MODEL", raising=False)
    with pytest.raises(InputError, match="HEARD_LLM_MODEL"):
        provider_from_env(settings())
    monkeypatch.setenv("HEARD_LLM_MODEL", "m")
    monkeypatch.setenv("HEARD_LLM_BASE_URL", "http://127.0.0.1:1/v1")
    provider = provider_from_env(settings())
    assert provider is not None
    assert provider.name.startswith("openai:m")
    monkeypatch.setenv("HEARD_LLM_PROVIDER", "bard")
    with pytest.raises(InputError, match="choose openai, anthropic or gemini"):
        provider_from_env(settings())


def gemini_reply(parts: list[dict[str, Any]]) -> dict[str, Any]:
    return {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}]}


def test_gemini_forces_the_function_and_parses_its_args() -> None:
    seen: list[Any] = []
    reply = gemini_reply(
        [{"functionCall": {"name": "emit_translation", "args": {"translation": "Ciao"}}}]
    )
    provider = GeminiProvider("gemini-test", api_key="k", http_client=client(reply, seen))
    call = provider.call_tool(system="Translate.", prompt="hello", tool=TOOL)
    assert call.arguments == {"translation": "Ciao"}
    assert seen[0].url.path.endswith("models/gemini-test:generateContent")
    body = json.loads(seen[0].content)
    assert body["toolConfig"]["functionCallingConfig"] == {
        "mode": "ANY",
        "allowedFunctionNames": ["emit_translation"],
    }
    declaration = body["tools"][0]["functionDeclarations"][0]
    assert declaration["name"] == "emit_translation"
    # the SDK sends this field as it names it (its JSON-schema field keeps its snake case)
    schema = declaration.get("parametersJsonSchema", declaration.get("parameters_json_schema"))
    assert schema == TOOL.parameters
    assert body["systemInstruction"]["parts"][0]["text"] == "Translate."


@pytest.mark.parametrize(
    ("reply", "problem"),
    [(gemini_reply([{"text": "no call"}]), "no emit_translation call"), (500, "Error")],
)
def test_gemini_failures_are_provider_errors(reply: dict[str, Any] | int, problem: str) -> None:
    provider = GeminiProvider("gemini-test", api_key="k", http_client=client(reply, []))
    with pytest.raises(ProviderError, match=problem):
        provider.call_tool(system="s", prompt="p", tool=TOOL)
