"""Pipecat: heard's live conversation as a ``FrameProcessor``.

Put ``HeardMemoryProcessor`` after the speech-to-text service and before the
user context aggregator. Interim transcriptions become partials (prefetching
memory while the user speaks), a final transcription becomes a final; before
passing the final on, the processor waits briefly for the prepared context and
pushes it as an ``LLMMessagesAppendFrame`` (a system message, ``run_llm=False``),
so the aggregator adds the memory just before the user's words. An
``InterruptionFrame`` cancels the work in flight. Every frame is passed on.

Needs ``pip install 'heard[pipecat]'``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from openai.types.chat import ChatCompletionSystemMessageParam
from pipecat.frames.frames import (
    Frame,
    InterimTranscriptionFrame,
    InterruptionFrame,
    LLMMessagesAppendFrame,
    TranscriptionFrame,
)
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor

from heard.live.conversation import Conversation
from heard.live.prepared import PreparedContext
from heard.transcript.events import EventKind, TranscriptEvent

__all__ = ["HeardMemoryProcessor", "render_context"]


def render_context(context: PreparedContext) -> str:
    """The prepared context as one system message for the LLM."""
    lines = ["Memory that may help with the user's next message:"]
    lines += [f"- page: {slug}" for slug in context.pages]
    lines += [f"- {r.speaker or 'someone'} said: {r.text}" for r in context.evidence]
    return "\n".join(lines)


class HeardMemoryProcessor(FrameProcessor):
    """Transcription frames in, memory injected into the LLM context, frames passed on."""

    def __init__(
        self,
        conversation: Conversation,
        *,
        wait_s: float = 0.25,
        render: Callable[[PreparedContext], str] = render_context,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.conversation = conversation
        self.wait_s = wait_s
        self.render = render
        self._started = time.monotonic()
        self.injected: list[PreparedContext] = []

    def _t_ms(self) -> int:
        return int((time.monotonic() - self._started) * 1000)

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, InterimTranscriptionFrame) and frame.text.strip():
            event = TranscriptEvent(
                self._t_ms(), EventKind.PARTIAL, frame.text, frame.user_id or "user"
            )
            await self.conversation.feed(event)
        elif isinstance(frame, TranscriptionFrame) and frame.text.strip():
            event = TranscriptEvent(
                self._t_ms(), EventKind.FINAL, frame.text, frame.user_id or "user"
            )
            step = await self.conversation.feed(event)
            context = await self.conversation.wait_context(step.turn_id, timeout=self.wait_s)
            if context is not None and (context.pages or context.evidence):
                self.injected.append(context)
                message: ChatCompletionSystemMessageParam = {
                    "role": "system",
                    "content": self.render(context),
                }
                await self.push_frame(
                    LLMMessagesAppendFrame(messages=[message], run_llm=False), direction
                )
        elif isinstance(frame, InterruptionFrame):
            self.conversation.interrupt()
        await self.push_frame(frame, direction)
