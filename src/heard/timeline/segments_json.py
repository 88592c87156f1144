"""The segment JSON of docs/formats.md, read and validated at the edge.

``{"participants": {"alice": {"offset_s": 0.0, "segments": [{"start": 0.0,
"end": 10.0, "text": "..."}]}}}``
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from heard.errors import InputError
from heard.speech import Segment
from heard.timeline.phrases import Track

__all__ = ["MAX_SEGMENT_JSON_BYTES", "parse_segments", "read_segments"]

MAX_SEGMENT_JSON_BYTES = 256 * 1024 * 1024


class _SegmentModel(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)
    start: float = Field(ge=0, allow_inf_nan=False)
    end: float = Field(ge=0, allow_inf_nan=False)
    text: str

    @model_validator(mode="after")
    def _ordered(self) -> _SegmentModel:
        if self.end < self.start:
            raise ValueError(f"end {self.end} is before start {self.start}")
        return self


class _TrackModel(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)
    offset_s: float = Field(default=0.0, ge=0, allow_inf_nan=False)
    segments: list[_SegmentModel]


class _DocumentModel(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)
    participants: dict[str, _TrackModel]


def _describe(error: ValidationError) -> str:
    parts = []
    for e in error.errors(include_url=False):
        where = "/".join(str(p) for p in e["loc"])
        parts.append(f"{where}: {e['msg']}" if where else e["msg"])
    return "; ".join(parts[:5]) + (f" (and {len(parts) - 5} more)" if len(parts) > 5 else "")


def parse_segments(text: str, source: str = "<segments>") -> dict[str, Track]:
    """Parse segment JSON; raise ``InputError`` naming ``source`` and what was wrong."""
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(
            f"{source}: malformed JSON ({e.msg} at line {e.lineno} column {e.colno})"
        ) from None
    except RecursionError:
        raise InputError(f"{source}: JSON nested too deeply") from None
    try:
        doc = _DocumentModel.model_validate(raw)
    except ValidationError as e:
        raise InputError(f"{source}: not segment JSON: {_describe(e)}") from None
    return {
        name: Track([Segment(s.start, s.end, s.text) for s in track.segments], track.offset_s)
        for name, track in doc.participants.items()
    }


def read_segments(path: str | Path) -> dict[str, Track]:
    """Read segment JSON from a file, or from standard input when ``path`` is ``-``."""
    if str(path) == "-":
        return parse_segments(sys.stdin.read(MAX_SEGMENT_JSON_BYTES + 1), "<stdin>")
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{p}: no such file" if not p.exists() else f"{p}: not a regular file")
    if p.stat().st_size > MAX_SEGMENT_JSON_BYTES:
        raise InputError(f"{p}: larger than {MAX_SEGMENT_JSON_BYTES // (1024 * 1024)} MiB")
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"{p}: not UTF-8 text (bad byte at {e.start})") from None
    return parse_segments(text, str(p))
