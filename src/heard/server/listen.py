"""``/v1/listen``: Deepgram's live transcription protocol, answered by heard's recognizer.

A client written for Deepgram's streaming API (its SDKs, Pipecat's and LiveKit's Deepgram
services) points its URL at ``ws://HOST:8000`` with a heard token as its API key
(``Authorization: Token KEY``, as Deepgram's SDKs send it; ``Bearer KEY``, the ``token``
subprotocol or ``?token=`` too). It sends PCM16 audio frames and the control messages
``{"type": "KeepAlive"}``, ``{"type": "Configure"}`` (answered ``ConfigureFailure``: heard's
recognizer takes no keyterms), ``{"type": "Finalize"}`` (the audio so far is decoded and its
final sent, ``from_finalize``) and ``{"type": "CloseStream"}`` (the same, then ``Metadata``
and a normal close). It gets back:

* ``Results``: interim ones (``is_final`` false, with ``interim_results=true``) from the
  recognizer's partials; final ones from its finals, ``speech_final`` when silence ended the
  utterance (``endpointing`` ms of it, 800 by default, at least 300); words with their start,
  end and confidence (the recognizer's word probability);
* ``SpeechStarted`` (with ``vad_events=true``) when a new utterance's first words are heard;
* ``UtteranceEnd`` (with ``utterance_end_ms``) once that much audio has gone by after the
  last final word with no new speech;
* ``Metadata`` in answer to ``CloseStream`` (or an empty binary frame, Deepgram's older way).

A connection quiet for 10 s (no audio, no message: ``KeepAlive`` holds it) is closed with
1011 ``NET-0001``, as Deepgram closes it; a token revoked while it streams is checked before
each final, and closes it with 1008.

Query parameters taken: ``encoding`` (linear16 only), ``sample_rate`` (16000 only),
``channels`` (1 only), ``language`` (as the server's model knows it; ``en-US`` is ``en``),
``model`` (any name: the server's recognizer answers, and ``Metadata`` says which),
``interim_results``, ``punctuate`` (false, Deepgram's default: no punctuation and lower case),
``endpointing``, ``utterance_end_ms``, ``vad_events``; ``smart_format``, ``numerals``,
``filler_words``, ``version`` and ``mip_opt_out`` are accepted and have no effect. Anything
else, or a value heard cannot honour, refuses the handshake with a 400 saying which, as
Deepgram does; a bad key is a 401, a token over its rate limit a 429. The rate limits are
``/v1/live``'s, shared with it per token; frames over 64 KiB close with 1009, a malformed one
with 1007.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, WebSocket, WebSocketDisconnect
from fastapi.responses import JSONResponse

from heard.asr.audio import SAMPLE_RATE
from heard.asr.streaming import Decoded, StreamOptions, strip_punctuation
from heard.asr.whisper import load_model
from heard.errors import InputError
from heard.live.microphone import Microphone
from heard.server import quotas
from heard.server.frames import (
    CLOSE_INVALID,
    CLOSE_POLICY,
    CLOSE_TOO_BIG,
    MAX_FRAME_BYTES,
    REVOKED,
    SEND_TIMEOUT_S,
    close_reason,
)
from heard.server.listen_options import ListenOptions, parse_options
from heard.storable import unique_keys
from heard.store.users import authenticate, digest
from heard.transcript.events import EventKind

if TYPE_CHECKING:
    from heard.server.state import ServerSettings

__all__ = ["LISTENING", "mount_listen"]

log = logging.getLogger("heard.server.listen")

LISTENING: set[str] = set()
"""The request ids of the connections open now, each with its microphone (one that leaves,
however it leaves, is taken out once its microphone is closed)."""
CLOSE_NORMAL = 1000
CLOSE_IDLE = 1011
IDLE_S = 10.0
"""A connection that sends neither audio nor a message for this long is closed (1011,
``NET-0001``), as Deepgram closes it: ``KeepAlive`` is how a client holds a quiet one open."""
CHANNEL = [0, 1]
"""Deepgram's ``channel_index``: channel 0 of 1."""


def _token(websocket: WebSocket) -> tuple[str, bool]:
    """The key the client sent, and whether it came as the ``token`` subprotocol."""
    header = websocket.headers.get("authorization", "")
    scheme, _, key = header.partition(" ")
    if scheme.lower() in ("token", "bearer") and key.strip():
        return key.strip(), False
    offered = [p.strip() for p in websocket.headers.get("sec-websocket-protocol", "").split(",")]
    if len(offered) == 2 and offered[0] == "token":
        return offered[1], True
    return websocket.query_params.get("token", ""), False


async def _refuse(websocket: WebSocket, status: int, code: str, message: str) -> None:
    """Refuse the handshake with an HTTP status and Deepgram's error body."""
    body = {"err_code": code, "err_msg": message, "request_id": str(uuid.uuid4())}
    await websocket.send_denial_response(JSONResponse(body, status_code=status))


