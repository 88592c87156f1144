"""The live socket's frame protocol: what one frame does, and the messages on their way out.

``receive`` reads a connection's frames one at a time and answers each (``heard.server.live``
documents the protocol and does the wiring): transcript events go to the conversation,
audio to the microphone, ``{"type": "end"}`` flushes it; a frame too big, malformed or over
the token's quota ends the connection with a close code and a reason.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from fastapi import WebSocket, WebSocketDisconnect

from heard.asr.audio import SAMPLE_RATE
from heard.errors import EventLogError
from heard.live.conversation import Conversation
from heard.live.microphone import Microphone
from heard.release.tracker import ReleaseUnit
from heard.server import quotas
from heard.server.messages import (
    Degraded,
    End,
    Error,
    Heard,
    Hypothesis,
    LiveMessage,
    Release,
)
from heard.storable import unique_keys
from heard.transcript.events import EventKind, TranscriptEvent, parse_event
from heard.transcript.stabilizer import TranscriptStep

if TYPE_CHECKING:
    from heard.asr.whisper import WhisperOptions

__all__ = ["MAX_FRAME_BYTES", "Outbox", "Releases", "close_reason", "is_end", "receive"]

log = logging.getLogger("heard.server.live")

MAX_FRAME_BYTES = 64 * 1024
OUTBOX_LIMIT = 1000
"""Messages waiting for a client: one that lets more pile up is not reading, and is closed."""
SEND_TIMEOUT_S = 10.0
"""How long one message may wait for the client to take it before the client is closed."""
CLOSE_UNSUPPORTED = 1003
CLOSE_INVALID = 1007
CLOSE_POLICY = 1008
CLOSE_TOO_BIG = 1009
REVOKED = "the token was revoked"


MAX_REASON_BYTES = 123
"""A close frame's reason holds at most this much UTF-8 (RFC 6455: 125 bytes with the code)."""


def close_reason(text: str) -> str:
    """``text`` cut to what a close frame can carry, whole characters only: a longer reason
    fails the close, and the client sees 1006 instead of the code."""
    data = text.encode("utf-8")
    if len(data) <= MAX_REASON_BYTES:
        return text
    return data[: MAX_REASON_BYTES - 3].decode("utf-8", "ignore") + "..."


class Outbox(asyncio.Queue[LiveMessage | None]):
    """Messages on their way to the client, at most OUTBOX_LIMIT: when more pile up the
    client is not reading, ``stuck`` is set and further messages are dropped."""

    def __init__(self) -> None:
        super().__init__(maxsize=OUTBOX_LIMIT)
        self.stuck = asyncio.Event()

    def put_nowait(self, item: LiveMessage | None) -> None:
        try:
            super().put_nowait(item)
        except asyncio.QueueFull:
            self.stuck.set()


class Releases:
    """Caption units on their way out: held while a step is fed (they follow the hypothesis
    that released them), sent at once when the captions' timer releases them."""

    def __init__(self, outbox: asyncio.Queue[LiveMessage | None]) -> None:
        self.outbox = outbox
        self.held: list[LiveMessage] | None = None

    def release(self, unit: ReleaseUnit) -> None:
        message = Release.model_validate(unit.to_dict())
        if self.held is not None:
            self.held.append(message)
        else:
            self.outbox.put_nowait(message)

    async def feed(self, conversation: Conversation, event: TranscriptEvent) -> TranscriptStep:
        self.held = []
        return await conversation.feed(event)

    def flush(self) -> None:
        for message in self.held or ():
            self.outbox.put_nowait(message)
        self.held = None


def is_end(raw: str) -> bool:
    """``{"type": "end"}``, however it is spaced."""
    if '"end"' not in raw:
        return False
    try:
        message = json.loads(raw, object_pairs_hook=unique_keys)
    except (ValueError, RecursionError):  # not an end: parsing it as an event says why
        return False
    return isinstance(message, dict) and message.get("type") == "end"


