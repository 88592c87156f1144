"""``/v3/ws``: AssemblyAI's Universal-Streaming (v3), answered by heard's recognizer.

A client written for AssemblyAI (its SDK's ``StreamingClient`` with ``api_host`` set to
``ws://HOST:8000``, Pipecat's ``AssemblyAISTTService``) opens
``ws://HOST:8000/v3/ws?sample_rate=16000`` with a heard token as its key: the raw
``Authorization`` header (what the SDK sends), ``Bearer``, or ``?token=`` (AssemblyAI's
temporary tokens). Its query parameters:

* ``sample_rate`` (default 16000) and ``encoding``: ``pcm_s16le`` (default) or ``pcm_mulaw``;
* ``format_turns``: each ended turn is sent twice, as AssemblyAI does, first as heard's words
  in lower case without punctuation, then formatted (Whisper's own casing and punctuation);
* ``max_turn_silence`` / ``min_turn_silence`` (ms): the silence that ends a turn (never under
  the recognizer's 800 ms: cut sooner, it decodes other words, as on ``/v1/listen``);
* ``speech_model``, ``language_code`` (the server's model and language decide),
  ``end_of_turn_confidence_threshold``, ``keyterms_prompt``, ``inactivity_timeout`` and the
  rest of the SDK's: taken and not used; a feature heard
  does not have (``speaker_labels``, ``redact_pii``, ``llm_gateway``, ``webhook_url``...)
  refuses the handshake with a 400 naming it when asked for.

Binary frames are audio. Text frames: ``{"type": "Terminate"}`` (what is left is decoded, the
last turn ended, then ``Termination`` and a normal close), ``ForceEndpoint`` (the turn ends
now), ``KeepAlive`` and ``UpdateConfiguration`` (taken; the turn silence stays the one set at
the handshake). The server answers ``Begin`` first, then a ``Turn`` (``turn_order``,
``transcript`` of the words final so far, ``words`` with ``word_is_final``, ``end_of_turn``)
each time words are committed or the partial changes; each final word is in the transcript
once. Errors: ``{"type": "Error", "error": ...}``.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field

from fastapi import WebSocket
from fastapi.responses import JSONResponse

from heard.asr.audio import SAMPLE_RATE
from heard.asr.incoming import IncomingAudio
from heard.asr.microphone import Microphone
from heard.asr.streaming import StreamOptions, strip_punctuation
from heard.asr.whisper import load_model
from heard.errors import AudioError, InputError, SocketCloseError
from heard.live.path import LiveOutput, LivePath
from heard.server.listen_options import DECODE_SILENCE_MS
from heard.server.session import CLOSE_INVALID, CLOSE_NORMAL, Session
from heard.speech import Word
from heard.transcript.events import EventKind
from heard.transcript.utterances import Decoded

__all__ = ["PATH", "AssemblyAICodec", "offered_key", "refuse"]

PATH = "/v3/ws"
MAX_TURN_SILENCE_MS = 60_000
ENCODINGS = {"pcm_s16le": "linear16", "pcm_mulaw": "mulaw"}
MAX_FRAME_BYTES = 256 * 1024
"""AssemblyAI takes 50 ms to 1 s of audio a frame: a second of 48 kHz PCM16 is 96 KB."""
TAKEN = frozenset({
    "sample_rate", "encoding", "format_turns", "max_turn_silence", "min_turn_silence",
    "min_end_of_turn_silence_when_confident", "speech_model", "language_code",
    "language_codes", "language_detection", "end_of_turn_confidence_threshold",
    "vad_threshold", "keyterms_prompt", "prompt", "agent_context", "inactivity_timeout",
    "filter_profanity", "interruption_delay", "turn_left_pad_ms", "session_heartbeat",
    "continuous_partials", "include_partial_turns", "mode", "domain", "token",
    "acknowledge_silence", "voice_focus", "voice_focus_threshold", "noise_suppression_model",
    "noise_suppression_threshold", "customer_support_audio_capture",
})  # fmt: skip
"""Parameters taken (most change nothing heard does: hints, models, formatting)."""
NOT_HERE = frozenset({"speaker_labels", "redact_pii", "redact_pii_policies", "redact_pii_sub",
                      "llm_gateway", "webhook_url", "webhook_auth_header_name",
                      "webhook_auth_header_value", "max_speakers",
                      "speaker_labels_revision_interval_ms"})  # fmt: skip
"""Features heard does not have live: refused when asked for, taken when off or empty."""


def offered_key(websocket: WebSocket) -> tuple[str, str | None]:
    """The key as AssemblyAI's clients send it: the raw ``Authorization`` header (or with a
    ``Bearer``/``Token`` scheme), else ``?token=``."""
    header = websocket.headers.get("authorization", "").strip()
    scheme, _, rest = header.partition(" ")
    if rest.strip() and scheme.lower() in ("bearer", "token"):
        return rest.strip(), None
    return header or websocket.query_params.get("token", ""), None


async def refuse(websocket: WebSocket, status: int, message: str) -> None:
    """Refuse the handshake with an HTTP status and AssemblyAI's error body."""
    await websocket.send_denial_response(JSONResponse({"error": message}, status_code=status))


