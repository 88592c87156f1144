"""What clients send on the live sockets: one pydantic model per frame the codecs take.

heard's own ``{"type": "end"}`` (``/v1/live``; its transcript events are
``heard.transcript.events``'), Deepgram's control messages (``/v1/listen``) and OpenAI
Realtime's client events with the session they configure (``/v1/realtime``). A frame that is
not JSON or names a key twice raises ``InputError``, saying what was expected; so does a
control message Deepgram does not have. A Realtime event heard does not take is ``Malformed``
(OpenAI's clients get an error event for it, and go on). Each codec answers in its own way.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from heard.errors import InputError
from heard.server.listen_options import DECODE_SILENCE_MS
from heard.storable import unique_keys

__all__ = [
    "APPEND",
    "SESSION_UPDATES",
    "AudioInput",
    "BufferEvent",
    "ClientEvent",
    "Control",
    "LiveEnd",
    "Malformed",
    "SessionConfig",
    "TurnDetection",
    "parse_control",
    "parse_event",
    "read_json",
]


def read_json(raw: str, expected: str) -> Any:
    """``raw`` as JSON, no key twice (``InputError``: ``expected``, the frame was not it)."""
    try:
        return json.loads(raw, object_pairs_hook=unique_keys)
    except (ValueError, RecursionError):
        raise InputError(expected) from None


def _type_of(message: Any) -> object:
    return message.get("type") if isinstance(message, dict) else None


class _Frame(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, strict=True)


class LiveEnd(_Frame):
    """heard's ``{"type": "end"}``: flush the audio, answer once all before it is answered."""

    type: Literal["end"]


# -- Deepgram (/v1/listen) -----------------------------------------------------------------


class Control(_Frame):
    """A control message: ``KeepAlive`` holds a quiet stream open, ``Configure`` sets keyterms
    mid-stream (heard's recognizer takes none: answered ``ConfigureFailure``), ``Finalize``
    decodes the audio so far, ``CloseStream`` does and ends the stream."""

    type: Literal["KeepAlive", "Configure", "Finalize", "CloseStream"]


def parse_control(raw: str) -> Control:
    """One of Deepgram's control messages (``InputError`` naming the four)."""
    message = read_json(raw, "not a JSON control message")
    try:
        return Control.model_validate(message)
    except ValidationError:
        kind = _type_of(message)
        shown = str(kind)[:40] if kind is not None else "no type"
        raise InputError(f"{shown}: KeepAlive, Finalize, CloseStream or Configure") from None


# -- OpenAI Realtime (/v1/realtime) --------------------------------------------------------

SESSION_UPDATES = ("session.update", "transcription_session.update")
"""The GA event and the beta's."""
APPEND = "input_audio_buffer.append"


class TurnDetection(_Frame):
    """Server VAD's settings; those heard does not read are kept, and said back."""

    model_config = ConfigDict(extra="allow", frozen=True, strict=True)

    silence_duration_ms: int | float = Field(DECODE_SILENCE_MS, ge=0, le=60_000)


class AudioFormat(_Frame):
    type: str | None = None


class Transcription(_Frame):
    model: str | None = None
    language: str | None = None


class AudioInput(_Frame):
    format: AudioFormat | str | None = None
    transcription: Transcription | None = None
    turn_detection: TurnDetection | None = None
    """Absent: as it was; null: no server VAD."""


class _Audio(_Frame):
    input: AudioInput | None = None


class SessionConfig(_Frame):
    """A Realtime transcription session as a client asks for it: the GA shape
    (``audio.input``) or the beta's (``input_audio_format``, ``input_audio_transcription``,
    ``turn_detection``)."""

    audio: _Audio | None = None
    input_audio_format: str | None = None
    input_audio_transcription: Transcription | None = None
    turn_detection: TurnDetection | None = None

    @property
    def input(self) -> AudioInput:
        return (self.audio.input if self.audio is not None else None) or AudioInput()

    @property
    def format(self) -> str | None:
        """The audio format's name, if one was asked for."""
        given = self.input.format
        name = given.type if isinstance(given, AudioFormat) else given
        return name or self.input_audio_format

    @property
    def transcription(self) -> Transcription:
        return self.input.transcription or self.input_audio_transcription or Transcription()

    def turns(self) -> tuple[bool, TurnDetection | None]:
        """Whether turn detection was asked for at all, and what (None: off)."""
        if "turn_detection" in self.input.model_fields_set:
            return True, self.input.turn_detection
        if "turn_detection" in self.model_fields_set:
            return True, self.turn_detection
        return False, None


class SessionUpdate(_Frame):
    type: Literal["session.update", "transcription_session.update"]
    session: SessionConfig | None = None


class Append(_Frame):
    type: Literal["input_audio_buffer.append"]
    audio: str
    """Base64 audio in the session's format."""


class BufferEvent(_Frame):
    """The client ends the item (``commit``), or drops what was not transcribed (``clear``)."""

    type: Literal["input_audio_buffer.commit", "input_audio_buffer.clear"]


ClientEvent = Annotated[SessionUpdate | Append | BufferEvent, Field(discriminator="type")]
_EVENTS: TypeAdapter[ClientEvent] = TypeAdapter(ClientEvent)


@dataclass(frozen=True, slots=True)
class Malformed:
    """A Realtime event heard does not take: another type, or one of its own that does not
    validate (a session that is not one, an append without base64 text)."""

    kind: object
    """Its ``type``, if it had one."""


def parse_event(raw: str) -> ClientEvent | Malformed:
    """One of the Realtime client events heard takes, or what it was meant to be
    (``InputError``: not JSON)."""
    message = read_json(raw, "not a JSON event")
    try:
        return _EVENTS.validate_python(message)
    except ValidationError:
        return Malformed(_type_of(message))
