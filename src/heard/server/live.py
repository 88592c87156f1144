"""``/v1/live``: one live conversation per WebSocket.

The client sends transcript events as JSON text frames, on heard's wire format
(``{"t_ms": 1200, "type": "partial", "text": "what should we", "speaker": "alice"}``).
The server answers with JSON messages:

* ``{"type": "hypothesis", "speaker", "turn", "stable", "unstable", "t_ms"}`` per event;
* ``{"type": "release", "speaker", "text", "reason", "t_ms"}`` for caption units
  (cadence from ``?mode=relaxed|balanced|live``, default balanced);
* ``{"type": "context", ...}``: the memory prepared for the next reply;
* ``{"type": "final", "speaker", "turn", "text"}``: the final, now evidence.

A malformed frame closes the connection with 1007, an oversize one (over 64 KiB)
with 1009, a binary frame with 1003 (audio frames are not accepted yet); each is
logged, and no other connection notices.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, WebSocket, WebSocketDisconnect

from heard.errors import EventLogError
from heard.live.conversation import Conversation, PreparedContext
from heard.live.retriever import MemoryRetriever
from heard.memory.recall import MemoryRecall
from heard.release.tracker import RELEASE_MODES, ReleaseUnit
from heard.server.auth import authenticate
from heard.transcript.events import EventKind, parse_event

if TYPE_CHECKING:
    from heard.server.app import Memories, ServerSettings

__all__ = ["MAX_FRAME_BYTES", "mount_live"]

log = logging.getLogger("heard.server.live")

MAX_FRAME_BYTES = 64 * 1024
CLOSE_UNSUPPORTED = 1003
CLOSE_INVALID = 1007
CLOSE_POLICY = 1008
CLOSE_TOO_BIG = 1009


def mount_live(app: FastAPI, settings: ServerSettings, memories: Memories) -> None:
    db = settings.db

    @app.websocket("/v1/live")
    async def live(websocket: WebSocket) -> None:
        header = websocket.headers.get("authorization", "")
        token = header[7:] if header.lower().startswith("bearer ") else ""
        token = token or websocket.query_params.get("token", "")
        user = await asyncio.to_thread(authenticate, db, token) if token else None
        if user is None:
            await websocket.close(code=CLOSE_POLICY, reason="a valid token is required")
            return
        mode_name = websocket.query_params.get("mode", "balanced")
        if mode_name not in RELEASE_MODES:
            await websocket.close(code=CLOSE_POLICY, reason=f"unknown mode {mode_name!r}")
            return
        await websocket.accept()
        connection = uuid.uuid4().hex[:8]
        memory = await asyncio.to_thread(memories.of, user.owner)
        retriever = MemoryRetriever(
            MemoryRecall(None, memory.index),
            database=db,
            session=f"live-{connection}",
            owner=user.owner,
            lock=memory.lock,
        )
        outbox: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()

        def on_context(context: PreparedContext) -> None:
            outbox.put_nowait({"type": "context", **context.to_dict()})

        releases: list[dict[str, Any]] = []  # sent after the hypothesis that released them

        def on_release(speaker: str, unit: ReleaseUnit) -> None:
            releases.append(
                {
                    "type": "release",
                    "speaker": speaker,
                    "text": unit.text,
                    "reason": str(unit.reason),
                    "t_ms": unit.t_ms,
                }
            )

        conversation = Conversation(
            retriever,
            conversation_id=f"live-{connection}",
            release_mode=RELEASE_MODES[mode_name],
            on_context=on_context,
            on_release=on_release,
        )

        async def send_all() -> None:
            while (message := await outbox.get()) is not None:
                await websocket.send_json(message)

        sender = asyncio.create_task(send_all())
        close: tuple[int, str] | None = None
        try:
            close = await _receive(websocket, conversation, outbox, releases, user.name, connection)
        finally:
            await conversation.join()
            outbox.put_nowait(None)
            with contextlib.suppress(Exception):
                await sender
            if close is not None:
                with contextlib.suppress(Exception):
                    await websocket.close(code=close[0], reason=close[1])


async def _receive(
    websocket: WebSocket,
    conversation: Conversation,
    outbox: asyncio.Queue[dict[str, Any] | None],
    releases: list[dict[str, Any]],
    user: str,
    connection: str,
) -> tuple[int, str] | None:
    """Feed events until the client leaves (None) or sends something wrong (a close code)."""
    number = 0
    while True:
        try:
            message = await websocket.receive()
        except WebSocketDisconnect:
            return None
        if message["type"] == "websocket.disconnect":
            return None
        number += 1
        raw = message.get("text")
        if raw is None:
            log.warning("live %s (%s): frame %d is binary; closing", connection, user, number)
            return CLOSE_UNSUPPORTED, "binary frames (audio) are not accepted yet; send JSON events"
        if len(raw.encode()) > MAX_FRAME_BYTES:
            log.warning(
                "live %s (%s): frame %d is over %d bytes", connection, user, number, MAX_FRAME_BYTES
            )
            return CLOSE_TOO_BIG, f"frame {number} is over {MAX_FRAME_BYTES} bytes"
        try:
            event = parse_event(raw, "frame", number)
        except EventLogError as e:
            log.warning("live %s (%s): %s", connection, user, e)
            return CLOSE_INVALID, str(e)[:120]
        step = await conversation.feed(event)
        h = step.hypothesis
        outbox.put_nowait(
            {
                "type": "hypothesis",
                "speaker": step.speaker,
                "turn": str(step.turn_id),
                "stable": h.stable_prefix,
                "unstable": h.unstable_suffix,
                "t_ms": step.t_ms,
            }
        )
        for release in releases:
            outbox.put_nowait(release)
        releases.clear()
        if event.kind is EventKind.FINAL:
            outbox.put_nowait(
                {
                    "type": "final",
                    "speaker": step.speaker,
                    "turn": str(step.turn_id),
                    "text": event.text,
                }
            )
