"""One way to build a live session over a user's memory, for every front end.

``heard live`` (a replay), the server's ``/v1/live`` socket, Pipecat's
``HeardMemoryProcessor`` and the Gemini Live bridge all take the ``Conversation`` that
``live_session`` builds: a ``MemoryRetriever`` over the recall loop (remembering finals in
SQL when given a database) under one conversation id.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterable
from typing import Any

from heard.live.conversation import Conversation
from heard.live.retriever import MemoryRetriever
from heard.memory.recall import MemoryRecall
from heard.store.database import Database
from heard.transcript.events import TranscriptEvent

__all__ = ["feed_at_pace", "live_session"]


def live_session(
    recall: MemoryRecall,
    *,
    conversation_id: str = "live",
    database: Database | None = None,
    owner: str = "",
    lock: threading.Lock | None = None,
    **options: Any,
) -> Conversation:
    """A conversation recalling from ``recall`` and remembering its finals in it (and in
    ``database`` under ``owner``, when given; ``lock`` when others share the index).

    ``options`` are ``Conversation``'s: ``release_mode``, ``on_context``, ``language``...
    """
    retriever = MemoryRetriever(
        recall, database=database, session=conversation_id, owner=owner, lock=lock
    )
    return Conversation(retriever, conversation_id=conversation_id, **options)


async def feed_at_pace(
    conversation: Conversation, events: Iterable[TranscriptEvent], speed: float = 1.0
) -> None:
    """Feed ``events`` on their own timing (``speed`` times faster; 0: at once), then wait
    for the work in flight."""
    started = time.monotonic()
    for event in events:
        if speed > 0:
            delay = event.t_ms / 1000 / speed - (time.monotonic() - started)
            if delay > 0:
                await asyncio.sleep(delay)
        await conversation.feed(event)
    await conversation.join()
    await conversation.settle_captions()
