"""The Gemini Live and Pipecat adapters, driven with each SDK's own types and test utilities."""

from __future__ import annotations

import asyncio

from google.genai import types
from pipecat.frames.frames import (
    InterimTranscriptionFrame,
    InterruptionFrame,
    LLMMessagesAppendFrame,
    TranscriptionFrame,
)
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.processors.aggregators.llm_response_universal import LLMUserAggregator
from pipecat.tests.utils import SleepFrame, run_test

from heard.live.conversation import Conversation
from heard.live.gemini import GeminiLiveBridge
from heard.live.pipecat import HeardMemoryProcessor
from heard.live.retriever import MemoryRetriever
from heard.memory.evidence import Evidence, EvidenceIndex
from heard.memory.recall import MemoryRecall
from heard.transcript.events import EventKind


def memory_with(*lines: tuple[str, str, str]) -> MemoryRetriever:
    index = EvidenceIndex()
    index.extend(
        Evidence(id=i, speaker=who, text=text, conversation="past") for i, who, text in lines
    )
    return MemoryRetriever(MemoryRecall(None, index))


PAST = (
    ("p1", "Maya", "The Lisbon office opens in April, on the second floor."),
    ("p2", "Tom", "Budget approvals go through Priya now."),
)


def server(**content: object) -> types.LiveServerMessage:
    return types.LiveServerMessage(server_content=types.LiveServerContent(**content))  # type: ignore[arg-type]


async def test_gemini_fragments_add_up_to_partials_then_a_final() -> None:
    conv = Conversation(memory_with(*PAST))
    clock = iter(range(0, 10_000, 100))
    bridge = GeminiLiveBridge(conv, clock=lambda: next(clock))
    fed = []
    for fragment in ["When does", " the Lisbon", " office", " open"]:
        fed += await bridge.on_message(
            server(input_transcription=types.Transcription(text=fragment))
        )
    fed += await bridge.on_message(
        server(interim_input_transcription=types.Transcription(text="this year"))
    )
    fed += await bridge.on_message(
        server(input_transcription=types.Transcription(text="?", finished=True))
    )
    assert [(e.kind, e.text) for e in fed] == [
        (EventKind.PARTIAL, "When does"),
        (EventKind.PARTIAL, "When does the Lisbon"),
        (EventKind.PARTIAL, "When does the Lisbon office"),
        (EventKind.PARTIAL, "When does the Lisbon office open"),
        (EventKind.PARTIAL, "When does the Lisbon office open this year"),
        (EventKind.FINAL, "When does the Lisbon office open?"),
    ]
    assert [e.t_ms for e in fed] == sorted(e.t_ms for e in fed)
    await conv.join()
    (context,) = conv.contexts
    assert context.evidence[0].id == "p1"
    # model messages without transcription change nothing
    assert await bridge.on_message(server(generation_complete=True)) == []
    assert await bridge.on_message(types.LiveServerMessage()) == []


async def test_gemini_turn_complete_finishes_an_unfinished_utterance_and_interrupts() -> None:
    retriever = memory_with(*PAST)
    conv = Conversation(retriever)
    bridge = GeminiLiveBridge(conv)
    await bridge.on_message(
        server(input_transcription=types.Transcription(text="who approves budgets"))
    )
    events = await bridge.on_message(server(turn_complete=True))
    assert [(e.kind, e.text) for e in events] == [(EventKind.FINAL, "who approves budgets")]
    assert await bridge.on_message(server(interrupted=True)) == []
    assert bridge.interruptions == 1
    await conv.join()
    assert conv.contexts == []  # the interruption came before the context was published
    assert len(retriever.evidence) == 3  # but the final is evidence


async def test_pipecat_processor_injects_memory_before_the_users_words() -> None:
    conv = Conversation(memory_with(*PAST))
    processor = HeardMemoryProcessor(conv, wait_s=1.0)
    ts = "2026-11-29T00:00:00Z"
    down, _ = await run_test(
        processor,
        frames_to_send=[
            InterimTranscriptionFrame(text="who approves", user_id="ana", timestamp=ts),
            SleepFrame(sleep=0.01),
            InterimTranscriptionFrame(text="who approves budget", user_id="ana", timestamp=ts),
            InterimTranscriptionFrame(text="who approves budget", user_id="ana", timestamp=ts),
            TranscriptionFrame(text="Who approves budget requests?", user_id="ana", timestamp=ts),
        ],
        expected_down_frames=[
            InterimTranscriptionFrame,
            InterimTranscriptionFrame,
            InterimTranscriptionFrame,
            LLMMessagesAppendFrame,
            TranscriptionFrame,
        ],
    )
    append = down[3]
    assert isinstance(append, LLMMessagesAppendFrame)
    assert append.run_llm is False
    (message,) = append.messages
    assert message["role"] == "system"
    assert "Tom said: Budget approvals go through Priya now." in str(message["content"])
    assert processor.injected[0].turn == "ana#1"


async def test_pipecat_memory_reaches_the_llm_context_and_interruptions_cancel() -> None:
    conv = Conversation(memory_with(*PAST))
    context = LLMContext()
    from pipecat.pipeline.pipeline import Pipeline

    pipeline = Pipeline([HeardMemoryProcessor(conv, wait_s=1.0), LLMUserAggregator(context)])
    ts = "2026-11-29T00:00:00Z"
    await run_test(
        pipeline,
        frames_to_send=[
            TranscriptionFrame(text="When does the Lisbon office open?", user_id="u", timestamp=ts),
            SleepFrame(sleep=0.5),
            InterruptionFrame(),
        ],
    )
    contents = [str(m.get("content")) for m in context.get_messages() if isinstance(m, dict)]
    assert any("The Lisbon office opens in April" in c for c in contents), contents
    await asyncio.wait_for(conv.join(), 1.0)