@dataclass(frozen=True, slots=True)
class Options:
    sample_rate: int = SAMPLE_RATE
    encoding: str = "linear16"
    format_turns: bool = False
    turn_silence_ms: int = DECODE_SILENCE_MS


def parse_options(params: dict[str, str]) -> Options:
    """A connection's query parameters; an ``InputError`` names the first heard cannot take."""
    for name, value in params.items():
        if name in NOT_HERE:
            if value.strip().lower() not in ("", "false", "0", "null", "none", "[]"):
                raise InputError(f"{name}: heard does not do this live")
        elif name not in TAKEN:
            raise InputError(f"unknown parameter {name[:40]!r}")
    try:
        rate = int(params.get("sample_rate", SAMPLE_RATE))
    except ValueError:
        shown = params["sample_rate"][:20]
        raise InputError(f"sample_rate: a whole number of Hz, not {shown!r}") from None
    encoding = params.get("encoding", "pcm_s16le")
    if encoding not in ENCODINGS:
        raise InputError(f"encoding {encoding[:40]!r}: pcm_s16le or pcm_mulaw")
    silence = DECODE_SILENCE_MS
    for name in ("max_turn_silence", "min_turn_silence"):
        if name in params:
            try:
                asked = int(float(params[name]))
            except (ValueError, OverflowError):
                raise InputError(f"{name}: milliseconds, not {params[name][:20]!r}") from None
            if not 0 <= asked <= MAX_TURN_SILENCE_MS:
                raise InputError(f"{name}: 0 to {MAX_TURN_SILENCE_MS} ms, not {asked}")
            silence = max(silence, asked)
    formatted = params.get("format_turns", "false").strip().lower() in ("true", "1")
    if not 8000 <= rate <= 48_000:
        raise InputError(f"sample_rate: 8000 to 48000 Hz, not {rate}")
    return Options(rate, ENCODINGS[encoding], formatted, silence)


@dataclass
class _Turn:
    order: int = 0
    final: list[Word] = field(default_factory=list)
    partial: list[Word] = field(default_factory=list)

    def words(self) -> list[Word]:
        return [*self.final, *self.partial]


def _words(d: Decoded) -> list[Word]:
    """The step's words with times; a step without them is one stretch split evenly."""
    if d.words:
        return list(d.words)
    texts = d.text.split()
    span = (d.end_s - d.start_s) / max(1, len(texts))
    return [Word(d.start_s + i * span, d.start_s + (i + 1) * span, t) for i, t in enumerate(texts)]


