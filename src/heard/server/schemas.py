"""What the REST API takes and gives: one pydantic model per body, request or reply.

Requests are strict: unknown fields, NaN and infinities, NUL characters and lone surrogates
are refused with a 422 naming the field, before anything is stored.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field

from heard.storable import participant_problem, readable, storable
from heard.utterance import Timestamp, UtteranceIn

__all__ = [
    "EXPORTED_JSON",
    "MEDIA_TYPES",
    "SLUG",
    "DeepgramErrorOut",
    "ErrorOut",
    "EvidenceIn",
    "InvalidOut",
    "MeetingIn",
    "MeetingOut",
    "Name",
    "OpenAIErrorOut",
    "PageIn",
    "PageOut",
    "ParticipantIn",
    "ParticipantName",
    "PhraseOut",
    "RecallIn",
    "RecalledOut",
    "RunOut",
    "StoredOut",
    "Text",
    "TrackOut",
    "UserOut",
    "UtteranceIn",
]


class _Strict(BaseModel):
    # NaN and Infinity (and 1e999, which JSON parsing makes infinite) are refused at once
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


Text = Annotated[str, AfterValidator(storable)]
"""A string heard stores or writes: every string field of a request is one."""
Name = Annotated[str, AfterValidator(readable)]
"""A name or a title, shown and written out as it reads: no control characters."""


def _participant(value: str) -> str:
    if problem := participant_problem(value):
        raise ValueError(problem)
    return value


ParticipantName = Annotated[Name, AfterValidator(_participant)]


def _not_bool(value: object) -> object:
    if isinstance(value, bool):
        raise ValueError("expected a number, not true or false")
    return value


def _language(value: str | None) -> str | None:
    from heard.asr.models import check_language
    from heard.errors import ModelError

    try:
        return check_language(value)
    except ModelError:
        raise ValueError(
            "not a language Whisper knows: give an ISO 639-1 code such as en, es, de, ru, or "
            "auto to detect it"
        ) from None


Language = Annotated[Text | None, AfterValidator(_language)]
"""An ISO 639-1 code Whisper knows (``es``); None or ``auto``: detected."""


def _whole_or_auto(value: object) -> object:
    if isinstance(value, bool | float):
        raise ValueError("expected auto or a whole number of speakers")
    return value


def _speakers(value: str | int | None) -> str | None:
    if value is None:
        return None
    from heard.diarize import check_speakers
    from heard.errors import InputError

    try:
        return check_speakers(value)
    except InputError as e:
        raise ValueError(str(e).removeprefix("--speakers ")) from None


class ParticipantIn(_Strict):
    name: ParticipantName = Field(min_length=1, max_length=200)
    offset_s: Annotated[float, BeforeValidator(_not_bool)] = Field(
        default=0.0,
        ge=0,
        le=86_400,
        strict=True,  # a number, not "5"
    )
    language: Language = Field(default=None, max_length=16)
    """The language the participant speaks; unset: detected by a multilingual model."""
    speakers: Annotated[
        str | int | None, BeforeValidator(_whole_or_auto), AfterValidator(_speakers)
    ] = None
    """Set for a recording of several people (a call, a room): ``auto`` or how many speak;
    its speakers become the meeting's participants. Unset: this participant's own track."""
    names: list[ParticipantName] = Field(default=[], max_length=16)
    """Names for those speakers, in the order they are first heard."""


class MeetingIn(_Strict):
    title: Name = Field(min_length=1, max_length=500)
    participants: list[ParticipantIn] = Field(min_length=1, max_length=64)
    started_at: Timestamp | None = None


class TrackOut(BaseModel):
    participant: str
    status: str
    attempts: int
    offset_s: float
    last_error: str | None
    language: str | None = None
    """Of the transcript, given or detected, once done."""
    language_probability: float | None = None
    """Of the detection; null when the language was given."""
    language_asked: str | None = None
    speakers: str | None = None
    """``auto`` or a number for a recording of several people; null for one's own track."""
    speakers_found: int | None = None
    """How many speakers its diarization found, once made."""
    warnings: list[str] = []
    """What its transcription warned of (speech an English-only model could not make out as
    English), once done."""


class MeetingOut(BaseModel):
    id: uuid.UUID
    title: str
    started_at: datetime
    status: str
    participants: list[str]
    phrases: int
    tracks: list[TrackOut] = []


class PhraseOut(BaseModel):
    participant: str
    start: float
    end: float
    text: str
    language: str | None = None