class _Stream:
    """One connection's Deepgram side: what to send for each thing the recognizer decodes."""

    def __init__(
        self,
        websocket: WebSocket,
        options: ListenOptions,
        token_valid: Callable[[], Awaitable[bool]] | None = None,
    ) -> None:
        self.websocket = websocket
        self.options = options
        self.token_valid = token_valid
        self.revoked = False
        """The token was revoked: no more finals go out, and the connection is closed."""
        self.request_id = str(uuid.uuid4())
        self.model_uuid = str(uuid.uuid5(uuid.NAMESPACE_URL, f"heard:{options.model}"))
        self.audio = hashlib.sha256()
        self.received = 0  # samples
        self.finalizing = False
        self.speaking = False
        self.last_word_end: float | None = None
        """End of the last final word, while no UtteranceEnd has been sent for it."""
        self.stuck = False

    async def send(self, message: dict[str, Any]) -> None:
        if self.stuck:
            return
        try:
            await asyncio.wait_for(self.websocket.send_text(json.dumps(message)), SEND_TIMEOUT_S)
        except TimeoutError:
            self.stuck = True  # not reading: the receive loop closes it

    async def decoded(self, d: Decoded) -> None:
        final = d.kind is EventKind.FINAL
        if self.revoked or (not d.text and not self.speaking):
            return
        if final and self.token_valid is not None and not await self.token_valid():
            self.revoked = True  # checked before each final, as /v1/live checks it
            log.warning("listen %s: the token was revoked; closing", self.request_id)
            with contextlib.suppress(Exception):
                closing = self.websocket.close(CLOSE_POLICY, REVOKED)
                await asyncio.wait_for(closing, SEND_TIMEOUT_S)
            return
        if not self.speaking:
            await self._started(d)
        if not final:
            self.last_word_end = None  # speech goes on: no UtteranceEnd yet
            if self.options.interim:
                await self.send(self._results(d, final=False))
            return
        await self.send(self._results(d, final=True))
        self.last_word_end = d.end_s
        if d.endpoint:
            self.speaking = False

    async def _started(self, d: Decoded) -> None:
        self.speaking = True
        self.last_word_end = None
        if self.options.vad_events:
            await self.send({"type": "SpeechStarted", "channel": CHANNEL, "timestamp": d.start_s})

    def _results(self, d: Decoded, final: bool) -> dict[str, Any]:
        words = [
            {
                "word": strip_punctuation(w.text).lower(),
                "start": w.start,
                "end": w.end,
                "confidence": w.probability,
                "punctuated_word": w.text,
            }
            for w in d.words
        ]
        confidence = sum(w.probability for w in d.words) / len(d.words) if d.words else 0.0
        return {
            "type": "Results",
            "channel_index": CHANNEL,
            "duration": round(d.end_s - d.start_s, 3),
            "start": d.start_s,
            "is_final": final,
            "speech_final": final and d.endpoint and not self.finalizing,
            "from_finalize": final and self.finalizing,
            "channel": {"alternatives": [{"transcript": d.text,
                                          "confidence": round(confidence, 4), "words": words}]},
            "metadata": {"request_id": self.request_id, "model_uuid": self.model_uuid,
                         "model_info": self._model_info()},
        }  # fmt: skip

    def _model_info(self) -> dict[str, str]:
        return {"name": self.options.model, "version": "heard", "arch": "whisper"}

    async def heard_audio(self, pcm: bytes) -> None:
        self.audio.update(pcm)
        self.received += len(pcm) // 2
        wait = self.options.utterance_end_ms
        end = self.last_word_end
        if (
            wait is not None
            and end is not None
            and self.received / SAMPLE_RATE - end >= wait / 1000
        ):
            self.last_word_end = None
            await self.send({"type": "UtteranceEnd", "channel": CHANNEL, "last_word_end": end})

    def metadata(self) -> dict[str, Any]:
        return {
            "type": "Metadata",
            "transaction_key": "deprecated",
            "request_id": self.request_id,
            "sha256": self.audio.hexdigest(),
            "created": datetime.now(UTC).isoformat(timespec="milliseconds"),
            "duration": round(self.received / SAMPLE_RATE, 3),
            "channels": 1,
            "models": [self.model_uuid],
            "model_info": {self.model_uuid: self._model_info()},
        }


