"""heard.testing's fakes behave as the real parts do at their seams."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from heard.asr.transcriber import Transcriber
from heard.errors import ProviderError
from heard.llm import Provider, ToolCall, ToolSpec
from heard.memory.evidence import Evidence, EvidenceIndex
from heard.release.translation import Translator
from heard.speech import Segment, Transcription
from heard.testing import (
    FakeClock,
    FakeTranscriber,
    HashingEmbedder,
    ScriptedProvider,
    ScriptedRetriever,
    ScriptedTranslator,
)

TOOL = ToolSpec("decide", "Decide.")


def test_fake_transcriber_is_a_transcriber_with_canned_segments_and_failures() -> None:
    fake = FakeTranscriber({"a.wav": [Segment(0.0, 1.0, "hi")], "b.wav": RuntimeError("gpu")})
    assert isinstance(fake, Transcriber)
    progress: list[tuple[float, float]] = []
    heard = fake.transcribe("a.wav", on_progress=lambda d, t: progress.append((d, t)))
    assert heard == Transcription((Segment(0.0, 1.0, "hi"),))
    assert progress == [(1.0, 1.0)]
    with pytest.raises(RuntimeError, match="gpu"):
        fake.transcribe("b.wav")
    assert fake.calls == ["a.wav", "b.wav"]
    # a language asked for is the transcription's, given (no probability), as faster-whisper's
    assert fake.transcribe("a.wav", language="es") == Transcription(heard.segments, "es", None)
    assert fake.languages == [None, None, "es"]


def test_scripted_provider_answers_in_turn_per_tool_and_fails_like_a_provider() -> None:
    provider = ScriptedProvider(
        {"decision": "ready"}, ToolCall("decide", {"decision": "more"}), ValueError("refused"),
        per_tool={"other": []},
    )  # fmt: skip
    assert isinstance(provider, Provider)
    assert provider.call_tool(system="s", prompt="p1", tool=TOOL).arguments == {"decision": "ready"}
    assert provider.call_tool(system="s", prompt="p2", tool=TOOL).arguments["decision"] == "more"
    with pytest.raises(ValueError, match="refused"):
        provider.call_tool(system="s", prompt="p3", tool=TOOL)
    with pytest.raises(ProviderError, match="nothing scripted"):
        provider.call_tool(system="s", prompt="p4", tool=TOOL)
    with pytest.raises(ProviderError, match="other: nothing scripted"):
        provider.call_tool(system="s", prompt="p5", tool=ToolSpec("other", "x"))
    assert [c.prompt for c in provider.calls] == ["p1", "p2", "p3", "p4", "p5"]


def test_a_slow_scripted_provider_times_out() -> None:
    provider = ScriptedProvider({"decision": "ready"}, delay_s=0.2)
    with pytest.raises(ProviderError, match="timed out"):
        provider.call_tool(system="s", prompt="p", tool=TOOL, timeout_s=0.01)


def test_scripted_translator_fails_then_translates() -> None:
    translator = ScriptedTranslator(failures={"hello": 1})
    assert isinstance(translator, Translator)
    with pytest.raises(TimeoutError):
        asyncio.run(translator.translate("hello", "en", "de"))
    assert asyncio.run(translator.translate("hello", "en", "de")) == "[de] hello"
    assert translator.calls == {"hello": 2}


def test_scripted_retriever_answers_with_the_query_and_remembers() -> None:
    retriever = ScriptedRetriever(fail_on="boom")
    found = asyncio.run(retriever.retrieve("the Lisbon office", ()))
    assert found.pages == ("page-office",)
    assert found.evidence[0].text == "the Lisbon office"
    with pytest.raises(RuntimeError):
        asyncio.run(retriever.retrieve("boom", ()))
    asyncio.run(retriever.remember(Evidence(id="e1", speaker="ana", text="hi", conversation="s")))
    assert [e.id for e in retriever.remembered] == ["e1"]


def test_hashing_embedder_is_deterministic_normalized_and_drives_dense_recall() -> None:
    embedder = HashingEmbedder()
    a, b, c = embedder.embed(["new dog in the park", "my dog is new", "quarterly tax report"])
    assert np.allclose([np.linalg.norm(v) for v in (a, b, c)], 1.0)
    assert float(a @ b) > float(a @ c)
    assert np.array_equal(embedder.embed(["new dog"]), HashingEmbedder().embed(["new dog"]))
    index = EvidenceIndex(embedder)
    index.add(
        Evidence(id="d1", speaker="ana", text="We adopted a puppy, a new dog.", conversation="s")
    )
    index.add(
        Evidence(id="d2", speaker="ben", text="The quarterly tax report is due.", conversation="s")
    )
    assert index.recall("dog", k=1)[0].id == "d1"


def test_fake_clock_moves_only_when_told() -> None:
    clock = FakeClock()
    start = clock()
    assert clock() == start
    assert (clock.advance(90) - start).total_seconds() == 90
