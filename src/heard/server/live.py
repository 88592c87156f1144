"""``/v1/live``: one live conversation per WebSocket.

The client sends either transcript events as JSON text frames, on heard's wire
format (``{"t_ms": 1200, "type": "partial", "text": "what should we", "speaker": "alice"}``),
or audio as binary frames: PCM16 little-endian, 16 kHz, mono, any length. Audio goes
through heard's streaming recognizer (``?speaker=`` names who speaks, default "you");
when decoding falls behind the audio, the recognizer's step grows (up to 4 s) and the
client is told: ``{"type": "degraded", "chunk_ms": 2000, "rtf": 1.3}`` (and again, with the
smaller step, when it narrows back once decoding keeps up). A text frame
``{"type": "end"}`` flushes the audio (the last final) without closing.
The server answers with JSON messages:

* ``{"type": "hypothesis", "speaker", "turn", "stable", "unstable", "t_ms"}`` per event;
* ``{"type": "release", "speaker", "text", "reason", "t_ms", "position", "replaces"}``
  for caption units (cadence from ``?mode=relaxed|balanced``, default balanced): put the
  unit's words at ``position`` of the speaker's caption in place of ``replaces`` words (a
  ``correction`` replaces words a final contradicted). Units a timer releases while nobody
  speaks come on their own; the others right after the hypothesis that released them;
* ``{"type": "context", ...}``: the memory prepared for the next reply;
* ``{"type": "final", "speaker", "turn", "text"}``: the final, sent once it is stored as
  evidence (a recall made after it finds it); ``{"type": "error", "speaker", "turn",
  "detail"}`` instead when it could not be stored (logged, the connection goes on);
* ``{"type": "audio", "received_ms"}``: the answer to each audio frame (the audio received so
  far); ``{"type": "end"}``: the answer to the client's ``{"type": "end"}``, sent once all
  it sent before is answered (the last final decoded and stored, its context prepared). So
  every frame gets an answer (or an error, or a close code);
* with ``?translate=de``: ``{"type": "translation", "speaker", "text", "translation",
  "translator"}`` per release unit, in order (the LLM provider from the environment,
  or the identity translator, which says so in ``translator``).

A malformed frame closes the connection with 1007, text no store can keep (a NUL, a lone
surrogate, a speaker over 200 characters) too, naming the field; an oversize frame (over
64 KiB) with 1009; each is logged without the frame's text, and no other connection notices.

No connection can starve the others. Frames are read one at a time (the next only once the
last is handled, so what waits is bounded by the socket and uvicorn's queue of 32 frames);
each token may send 100 transcript events a second (bursts of 400) and twice real time of
audio (bursts of 10 s), over all its connections: beyond that the connection gets
``{"type": "error", "detail": ...}`` and a close with 1008, and the token may open no live
connection for the next 10 s (refused at the handshake after a second's wait, before any
work), so reconnecting does not buy a flooder a new burst, nor the server a handshake a
millisecond. Recognition, recall and storing run in worker threads; what stays on the event
loop per event (parsing, one stabilizer step) is bounded by that rate. A client that does not
take its messages (one waits over 10 s, or 1,000 pile up) is closed with 1008; one that takes
in nothing, not even pings, is closed by uvicorn's keepalive with 1011 ("keepalive ping
timeout", after ``heard serve``'s PING_INTERVAL_S and PING_TIMEOUT_S), which comes first when
its messages are too small to back up.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from typing import TYPE_CHECKING

from fastapi import FastAPI, WebSocket

from heard.live.prepared import PreparedContext
from heard.live.session import live_session
from heard.memory.evidence import Evidence
from heard.release.tracker import SELECTABLE_MODES
from heard.release.translation import (
    IdentityTranslator,
    LLMTranslator,
    TranslatedUnit,
    TranslationQueue,
    Translator,
)
from heard.server import quotas
from heard.server.frames import (
    CLOSE_POLICY,
    SEND_TIMEOUT_S,
    Outbox,
    Releases,
    close_reason,
    receive,
)
from heard.server.messages import (
    Context,
    Error,
    Final,
    Translation,
)
from heard.store.users import authenticate, digest

if TYPE_CHECKING:
    from heard.server.state import Memories, ServerSettings

__all__ = ["mount_live"]

log = logging.getLogger("heard.server.live")


def mount_live(app: FastAPI, settings: ServerSettings, memories: Memories) -> None:
    db = settings.db

    by_token: dict[str, quotas.Quota] = {}
    app.state.live_quotas = by_token  # shared with /v1/listen: a token's limits are one

    @app.websocket("/v1/live")
    async def live(websocket: WebSocket) -> None:
        header = websocket.headers.get("authorization", "")
        token = header[7:] if header.lower().startswith("bearer ") else ""
        token = token or websocket.query_params.get("token", "")
        key = digest(token)
        quota = by_token.get(key) if token else None
        if quota is not None and (wait_s := quota.barred_for()) > 0:
            # held a moment before the refusal: a client reconnecting in a loop then costs a
            # sleeping coroutine, not a handshake a millisecond
            await asyncio.sleep(min(wait_s, quotas.REFUSAL_DELAY_S))
            await websocket.close(
                code=CLOSE_POLICY, reason=f"over the rate limit: wait {wait_s:.0f} s"
            )
            return
        user = await asyncio.to_thread(authenticate, db, token) if token else None
        if user is None:
            await websocket.close(code=CLOSE_POLICY, reason="a valid token is required")
            return
        quota = by_token.setdefault(key, quotas.Quota())

        async def token_valid() -> bool:
            return await asyncio.to_thread(authenticate, db, token) is not None

        mode_name = websocket.query_params.get("mode", "balanced")
        if mode_name not in SELECTABLE_MODES:
            modes = " or ".join(SELECTABLE_MODES)
            await websocket.close(
                code=CLOSE_POLICY, reason=f"unknown caption mode {mode_name[:40]!r}: {modes}"
            )
            return
        await websocket.accept()
        connection = uuid.uuid4().hex[:8]
        memory = await asyncio.to_thread(memories.of, user.owner)
        outbox = Outbox()

        def on_context(context: PreparedContext) -> None:
            outbox.put_nowait(Context.model_validate(context.to_dict()))

        def on_remembered(turn: str, evidence: Evidence, problem: str | None) -> None:
            # a final is acknowledged once it is stored, or the client hears it was not
            if problem is None:
                outbox.put_nowait(Final(speaker=evidence.speaker, turn=turn, text=evidence.text))
                return
            log.error("live %s (%s): final of turn %s not stored (%s)", connection, user.name,
                      turn, problem.split(":")[0])  # fmt: skip
            outbox.put_nowait(Error(turn=turn, speaker=evidence.speaker,
                                    detail="the final was not stored; send it again"))  # fmt: skip

        outgoing = Releases(outbox)
        target = websocket.query_params.get("translate", "")[:10]
        translations: TranslationQueue | None = None
        if target:
            provider = settings.memory.provider
            translator: Translator = (
                LLMTranslator(provider) if provider is not None else IdentityTranslator()
            )

            def on_translated(done: TranslatedUnit) -> None:
                outbox.put_nowait(
                    Translation(speaker=done.unit.speaker, text=done.unit.text,
                                translation=done.translation, target=target,
                                translator=done.translator, error=done.error)
                )  # fmt: skip

            translations = TranslationQueue(translator, target=target, on_translated=on_translated)

        conversation = live_session(
            memory.recall,  # the user's pages and evidence, as they are when the call starts
            conversation_id=f"live-{connection}",
            database=db,
            owner=user.owner,
            lock=memory.lock,
            release_mode=SELECTABLE_MODES[mode_name],
            on_context=on_context,
            on_release=outgoing.release,
            translations=translations,
            on_remembered=on_remembered,
            language=settings.whisper.language or "",
        )

        async def send_all() -> None:
            while (message := await outbox.get()) is not None:
                try:
                    await asyncio.wait_for(
                        websocket.send_text(message.model_dump_json()), SEND_TIMEOUT_S
                    )
                except TimeoutError:
                    outbox.stuck.set()
                    return

        sender = asyncio.create_task(send_all())
        receiving = asyncio.create_task(
            receive(
                websocket,
                conversation,
                outbox,
                outgoing,
                user.name,
                connection,
                settings.whisper,
                quota,
                token_valid,
            )
        )
        stuck = asyncio.create_task(outbox.stuck.wait())
        close: tuple[int, str] | None = None
        try:
            await asyncio.wait({receiving, stuck}, return_when=asyncio.FIRST_COMPLETED)
            if receiving.done():
                close = receiving.result()
            else:  # the client does not take its messages: it is closed, nobody waits on it
                receiving.cancel()
                with contextlib.suppress(BaseException):
                    await receiving
                log.warning("live %s (%s): not reading its messages, closed", connection,
                            user.name)  # fmt: skip
                close = CLOSE_POLICY, "not reading: messages waited too long or piled up"
        finally:
            stuck.cancel()
            if not receiving.done():
                receiving.cancel()
            await conversation.join()
            await conversation.settle_captions()
            if outbox.stuck.is_set():
                sender.cancel()
            else:
                outbox.put_nowait(None)
            with contextlib.suppress(BaseException):
                await sender
            if close is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(
                        websocket.close(code=close[0], reason=close_reason(close[1])),
                        SEND_TIMEOUT_S,
                    )
