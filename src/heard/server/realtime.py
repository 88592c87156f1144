"""``/v1/realtime``: OpenAI's Realtime transcription sessions, answered by heard's recognizer.

A client written for OpenAI's Realtime API (its SDKs' ``realtime.connect``, Pipecat's
``OpenAIRealtimeSTTService``, LiveKit's OpenAI STT with ``use_realtime=True``) opens
``ws://HOST:8000/v1/realtime?intent=transcription`` (``model=`` any name) with a heard token as
its key (``Authorization: Bearer``, or the ``openai-insecure-api-key.KEY`` subprotocol). The
server says ``session.created`` first; then the client's events:

* ``session.update`` (or the beta ``transcription_session.update``): the session's
  ``audio.input`` (``format``: ``audio/pcm`` at 24 kHz, ``audio/pcmu`` or ``audio/pcma`` at
  8 kHz; ``transcription.language``; ``turn_detection``: ``server_vad`` or null), answered
  ``session.updated`` with the session as heard runs it (a new format, even mid-item, reads
  the audio appended after it);
* ``input_audio_buffer.append`` (``audio``: base64): the audio, decoded as it comes;
* ``input_audio_buffer.commit``: the audio so far ends the item: its transcript is completed
  (the way with ``turn_detection`` null, Pipecat's default); ``input_audio_buffer.clear``
  drops what was not transcribed yet.

The server answers, per item (an utterance): ``input_audio_buffer.speech_started`` once its
first words are heard; ``conversation.item.input_audio_transcription.delta`` as words are
committed (deltas only add: words shown are never taken back); with server VAD, once silence
ends the utterance, ``input_audio_buffer.speech_stopped`` and ``.committed``; then
``conversation.item.input_audio_transcription.completed`` with the whole ``transcript``.
With server VAD an item ends where a committed word is followed by the client's
``silence_duration_ms`` (LiveKit's 350 too): before the next word, or once the audio decoded
past it holds nothing more; the recognizer itself still cuts its utterances after 800 ms
(cut sooner, it decodes other words), so each word goes to one item once. An event heard
cannot take is answered with an ``error`` event (the clients treat it as fatal, so a commit
of nothing is not one: it completes an empty transcript). The socket's rules (limits, the
way out, the end) are the session loop's (``heard.server.session``); the audio goes the live
path every socket shares (``heard.live.path``); this module is the protocol's codec: its
events are parsed by the models of ``heard.server.frames``, and its items made from the
path's decode steps.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import logging
import uuid
from dataclasses import replace
from typing import Any

from fastapi import WebSocket
from fastapi.responses import JSONResponse

from heard.asr.audio import SAMPLE_RATE
from heard.asr.incoming import IncomingAudio
from heard.asr.microphone import Microphone
from heard.asr.streaming import StreamOptions
from heard.asr.whisper import WhisperOptions, load_model
from heard.errors import AudioError, HeardError, InputError, SocketCloseError
from heard.live.path import LiveOutput, LivePath
from heard.server.frames import (
    APPEND,
    SESSION_UPDATES,
    Append,
    Malformed,
    SessionConfig,
    SessionUpdate,
    parse_event,
)
from heard.server.listen_options import DECODE_SILENCE_MS
from heard.server.session import CLOSE_INVALID, Session
from heard.speech import Word
from heard.transcript.events import EventKind
from heard.transcript.utterances import Decoded

__all__ = ["RealtimeCodec", "refuse"]

log = logging.getLogger("heard.server.realtime")

FORMATS = {"audio/pcm": ("linear16", 24_000), "pcm16": ("linear16", 24_000),
           "audio/pcmu": ("mulaw", 8000), "g711_ulaw": ("mulaw", 8000),
           "audio/pcma": ("alaw", 8000), "g711_alaw": ("alaw", 8000)}  # fmt: skip
"""OpenAI's audio formats (the GA names and the beta's) as ``heard.asr.incoming`` reads them."""
MAX_FRAME_BYTES = 1024 * 1024
"""An append carries base64 audio: a second of 24 kHz PCM is 64 KB of it."""
SHORTEST_PAUSE_MS = 200
"""An item ends after at least this much silence, whatever the session asks (0 would make
every word an item)."""
SERVER_VAD = {"type": "server_vad", "threshold": 0.5, "prefix_padding_ms": 300,
              "silence_duration_ms": DECODE_SILENCE_MS}  # fmt: skip


async def refuse(websocket: WebSocket, status: int, message: str) -> None:
    """Refuse the handshake with an HTTP status and OpenAI's error body."""
    kind = "invalid_request_error" if status < 500 else "server_error"
    code = {401: "invalid_api_key", 429: "rate_limit_exceeded"}.get(status)
    body = {"error": {"message": message, "type": kind, "param": None, "code": code}}
    await websocket.send_denial_response(JSONResponse(body, status_code=status))


