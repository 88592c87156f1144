"""Gemini Live: the server's input transcriptions as heard transcript events.

A ``google.genai`` Live session streams ``LiveServerMessage`` objects. Their
``server_content`` carries what the user said as it is recognized:

* ``input_transcription``: text *fragments* that add up to the user's utterance,
  with ``finished`` set on the last one;
* ``interim_input_transcription``: a low-latency guess at the words after the
  fragments received so far (replaced by each new one);
* ``turn_complete``: the model finished its reply; any utterance not yet
  finished is final by then;
* ``interrupted``: the user spoke over the model; the reply being prepared is
  no longer wanted.

``GeminiLiveBridge`` folds those into partials and finals on heard's wire format
and feeds a ``Conversation``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from heard.live.conversation import Conversation
from heard.transcript.events import EventKind, TranscriptEvent

if TYPE_CHECKING:
    from google.genai import types

__all__ = ["GeminiLiveBridge"]


class GeminiLiveBridge:
    """Turn one Live session's messages into events for ``conversation`` (speaker: the user)."""

    def __init__(
        self,
        conversation: Conversation,
        *,
        speaker: str = "user",
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.conversation = conversation
        self.speaker = speaker
        started = time.monotonic()
        self._clock = clock or (lambda: (time.monotonic() - started) * 1000.0)
        self._heard = ""  # fragments of the utterance so far
        self._interim = ""
        self.interruptions = 0

    def _now(self) -> int:
        return max(0, int(self._clock()))

    def events(self, message: types.LiveServerMessage) -> tuple[list[TranscriptEvent], bool]:
        """The events one message implies, and whether it reports an interruption."""
        content = message.server_content
        if content is None:
            return [], False
        out: list[TranscriptEvent] = []
        finished = False
        if content.input_transcription is not None:
            self._heard += content.input_transcription.text or ""
            self._interim = ""
            finished = bool(content.input_transcription.finished)
        if content.interim_input_transcription is not None and not finished:
            self._interim = content.interim_input_transcription.text or ""
        text = " ".join(f"{self._heard} {self._interim}".split())
        if finished or (content.turn_complete and text):
            if text:
                out.append(TranscriptEvent(self._now(), EventKind.FINAL, text, self.speaker))
            self._heard = self._interim = ""
        elif text and (
            content.input_transcription is not None
            or content.interim_input_transcription is not None
        ):
            out.append(TranscriptEvent(self._now(), EventKind.PARTIAL, text, self.speaker))
        return out, bool(content.interrupted)

    async def on_message(self, message: types.LiveServerMessage) -> list[TranscriptEvent]:
        """Feed the conversation what ``message`` says; returns the events fed."""
        events, interrupted = self.events(message)
        if interrupted:
            self.interruptions += 1
            self.conversation.interrupt()
        for event in events:
            await self.conversation.feed(event)
        return events
