"""What the live socket (``/v1/live``) sends: one pydantic model per message type.

Every message is a JSON object whose ``type`` says which of these it is; the module
docstring of ``heard.server.live`` tells when each is sent.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

__all__ = [
    "Context",
    "Degraded",
    "End",
    "Error",
    "Final",
    "Heard",
    "Hypothesis",
    "LiveMessage",
    "Release",
    "Translation",
]


class Hypothesis(BaseModel):
    """The speaker's transcript after an event: the stable prefix and the unstable rest."""

    type: Literal["hypothesis"] = "hypothesis"
    speaker: str
    turn: str
    stable: str
    unstable: str
    t_ms: int


class Release(BaseModel):
    """Caption words released at the chosen cadence: put ``text`` at ``position`` of the
    speaker's caption in place of ``replaces`` words."""

    type: Literal["release"] = "release"
    speaker: str
    text: str
    reason: str
    t_ms: int
    utterance: int
    position: int
    words: int
    replaces: int


class RecalledItem(BaseModel):
    id: str
    score: float
    speaker: str
    text: str


class Context(BaseModel):
    """The memory prepared for the reply to one turn."""

    type: Literal["context"] = "context"
    turn: str
    speaker: str
    query: str
    final: str
    source: str
    pages: list[str]
    evidence: list[RecalledItem]
    ready_after_final_ms: float
    retrievals: int
    wasted: int
    error: str | None = None


class Final(BaseModel):
    """A final, stored as evidence: a recall made after this message finds it."""

    type: Literal["final"] = "final"
    speaker: str
    turn: str
    text: str


class Error(BaseModel):
    """Something the client sent could not be done: a final not stored, a rate exceeded."""

    type: Literal["error"] = "error"
    detail: str
    turn: str | None = None
    speaker: str | None = None


class Heard(BaseModel):
    """The answer to an audio frame: how much audio, in ms, this connection has received."""

    type: Literal["audio"] = "audio"
    received_ms: int


class End(BaseModel):
    """The answer to the client's ``{"type": "end"}``."""

    type: Literal["end"] = "end"


class Degraded(BaseModel):
    """Decoding fell behind the audio: the recognizer's steps are now ``chunk_ms`` long."""

    type: Literal["degraded"] = "degraded"
    chunk_ms: int
    rtf: float


class Translation(BaseModel):
    """A release unit in the target language (``translator`` says which, or the identity)."""

    type: Literal["translation"] = "translation"
    speaker: str
    text: str
    translation: str | None
    """None when every attempt failed (see ``error``)."""
    target: str
    translator: str
    error: str | None = None


LiveMessage = Hypothesis | Release | Context | Final | Error | Heard | End | Degraded | Translation