class _Item:
    """One utterance: its id, its words so far, whether its speech was announced."""

    def __init__(self, previous: str | None, start: int = 0) -> None:
        self.id = f"item_{uuid.uuid4().hex[:20]}"
        self.previous = previous
        self.start = start  # samples received when it began
        self.words: list[str] = []
        self.started = False
        self.last_end: float | None = None
        """Where its last word ends (s of the stream)."""


class RealtimeCodec(LiveOutput):
    """OpenAI's Realtime transcription protocol on the session loop (the module doc): its
    deltas and items come from the live path's decode steps (the commits stage)."""

    protocol: str = "realtime"
    max_frame_bytes: int = MAX_FRAME_BYTES
    idle_s: float | None = None

    def __init__(self, session: Session) -> None:
        self.session = session
        self.whisper: WhisperOptions = session.settings.whisper
        load_model(self.whisper)  # loaded before the handshake is answered
        self.model = session.params.get("model", "gpt-4o-transcribe")[:80]
        self.language = self.whisper.language or ""
        self.format = "audio/pcm"
        self.turn_detection: dict[str, Any] | None = dict(SERVER_VAD)
        self.beta = False
        self.events = 0
        self.item = _Item(None)
        self.incoming: IncomingAudio | None = None
        self.microphone: Microphone | None = None
        self.received = 0  # samples at 16 kHz
        self.pending: tuple[Word, ...] = ()
        """The words of the last partial: said, not committed yet."""
        self.id = f"sess_{uuid.uuid4().hex[:20]}"

    def _send(self, kind: str, **fields: Any) -> None:
        self.events += 1
        self.session.send({"type": kind, "event_id": f"event_{self.id[5:13]}{self.events}",
                           **fields})  # fmt: skip

    def _session(self) -> dict[str, Any]:
        rate = FORMATS[self.format][1]
        audio_format = {"type": self.format, **({"rate": rate} if rate != 8000 else {})}
        return {
            "type": "transcription",
            "object": "realtime.transcription_session",
            "id": self.id,
            "audio": {"input": {
                "format": audio_format,
                "transcription": {"model": self.model, "language": self.language or None},
                "turn_detection": self.turn_detection,
                "noise_reduction": None,
            }},
            "include": [],
        }  # fmt: skip

    async def start(self) -> None:
        self._send("session.created", session=self._session())

    async def text(self, raw: str) -> None:
        try:
            event = parse_event(raw)
        except InputError as e:
            raise SocketCloseError(CLOSE_INVALID, str(e)) from None
        if isinstance(event, Malformed):
            self._refuse(event.kind)
        elif isinstance(event, SessionUpdate):
            await self._update(event.session or SessionConfig(), event.type)
        elif isinstance(event, Append):
            self._append(event.audio)
        elif event.type == "input_audio_buffer.commit":
            await self._commit()
        else:
            await self._restart()
            self._send("input_audio_buffer.cleared")

    def _refuse(self, kind: object) -> None:
        """An event heard does not take gets an error event; the session goes on."""
        if kind in SESSION_UPDATES:
            self.error(f"{kind}: a session as OpenAI's Realtime API describes it (audio."
                       "input.format, transcription, turn_detection)",
                       code="invalid_session")  # fmt: skip
        elif kind == APPEND:
            self._append(None)
        else:
            shown = str(kind)[:60] if kind is not None else "an event with no type"
            self.error(f"{shown} is not taken here: session.update, input_audio_buffer.append, "
                       ".commit or .clear", code="unknown_event")  # fmt: skip

    async def audio(self, data: bytes) -> None:
        self.error("audio comes in input_audio_buffer.append events, base64", code="binary_frame")

    def error(self, detail: str, code: str | None = None) -> None:
        self._send("error", error={"type": "invalid_request_error", "code": code,
                                   "message": detail, "param": None})  # fmt: skip

    def on_idle(self) -> SocketCloseError:
        raise AssertionError("the realtime socket has no idle limit")

    async def close(self) -> None:
        if self.incoming is not None:
            self.incoming.close()
        if self.microphone is not None:
            await self.microphone.close()

    async def _update(self, asked: SessionConfig, kind: str) -> None:
        beta = kind.startswith("transcription_")
        self.beta = self.beta or beta
        transcription = asked.transcription
        audio_format = asked.format
        if audio_format is not None and audio_format not in FORMATS:
            self.error(f"audio format {str(audio_format)[:40]!r}: audio/pcm (24 kHz), "
                       "audio/pcmu or audio/pcma", code="invalid_format")  # fmt: skip
            return
        language = transcription.language or self.language
        try:
            await asyncio.to_thread(
                lambda: load_model(self.whisper).language(language.split("-")[0] or None)
            )
        except HeardError as e:
            self.error(str(e), code="unsupported_language")
            return
        asked_turns, turns = asked.turns()
        if asked_turns:
            self.turn_detection = None if turns is None else {
                **SERVER_VAD, **turns.model_dump(exclude_unset=True)}  # fmt: skip
        before, self.format = self.format, audio_format or self.format
        spoken, self.language = self.language, language.split("-")[0]
        self.model = (transcription.model or self.model)[:80]
        if self.received == 0:
            await self._restart()  # not a word yet: start with what was asked
        elif self.microphone is not None and self.language != spoken:
            await self._switch_language()
        elif self.incoming is not None and FORMATS[self.format] != FORMATS[before]:
            self._switch_format()
        name = "transcription_session.updated" if beta else "session.updated"
        self._send(name, session=self._session())

    def _stream(self) -> StreamOptions:
        asked = (self.turn_detection or {}).get("silence_duration_ms", DECODE_SILENCE_MS)
        silence = max(DECODE_SILENCE_MS, int(asked) if isinstance(asked, int | float) else 0)
        return StreamOptions(end_silence_ms=silence, word_timestamps=True)

    async def _restart(self) -> None:
        """A new microphone (what the old one had not decoded is dropped)."""
        if self.microphone is not None:
            old, self.microphone = self.microphone, None
            old.output = None
            await old.close()
        self.incoming = None
        self.item = _Item(self.item.id if self.item.words else self.item.previous, self.received)

    def _start(self) -> Microphone:
        encoding, rate = FORMATS[self.format]
        self.incoming = IncomingAudio(encoding, rate)
        whisper = replace(self.whisper, language=self.language or None)
        recognizer = self.session.settings.live_recognizers(whisper, self._stream())
        speaker = self.session.user.name
        path = LivePath(speaker, self, self.session)
        microphone = Microphone(speaker, path.take, lambda chunk_ms, rtf: None, recognizer)
        self.microphone = microphone
        return microphone

    async def _switch_language(self) -> None:
        """Audio appended from now on is read in the session's new language, as
        ``session.updated`` says: what the recognizer holds (and the old format's resampler)
        is decoded in the old language first, its words going to the item as before; the next
        audio starts a recognizer for the new language (and format)."""
        assert self.microphone is not None
        if self.incoming is not None:
            self._hear_what_is_left(self.incoming)
        old, self.microphone, self.incoming = self.microphone, None, None
        await old.close()

    def _switch_format(self) -> None:
        """Audio appended from now on is read in the session's new format (the same item and
        recognizer go on), as ``session.updated`` says; what the old format's resampler still
        held goes to the recognizer first."""
        assert self.incoming is not None
        old, self.incoming = self.incoming, IncomingAudio(*FORMATS[self.format])
        self._hear_what_is_left(old)

    def _hear_what_is_left(self, incoming: IncomingAudio) -> None:
        """What ``incoming``'s resampler still holds, to the recognizer."""
        (tail,) = incoming.finish()
        if tail:
            self._hear(tail)

    def _append(self, audio: str | None) -> None:
        try:
            data = base64.b64decode(audio, validate=True) if audio is not None else None
        except (binascii.Error, ValueError):
            data = None
        if data is None:
            self.error("input_audio_buffer.append needs audio: base64 PCM", code="invalid_audio")
            return
        if self.microphone is None:
            self._start()
        assert self.incoming is not None
        try:
            (pcm,) = self.incoming.feed(data)
        except AudioError as e:
            self.error(str(e), code="invalid_audio")
            return
        self._hear(pcm)

    def _hear(self, pcm: bytes) -> None:
        """16 kHz PCM16 to the recognizer, charged against the token's audio limit."""
        assert self.microphone is not None
        self.session.charge_audio(len(pcm))
        self.received += len(pcm) // 2
        self.microphone.add(pcm)
        self._after_pause(self.microphone.handed_on / SAMPLE_RATE)

    def _pause_s(self) -> float | None:
        """The silence that ends an item with server VAD, as the client asked (None: the
        client commits)."""
        if self.turn_detection is None:
            return None
        asked = self.turn_detection.get("silence_duration_ms", DECODE_SILENCE_MS)
        asked_ms = float(asked) if isinstance(asked, int | float) else DECODE_SILENCE_MS
        return max(SHORTEST_PAUSE_MS, asked_ms) / 1000

    def _after_pause(self, next_s: float) -> None:
        """Speech (or decoded silence) resumes at ``next_s``: the item ends first when its
        last word is followed by the client's silence. The recognizer cuts its utterances
        only after 800 ms (sooner, it decodes other words), so a shorter ``silence_duration_ms``
        (LiveKit's 350) ends items here, between committed words, instead."""
        item, pause = self.item, self._pause_s()
        if pause is None or not item.words or item.last_end is None or self.pending:
            return
        if next_s - item.last_end >= pause:
            self._stopped(item, item.last_end)

    def _stopped(self, item: _Item, end_s: float) -> None:
        self._send("input_audio_buffer.speech_stopped", item_id=item.id,
                   audio_end_ms=round(end_s * 1000))  # fmt: skip
        self._complete(item)

    async def decoded(self, d: Decoded) -> None:
        if d.kind is not EventKind.FINAL:
            if d.words:
                self.pending = ()  # the item may end before the words that come next
                self._after_pause(d.words[0].start)
            self.pending = d.words or ((Word(d.start_s, d.end_s, d.text),) if d.text else ())
            self._announce(d.start_s if d.text else None)
            return
        self.pending = ()
        words = d.words or ((Word(d.start_s, d.end_s, d.text),) if d.text else ())
        said: list[str] = []  # of the item now, not sent yet: one delta per item per step
        pause = self._pause_s()
        for n, word in enumerate(words):
            self._after_pause(word.start)
            item = self.item
            self._announce(word.start)
            item.words += word.text.split()
            item.last_end = word.end
            said += word.text.split()
            last = n + 1 == len(words)
            if last or (pause is not None and words[n + 1].start - word.end >= pause):
                self._delta(item, said)  # before the item ends at the next word
                said = []
        item = self.item
        if d.endpoint and self.turn_detection is not None and item.started:
            self._stopped(item, d.end_s)

    def _delta(self, item: _Item, said: list[str]) -> None:
        if not said:
            return
        first = len(item.words) == len(said)
        delta = ("" if first else " ") + " ".join(said)
        self._send("conversation.item.input_audio_transcription.delta", item_id=item.id,
                   content_index=0, delta=delta)  # fmt: skip

    def _announce(self, start_s: float | None) -> None:
        item = self.item
        if start_s is not None and not item.started:
            item.started = True
            self._send("input_audio_buffer.speech_started", item_id=item.id,
                       audio_start_ms=round(start_s * 1000))  # fmt: skip

    def _complete(self, item: _Item) -> None:
        self._send("input_audio_buffer.committed", item_id=item.id, previous_item_id=item.previous)
        seconds = (self.received - item.start) / SAMPLE_RATE
        usage = {"type": "duration", "seconds": round(seconds, 3)}
        self._send("conversation.item.input_audio_transcription.completed", item_id=item.id,
                   content_index=0, transcript=" ".join(item.words), usage=usage)  # fmt: skip
        self.item = _Item(item.id, self.received)

    async def _commit(self) -> None:
        """The client ends the item: decode what it sent, complete its transcript (empty when
        nothing was said, or server VAD completed it already)."""
        if self.microphone is not None:
            await self.microphone.flush()
        self._complete(self.item)
