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
  utterance (``endpointing`` ms of it, 800 by default; a shorter value, such as LiveKit's 25,
  is taken as 800: cutting sooner makes the recognizer decode other words); words with their
  start, end and confidence (the recognizer's word probability);
* ``SpeechStarted`` (with ``vad_events=true``) when a new utterance's first words are heard;
* ``UtteranceEnd`` (with ``utterance_end_ms``) once that much audio has been decoded after
  the last final word with no new speech;
* ``Metadata`` in answer to ``CloseStream`` (or an empty binary frame, Deepgram's older way).

A connection quiet for 10 s (no audio, no message: ``KeepAlive`` holds it) is closed with
1011 ``NET-0001``, as Deepgram closes it; a token revoked while it streams is checked before
each final, and closes it with 1008.

Query parameters taken: ``encoding`` (``linear16``, ``mulaw`` and ``alaw`` at any
``sample_rate``; ``opus``, ``ogg-opus``, ``webm``, ``flac``... in a container, or none given and
the first bytes a container's or MP3 frames'; ``heard.asr.incoming``), ``channels`` (up to 8,
each its own stream, its ``Results`` marked by ``channel_index``; ``multichannel`` taken either
way), ``language`` (as the server's model knows it; ``en-US`` is ``en``),
``model`` (any name: the server's recognizer answers, and ``Metadata`` says which),
``interim_results``, ``punctuate`` (false, Deepgram's default: no punctuation and lower case),
``endpointing``, ``utterance_end_ms``, ``vad_events``; ``smart_format``, ``numerals``,
``filler_words``, ``version`` and ``mip_opt_out`` are accepted and have no effect. Anything
else, or a value heard cannot honour, refuses the handshake with a 400 saying which, as
Deepgram does; a bad key is a 401, a token over its rate limit a 429. The socket's rules
(limits shared per token with ``/v1/live``, frames over 64 KiB closed with 1009, the way out)
are the session loop's (``heard.server.session``); the audio goes the live path every socket
shares (``heard.live.path``); this module is the protocol's codec: its control messages are
parsed by the models of ``heard.server.frames``, its ``Results`` made from the path's decode
steps. A malformed frame closes with 1007.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import uuid
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from fastapi import WebSocket
from fastapi.responses import JSONResponse

from heard.asr.audio import SAMPLE_RATE
from heard.asr.incoming import IncomingAudio, is_container
from heard.asr.microphone import Microphone
from heard.asr.streaming import Decoded, StreamOptions, strip_punctuation
from heard.asr.whisper import load_model
from heard.errors import AudioError, InputError, SocketCloseError
from heard.live.path import LiveOutput, LivePath
from heard.server.frames import parse_control
from heard.server.listen_options import ListenOptions, parse_options
from heard.server.session import (
    CLOSE_ERROR,
    CLOSE_INVALID,
    CLOSE_NORMAL,
    MAX_FRAME_BYTES,
    Session,
)
from heard.transcript.events import EventKind

__all__ = ["IDLE_S", "LISTENING", "DeepgramCodec", "refuse"]

log = logging.getLogger("heard.server.listen")

LISTENING: set[str] = set()
"""The request ids of the connections open now, each with its microphones (one that leaves,
however it leaves, is taken out once its microphones are closed)."""
IDLE_S = 10.0
"""A connection that sends neither audio nor a message for this long is closed (1011,
``NET-0001``), as Deepgram closes it: ``KeepAlive`` is how a client holds a quiet one open."""


async def refuse(websocket: WebSocket, status: int, message: str) -> None:
    """Refuse the handshake with an HTTP status and Deepgram's error body."""
    codes = {400: "Bad Request", 401: "INVALID_AUTH", 429: "TOO_MANY_REQUESTS"}
    body = {"err_code": codes.get(status, "ERROR"), "err_msg": message,
            "request_id": str(uuid.uuid4())}  # fmt: skip
    await websocket.send_denial_response(JSONResponse(body, status_code=status))


class _Channel(LiveOutput):
    """One channel's Deepgram side: ``Results`` from the live path's decode steps (the
    commits stage: each as it was decoded), and the speech events around them."""

    def __init__(self, codec: DeepgramCodec, index: int) -> None:
        self.codec = codec
        self.index = [index, codec.options.channels]
        self.speaking = False
        self.last_word_end: float | None = None
        """End of the last final word, while no UtteranceEnd has been sent for it."""
        self.received = 0  # samples at 16 kHz

    async def decoded(self, d: Decoded) -> None:
        final = d.kind is EventKind.FINAL
        session = self.codec.session
        if not d.text and not self.speaking:
            return
        if not self.speaking:
            self.speaking = True
            self.last_word_end = None
            if self.codec.options.vad_events:
                session.send({"type": "SpeechStarted", "channel": self.index,
                              "timestamp": d.start_s})  # fmt: skip
        if not final:
            self.last_word_end = None  # speech goes on: no UtteranceEnd yet
            if self.codec.options.interim:
                session.send(self.codec.results(d, final=False, channel=self.index))
            return
        session.send(self.codec.results(d, final=True, channel=self.index))
        self.last_word_end = d.end_s
        if d.endpoint:
            self.speaking = False

    def heard(self, samples: int, decoded: int) -> None:
        """``samples`` more arrived; the recognizer has decoded (and handed on what it found
        in) the first ``decoded``. UtteranceEnd goes by decoded audio: audio that arrived but
        is not decoded yet may hold the next words (a word committed a second after it ended
        leaves nothing pending, so no partial says that speech goes on)."""
        self.received += samples
        wait = self.codec.options.utterance_end_ms
        end = self.last_word_end
        if wait is not None and end is not None and decoded / SAMPLE_RATE - end >= wait / 1000:
            self.last_word_end = None
            self.codec.session.send(
                {"type": "UtteranceEnd", "channel": self.index, "last_word_end": end}
            )


class DeepgramCodec:
    """Deepgram's live protocol on the session loop (the module doc)."""

    protocol: str = "listen"
    max_frame_bytes: int = MAX_FRAME_BYTES
    idle_s: float | None = IDLE_S

    def __init__(self, session: Session) -> None:
        self.session = session
        self.idle_s = IDLE_S  # read now: a test shortens it
        whisper = session.settings.whisper
        self.options: ListenOptions = parse_options(session.params, whisper)
        allowed = session.quota.audio_x
        if self.options.channels > allowed:  # each channel is charged: say so now, not at 2 s
            raise InputError(
                f"{self.options.channels} channels at real time need an audio allowance of "
                f"{self.options.channels}; this server gives a token {allowed:g} "
                "(HEARD_LIVE_AUDIO_X)"
            )
        self.whisper = replace(whisper, language=self.options.language)
        load_model(self.whisper).language(self.options.language)  # InputError: a 400
        self.request_id = str(uuid.uuid4())
        self.model_uuid = str(uuid.uuid5(uuid.NAMESPACE_URL, f"heard:{self.options.model}"))
        self.audio_sha = hashlib.sha256()
        self.bytes_in = 0
        self.finalizing = False
        self.number = 0
        self.incoming: IncomingAudio | None = None
        self.channels = [_Channel(self, c) for c in range(self.options.channels)]
        self.microphones: list[Microphone] = []

    async def start(self) -> None:
        LISTENING.add(self.request_id)

    def results(self, d: Decoded, *, final: bool, channel: list[int]) -> dict[str, Any]:
        words = [
            {"word": strip_punctuation(w.text).lower(), "start": w.start, "end": w.end,
             "confidence": w.probability, "punctuated_word": w.text}
            for w in d.words
        ]  # fmt: skip
        confidence = sum(w.probability for w in d.words) / len(d.words) if d.words else 0.0
        return {
            "type": "Results",
            "channel_index": channel,
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

    def metadata(self) -> dict[str, Any]:
        return {
            "type": "Metadata",
            "transaction_key": "deprecated",
            "request_id": self.request_id,
            "sha256": self.audio_sha.hexdigest(),
            "created": datetime.now(UTC).isoformat(timespec="milliseconds"),
            "duration": round(self.channels[0].received / SAMPLE_RATE, 3),
            "channels": self.options.channels,
            "models": [self.model_uuid],
            "model_info": {self.model_uuid: self._model_info()},
        }

    def _start_audio(self, first: bytes) -> IncomingAudio:
        o = self.options
        encoding = o.encoding
        if encoding == "sniff":
            encoding = "container" if is_container(first) else "linear16"
        stream = StreamOptions(end_silence_ms=o.endpointing_ms, word_timestamps=True,
                               strip_punctuation=not o.punctuate)  # fmt: skip
        recognizer = self.session.settings.live_recognizers(self.whisper, stream)
        name = self.session.user.name
        for channel in self.channels:
            speaker = name if o.channels == 1 else f"{name} {channel.index[0]}"
            path = LivePath(speaker, channel, self.session)
            self.microphones.append(
                Microphone(speaker, path.take, lambda chunk_ms, rtf: None, recognizer)
            )
        return IncomingAudio(encoding, o.sample_rate, o.channels)

    def _hand_on(self, pcm: list[bytes]) -> None:
        """Each channel's audio to its microphone; the stream is charged for every channel's
        bytes, as each is decoded as one stream: 8 channels at real time need a token allowed
        8 (``heard serve``'s ``HEARD_LIVE_AUDIO_X``), as 8 mono sockets would."""
        self.session.charge_audio(sum(len(p) for p in pcm))
        for microphone, channel, data in zip(self.microphones, self.channels, pcm, strict=True):
            if data:
                microphone.add(data)
                channel.heard(len(data) // 2, microphone.handed_on)

    async def audio(self, data: bytes) -> None:
        self.number += 1
        if not data:  # Deepgram's older way to close the stream
            await self.text('{"type": "CloseStream"}')
            return
        if self.incoming is None:
            self.incoming = self._start_audio(data)
        self.audio_sha.update(data)
        try:
            pcm = self.incoming.feed(data)
        except AudioError as e:
            raise SocketCloseError(CLOSE_INVALID, f"frame {self.number}: {e}") from None
        self._hand_on(pcm)

    async def _flush(self) -> None:
        self.finalizing = True
        try:
            await asyncio.gather(*(m.flush() for m in self.microphones))
        finally:
            self.finalizing = False

    async def text(self, raw: str) -> None:
        self.number += 1
        try:
            control = parse_control(raw)
        except InputError as e:
            raise SocketCloseError(CLOSE_INVALID, f"frame {self.number}: {e}") from None
        if control.type == "KeepAlive":
            return
        if control.type == "Configure":  # keyterms mid-stream: heard's recognizer takes none
            self.session.send({"type": "ConfigureFailure", "request_id": self.request_id,
                               "code": "CONFIGURE_KEYTERMS_NOT_SUPPORTED",
                               "description": "heard's recognizer takes no keyterms"})  # fmt: skip
            return
        if control.type == "CloseStream":
            if self.incoming is not None:  # a resampler's or a container's last samples
                try:
                    self._hand_on(await asyncio.to_thread(self.incoming.finish))
                except AudioError as e:
                    raise SocketCloseError(CLOSE_INVALID, f"frame {self.number}: {e}") from None
            await self._flush()
            self.session.send(self.metadata())
            raise SocketCloseError(CLOSE_NORMAL, "")
        await self._flush()  # Finalize

    def error(self, detail: str) -> None:
        """Deepgram says nothing before a close; the close's reason carries it."""

    def on_idle(self) -> SocketCloseError:
        return SocketCloseError(CLOSE_ERROR, f"NET-0001: no audio or message for {IDLE_S:g} s")

    async def close(self) -> None:
        try:
            if self.incoming is not None:
                self.incoming.close()  # a container's decoding thread stops with the socket
            await asyncio.gather(*(m.close() for m in self.microphones), return_exceptions=True)
        finally:
            LISTENING.discard(self.request_id)