class AssemblyAICodec(LiveOutput):
    """AssemblyAI's v3 streaming protocol on the session loop (the module doc)."""

    protocol: str = "assemblyai"
    max_frame_bytes: int = MAX_FRAME_BYTES
    idle_s: float | None = None

    def __init__(self, session: Session) -> None:
        self.session = session
        self.options = parse_options(session.params)  # an InputError refuses the handshake
        self.whisper = session.settings.whisper
        load_model(self.whisper)  # loaded before the handshake is answered
        self.began = time.monotonic()
        self.received = 0  # samples at 16 kHz
        self.turn = _Turn()
        self.incoming = IncomingAudio(self.options.encoding, self.options.sample_rate)
        self.recognizer = session.settings.live_recognizers(
            self.whisper,
            StreamOptions(end_silence_ms=self.options.turn_silence_ms, word_timestamps=True),
        )
        self._microphone: Microphone | None = None
        self.terminated = False

    @property
    def microphone(self) -> Microphone:
        """Started with the socket (on the event loop, which its decoding runs beside)."""
        if self._microphone is None:
            speaker = self.session.user.name
            path = LivePath(speaker, self, self.session)
            self._microphone = Microphone(speaker, path.take, lambda chunk_ms, rtf: None,
                                          self.recognizer)  # fmt: skip
        return self._microphone

    async def start(self) -> None:
        self.microphone  # noqa: B018 - started now
        expires = int(time.time()) + 3 * 3600
        self.session.send({"type": "Begin", "id": str(uuid.uuid4()), "expires_at": expires})

    async def text(self, raw: str) -> None:
        try:
            message = json.loads(raw)
        except ValueError:
            raise SocketCloseError(CLOSE_INVALID, "a text frame is a JSON message") from None
        kind = message.get("type") if isinstance(message, dict) else None
        if kind == "Terminate":
            await self._terminate()
        elif kind == "ForceEndpoint":
            await self.microphone.flush()
            self._end_turn()
        elif kind in ("KeepAlive", "UpdateConfiguration"):
            return  # nothing to keep alive; the turn silence is set at the handshake
        else:
            self.error(f"{str(kind)[:40]!r} is not a message here: Terminate, ForceEndpoint, "
                       "KeepAlive or UpdateConfiguration")  # fmt: skip

    async def audio(self, data: bytes) -> None:
        if self.terminated:
            return
        try:
            (pcm,) = self.incoming.feed(data)
        except AudioError as e:
            raise SocketCloseError(CLOSE_INVALID, f"audio: {e}") from None
        self.session.charge_audio(len(pcm))
        self.received += len(pcm) // 2
        self.microphone.add(pcm)

    def error(self, detail: str) -> None:
        self.session.send({"type": "Error", "error": detail})

    def on_idle(self) -> SocketCloseError:
        raise AssertionError("the AssemblyAI socket has no idle limit")

    async def close(self) -> None:
        self.incoming.close()
        if self._microphone is not None:
            await self._microphone.close()

    async def _terminate(self) -> None:
        """Decode what is left, end the turn, say how long it was, close normally."""
        if self.terminated:
            return
        self.terminated = True
        (tail,) = self.incoming.finish()
        if tail:
            self.microphone.add(tail)
            self.received += len(tail) // 2
        await self.microphone.close()
        self._end_turn()
        audio_s, session_s = self.received / SAMPLE_RATE, time.monotonic() - self.began
        self.session.send({"type": "Termination", "audio_duration_seconds": round(audio_s),
                           "session_duration_seconds": round(session_s)})  # fmt: skip
        self.session.end(SocketCloseError(CLOSE_NORMAL, ""))

    async def decoded(self, d: Decoded) -> None:
        turn = self.turn
        if d.kind is EventKind.FINAL:
            turn.final += _words(d) if d.text else []
            turn.partial = []
            if d.endpoint:
                self._end_turn()
                return
        else:
            turn.partial = _words(d) if d.text else []
        if turn.final or turn.partial:
            self._send_turn(end_of_turn=False)

    def _end_turn(self) -> None:
        turn = self.turn
        turn.final += turn.partial
        turn.partial = []
        if not turn.final:
            return
        self._send_turn(end_of_turn=True)
        if self.options.format_turns:
            self._send_turn(end_of_turn=True, formatted=True)
        self.turn = _Turn(turn.order + 1)

    def _send_turn(self, *, end_of_turn: bool, formatted: bool = False) -> None:
        turn = self.turn
        said = " ".join(w.text.strip() for w in turn.final)
        transcript = said if formatted else strip_punctuation(said)
        words = [
            {"start": round(w.start * 1000), "end": round(w.end * 1000),
             "confidence": round(w.probability, 4),
             "text": w.text.strip() if formatted else strip_punctuation(w.text),
             "word_is_final": i < len(turn.final)}
            for i, w in enumerate(turn.words())
        ]  # fmt: skip
        self.session.send({
            "type": "Turn", "turn_order": turn.order, "turn_is_formatted": formatted,
            "end_of_turn": end_of_turn, "transcript": transcript,
            "end_of_turn_confidence": 1.0 if end_of_turn else 0.0, "words": words,
        })  # fmt: skip
