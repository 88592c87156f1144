"""Transcript events: the JSONL wire format of docs/formats.md and its reader.

One JSON object per line: ``{"t_ms": 1200, "type": "partial", "text": "what
should we", "speaker": "alice"}``. ``t_ms`` is milliseconds from the start of the
stream and never decreases; ``speaker`` defaults to ``"speaker"``; a ``final``
ends the speaker's current turn. Unknown extra keys are ignored.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, BinaryIO, Literal

from heard.errors import EventLogError, RepeatedKeyError
from heard.storable import unique_keys

if TYPE_CHECKING:
    from pydantic import BaseModel, ValidationError

__all__ = [
    "DEFAULT_SPEAKER",
    "MAX_LINE_CHARS",
    "EventKind",
    "TranscriptEvent",
    "iter_events",
    "read_events",
]

DEFAULT_SPEAKER = "speaker"
MAX_LINE_CHARS = 1 << 20
"""A line longer than this (1 MiB) is refused rather than parsed."""


class EventKind(StrEnum):
    PARTIAL = "partial"
    FINAL = "final"


@dataclass(frozen=True, slots=True)
class TranscriptEvent:
    t_ms: int
    kind: EventKind
    text: str
    speaker: str = DEFAULT_SPEAKER

    def to_json(self) -> str:
        return json.dumps(
            {"t_ms": self.t_ms, "type": str(self.kind), "text": self.text, "speaker": self.speaker},
            ensure_ascii=False,
        )


@cache
def _event_model() -> type[BaseModel]:
    """The validating model of one event, built on first use: pydantic costs a CLI's start-up."""
    from pydantic import AfterValidator, BaseModel, ConfigDict, Field

    from heard.storable import MAX_NAME_CHARS, readable, storable
    from heard.utterance import MAX_UTTERANCE_CHARS

    Text = Annotated[str, AfterValidator(storable)]  # a final becomes evidence: storable text

    class EventModel(BaseModel):
        model_config = ConfigDict(extra="ignore", strict=True, frozen=True)

        t_ms: int = Field(ge=0)
        type: Literal["partial", "final"]
        text: Text = Field(max_length=MAX_UTTERANCE_CHARS)  # as an utterance is (a final is one)
        speaker: Annotated[str, AfterValidator(readable)] = Field(
            default=DEFAULT_SPEAKER, min_length=1, max_length=MAX_NAME_CHARS
        )

    return EventModel


def _describe(error: ValidationError) -> str:
    parts = []
    for e in error.errors():
        field = ".".join(str(p) for p in e["loc"]) or "event"
        if e["type"] == "missing":
            parts.append(f"missing field {field!r}")
        elif isinstance(e.get("input"), str):
            # never the text itself: this message is logged, and the text is the user's
            parts.append(f"field {field!r}: {e['msg']} (a string of {len(e['input'])} characters)")
        else:
            parts.append(f"field {field!r}: {e['msg']} (got {e.get('input')!r})")
    return "; ".join(parts)


def parse_event(raw: str, path: Path | str = "<events>", line: int = 1) -> TranscriptEvent:
    """Parse one JSONL line; raise ``EventLogError`` naming ``path`` and ``line``."""
    if len(raw) > MAX_LINE_CHARS:
        raise EventLogError(path, line, f"line longer than {MAX_LINE_CHARS} characters")
    try:
        obj = json.loads(raw, object_pairs_hook=unique_keys)
    except json.JSONDecodeError as e:
        raise EventLogError(path, line, f"malformed JSON ({e.msg} at column {e.colno})") from None
    except RepeatedKeyError as e:
        raise EventLogError(path, line, f"the event {e}") from None
    except RecursionError:
        raise EventLogError(path, line, "JSON nested too deeply") from None
    if not isinstance(obj, dict):
        raise EventLogError(path, line, f"expected a JSON object, got {type(obj).__name__}")
    if "type" in obj and obj["type"] not in ("partial", "final"):
        raise EventLogError(
            path, line, f"unknown event type {obj['type']!r}; expected 'partial' or 'final'"
        )
    from pydantic import ValidationError

    try:
        model: Any = _event_model().model_validate(obj)
    except ValidationError as e:
        raise EventLogError(path, line, _describe(e)) from None
    return TranscriptEvent(model.t_ms, EventKind(model.type), model.text, model.speaker)


def iter_events(lines: Iterable[str], path: Path | str = "<events>") -> Iterator[TranscriptEvent]:
    """Parse JSONL lines, checking that ``t_ms`` never decreases; blank lines are skipped."""
    last_t_ms = -1
    seen = False
    for number, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        event = parse_event(raw, path, number)
        if event.t_ms < last_t_ms:
            raise EventLogError(path, number, f"t_ms decreased from {last_t_ms} to {event.t_ms}")
        last_t_ms = event.t_ms
        seen = True
        yield event
    if not seen:
        raise EventLogError(path, None, "no events (the file is empty)")


def _utf8_lines(f: BinaryIO, path: Path) -> Iterator[str]:
    limit = MAX_LINE_CHARS * 4  # UTF-8 takes at most 4 bytes a character
    for number, raw in enumerate(iter(lambda: f.readline(limit + 1), b""), 1):
        if len(raw) > limit:
            raise EventLogError(path, number, f"line longer than {MAX_LINE_CHARS} characters")
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise EventLogError(path, number, f"not UTF-8 text (bad byte at {e.start})") from None


def read_events(path: Path | str) -> list[TranscriptEvent]:
    """Read and validate a whole event log; nothing is returned unless all of it is valid."""
    p = Path(path)
    if not p.exists():
        raise EventLogError(p, None, "no such file")
    if not p.is_file():
        raise EventLogError(p, None, "not a regular file")
    try:
        with p.open("rb") as f:
            return list(iter_events(_utf8_lines(f, p), p))
    except OSError as e:
        raise EventLogError(p, None, f"cannot read ({e.strerror})") from None