class RenameIn(_Strict):
    name: ParticipantName = Field(min_length=1, max_length=200)
    """The participant's new name: in its phrases, every export and every rebuild."""


class PlaybackOut(BaseModel):
    participant: str
    """The track's participant (a recording of several people: its own name)."""
    offset_s: float
    """Where the track starts on the meeting's timeline: a phrase at ``start`` s is at
    ``start - offset_s`` s of this audio."""
    voices: list[str]
    """The participants whose phrases are heard in this track."""
    url: str
    """The track's audio (range requests), a link an audio element can follow: it carries
    a signature good for six hours in place of the bearer token."""


class TrackProgressOut(BaseModel):
    participant: str
    status: str
    fraction: float
    """0-1: 1 once done or failed; within a track only while this server transcribes it."""
    error: str | None = None


class ProgressOut(BaseModel):
    """One ``progress`` event of ``GET /v1/meetings/{id}/events``."""

    status: str
    fraction: float
    """0-1 over all tracks; 1 once the phrases are built."""
    finished: bool
    phrases: int
    tracks: list[TrackProgressOut]


class FoundOut(BaseModel):
    meeting_id: uuid.UUID
    title: str
    started_at: datetime
    position: int
    """The phrase's index in ``GET /v1/meetings/{id}/phrases``."""
    participant: str
    start: float
    end: float
    text: str
    score: float


class RunOut(BaseModel):
    id: uuid.UUID
    started: bool
    queued_tasks: int = 0
    """With workers: the tasks sent (one per unfinished track, or the timeline build)."""


class EvidenceIn(_Strict):
    utterances: list[UtteranceIn] = Field(min_length=1, max_length=10_000)


class StoredOut(BaseModel):
    stored: int


class RecallIn(_Strict):
    query: Text = Field(min_length=1, max_length=2000)
    k: Annotated[int, BeforeValidator(_not_bool)] = Field(default=10, ge=1, le=100, strict=True)


class RecalledOut(BaseModel):
    id: str
    kind: Literal["evidence", "page"]
    score: float
    speaker: str
    text: str


SLUG = r"^[a-z0-9][a-z0-9-]{0,99}$"


class PageIn(_Strict):
    summary: Text = Field(default="", max_length=240)
    aliases: list[Annotated[Text, Field(max_length=200)]] = Field(default=[], max_length=50)
    edges: list[Annotated[str, Field(pattern=SLUG)]] = Field(default=[], max_length=100)
    body: Text = Field(default="", max_length=100_000)


class PageOut(BaseModel):
    slug: str
    summary: str
    aliases: list[str]
    edges: list[str]
    body: str


class UserOut(BaseModel):
    id: uuid.UUID
    name: str


class ErrorOut(BaseModel):
    detail: str


class OpenAIError(BaseModel):
    message: str
    type: str
    param: str | None
    code: str | None


class OpenAIErrorOut(BaseModel):
    """An error on the OpenAI-compatible routes, in OpenAI's shape."""

    error: OpenAIError


class DeepgramErrorOut(BaseModel):
    """An error on Deepgram's pre-recorded route, in Deepgram's shape."""

    err_code: str
    err_msg: str
    request_id: str


class InvalidOut(BaseModel):
    """Request validation lists its errors; heard's own input errors are one sentence."""

    detail: str | list[dict[str, Any]]


MEDIA_TYPES = {
    "json": "application/json",
    "srt": "application/x-subrip",
    "vtt": "text/vtt",
    "md": "text/markdown",
    "txt": "text/plain",
}

EXPORTED_JSON = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["participant", "start", "end", "text"],
        "properties": {
            "participant": {"type": "string"},
            "start": {"type": "number", "description": "Seconds from the meeting's start."},
            "end": {"type": "number"},
            "text": {"type": "string"},
            "start_at": {"type": "string", "format": "date-time"},
            "end_at": {"type": "string", "format": "date-time"},
            "language": {"type": "string"},
            "words": {
                "type": "array",
                "description": "Its words, when the recognizer timed them.",
                "items": {
                    "type": "object",
                    "required": ["word", "start", "end", "probability", "speaker"],
                    "properties": {
                        "word": {"type": "string"},
                        "start": {"type": "number", "description": "Seconds from the start."},
                        "end": {"type": "number"},
                        "probability": {"type": "number"},
                        "speaker": {"type": "string", "description": "The participant."},
                    },
                },
            },
        },
    },
}
"""What ``format=json`` returns: the timeline's phrases (``heard.timeline.formats``)."""