async def receive(
    websocket: WebSocket,
    conversation: Conversation,
    outbox: asyncio.Queue[LiveMessage | None],
    outgoing: Releases,
    user: str,
    connection: str,
    whisper: WhisperOptions,
    quota: quotas.Quota,
    token_valid: Callable[[], Awaitable[bool]],
) -> tuple[int, str] | None:
    """Feed events until the client leaves (None) or sends something wrong (a close code);
    audio frames are recognized with the ``whisper`` model. Before a final is fed (and so
    stored as evidence) the connection's token is checked again: a revoked one ends it."""
    revoked = False

    async def admit(event: TranscriptEvent) -> bool:
        nonlocal revoked
        if not revoked and event.kind is EventKind.FINAL and not await token_valid():
            log.warning("live %s (%s): the token was revoked; closing", connection, user)
            revoked = True
        return not revoked

    def emit(step: TranscriptStep, event: TranscriptEvent) -> None:
        h = step.hypothesis
        outbox.put_nowait(
            Hypothesis(speaker=step.speaker, turn=str(step.turn_id), stable=h.stable_prefix,
                       unstable=h.unstable_suffix, t_ms=step.t_ms)
        )  # fmt: skip
        outgoing.flush()

    audio: Microphone | None = None
    speaker = websocket.query_params.get("speaker", "you")[:200] or "you"
    number = 0
    events, pcm = quota.events, quota.pcm
    received = 0  # audio samples

    def too_fast(what: str) -> tuple[int, str]:
        log.warning("live %s (%s): over the rate limit for %s at frame %d", connection, user,
                    what, number)  # fmt: skip
        detail = (
            f"over the rate limit of {quotas.limit_text(what)}; closing "
            f"(no new connection for {quotas.BARRED_S:g} s)"
        )
        outbox.put_nowait(Error(detail=detail))
        quota.bar()
        return CLOSE_POLICY, f"frame {number}: {detail}"[:120]

    try:
        while True:
            try:
                message = await websocket.receive()
            except WebSocketDisconnect:
                return None
            if message["type"] == "websocket.disconnect":
                return None
            number += 1
            if revoked:
                return CLOSE_POLICY, REVOKED
            raw = message.get("text")
            data = message.get("bytes")
            size = len(raw.encode()) if raw is not None else len(data or b"")
            if size > MAX_FRAME_BYTES:
                log.warning(
                    "live %s (%s): frame %d is over %d bytes",
                    connection,
                    user,
                    number,
                    MAX_FRAME_BYTES,
                )
                return CLOSE_TOO_BIG, f"frame {number} is over {MAX_FRAME_BYTES} bytes"
            if not (events.take(1) if raw is not None else pcm.take(len(data or b""))):
                return too_fast("events" if raw is not None else "audio")
            if raw is None:
                if not data or len(data) % 2:
                    log.warning("live %s (%s): frame %d is not PCM16", connection, user, number)
                    return (
                        CLOSE_INVALID,
                        f"frame {number}: audio must be PCM16 (an even number of bytes)",
                    )
                if audio is None:

                    async def hear(event: TranscriptEvent) -> None:
                        if await admit(event):
                            emit(await outgoing.feed(conversation, event), event)

                    def degraded(chunk_ms: int, rtf: float) -> None:
                        outbox.put_nowait(Degraded(chunk_ms=chunk_ms, rtf=rtf))

                    audio = Microphone(speaker, hear, degraded, whisper, shared=True)
                audio.add(data)
                received += len(data) // 2
                outbox.put_nowait(Heard(received_ms=received * 1000 // SAMPLE_RATE))
                continue
            if is_end(raw):
                # answered once everything sent before it is: the audio's last final decoded,
                # every final stored (or its error sent), every context prepared
                if audio is not None:
                    await audio.flush()
                await conversation.join()
                outbox.put_nowait(End())
                continue
            try:
                event = parse_event(raw, "frame", number)
            except EventLogError as e:
                log.warning("live %s (%s): %s", connection, user, e)
                return CLOSE_INVALID, str(e)[:120]
            if not await admit(event):
                return CLOSE_POLICY, REVOKED
            emit(await outgoing.feed(conversation, event), event)
    finally:
        if audio is not None:
            await audio.close()