def mount_listen(app: FastAPI, settings: ServerSettings) -> None:
    """Serve ``/v1/listen``; the rate limits are the live socket's, per token
    (``app.state.live_quotas``)."""
    by_token: dict[str, quotas.Quota] = app.state.live_quotas

    @app.websocket("/v1/listen")
    async def listen(websocket: WebSocket) -> None:
        token, as_subprotocol = _token(websocket)
        quota = by_token.get(digest(token)) if token else None
        if quota is not None and (wait_s := quota.barred_for()) > 0:
            await asyncio.sleep(min(wait_s, quotas.REFUSAL_DELAY_S))
            await _refuse(websocket, 429, "TOO_MANY_REQUESTS", f"over the rate limit: wait "
                          f"{wait_s:.0f} s")  # fmt: skip
            return
        user = await asyncio.to_thread(authenticate, settings.db, token) if token else None
        if user is None:
            await _refuse(websocket, 401, "INVALID_AUTH", "Invalid credentials: a heard token")
            return
        params = dict(websocket.query_params)
        try:
            options = parse_options(params, settings.whisper)
            chosen = replace(settings.whisper, language=options.language)
            await asyncio.to_thread(lambda: load_model(chosen).language(options.language))
        except InputError as e:
            await _refuse(websocket, 400, "Bad Request", str(e))
            return
        quota = by_token.setdefault(digest(token), quotas.Quota())
        await websocket.accept(subprotocol="token" if as_subprotocol else None)

        async def token_valid() -> bool:
            return await asyncio.to_thread(authenticate, settings.db, token) is not None

        stream = _Stream(websocket, options, token_valid)
        microphone = Microphone(
            user.name, None, lambda chunk_ms, rtf: None, chosen,
            stream=StreamOptions(end_silence_ms=options.endpointing_ms, word_timestamps=True,
                                 strip_punctuation=not options.punctuate),
            on_decoded=stream.decoded, shared=True,
        )  # fmt: skip
        close: tuple[int, str] | None = None
        LISTENING.add(stream.request_id)
        try:
            close = await _receive(websocket, stream, microphone, quota)
        finally:
            with contextlib.suppress(Exception):
                await microphone.close()
            LISTENING.discard(stream.request_id)
            if close is not None:
                with contextlib.suppress(Exception):
                    closing = websocket.close(close[0], close_reason(close[1]))
                    await asyncio.wait_for(closing, SEND_TIMEOUT_S)


async def _receive(
    websocket: WebSocket, stream: _Stream, microphone: Microphone, quota: quotas.Quota
) -> tuple[int, str] | None:
    """Frames until the client leaves (None) or must be closed (a code and a reason)."""
    number = 0
    while True:
        try:
            message = await asyncio.wait_for(websocket.receive(), IDLE_S)
        except WebSocketDisconnect:
            return None
        except TimeoutError:
            return CLOSE_IDLE, f"NET-0001: no audio or message for {IDLE_S:g} s"
        if message["type"] == "websocket.disconnect":
            return None
        number += 1
        if stream.revoked:
            return CLOSE_POLICY, REVOKED
        if stream.stuck:
            return CLOSE_POLICY, "not reading: messages waited too long"
        raw, data = message.get("text"), message.get("bytes")
        size = len(raw.encode()) if raw is not None else len(data or b"")
        if size > MAX_FRAME_BYTES:
            return CLOSE_TOO_BIG, f"frame {number} is over {MAX_FRAME_BYTES} bytes"
        if raw is None and not data:  # Deepgram's older way to close the stream
            raw = '{"type": "CloseStream"}'
        if raw is None:
            if not data or len(data) % 2:
                return CLOSE_INVALID, f"frame {number}: audio must be PCM16 (an even byte count)"
            if not quota.pcm.take(len(data)):
                quota.bar()
                return CLOSE_POLICY, f"frame {number}: over {quotas.limit_text('audio')}"
            microphone.add(data)
            await stream.heard_audio(data)
            continue
        if not quota.events.take(1):
            quota.bar()
            return CLOSE_POLICY, f"frame {number}: over {quotas.limit_text('events')}"
        try:
            control = json.loads(raw, object_pairs_hook=unique_keys)
        except (ValueError, RecursionError):
            return CLOSE_INVALID, f"frame {number}: not a JSON control message"
        kind = control.get("type") if isinstance(control, dict) else None
        if kind == "KeepAlive":
            continue
        if kind == "Configure":  # keyterms mid-stream: heard's recognizer takes none
            await stream.send({"type": "ConfigureFailure", "request_id": stream.request_id,
                               "code": "CONFIGURE_KEYTERMS_NOT_SUPPORTED",
                               "description": "heard's recognizer takes no keyterms"})  # fmt: skip
            continue
        if kind in ("Finalize", "CloseStream"):
            stream.finalizing = True
            await microphone.flush()
            stream.finalizing = False
            if kind == "CloseStream":
                await stream.send(stream.metadata())
                return CLOSE_NORMAL, ""
            continue
        shown = str(kind)[:40] if kind is not None else "no type"
        return (
            CLOSE_INVALID,
            f"frame {number}: {shown}: KeepAlive, Finalize, CloseStream or Configure",
        )
