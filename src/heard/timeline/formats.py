"""Transcript formats: JSON, SubRip, WebVTT, Markdown and plain text.

Every format names the speaker on every cue or line (WebVTT with a ``<v Name>``
voice span). Input is a sequence of ``TimedPhrase``; rendering is pure.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from heard.registry import Registry

__all__ = ["FORMATS", "TimedPhrase", "TranscriptDoc", "render"]


@dataclass(frozen=True, slots=True)
class TimedPhrase:
    """A phrase of a meeting's transcript, as stored and as written out."""

    participant: str
    start_s: float
    """Seconds from the meeting start."""
    end_s: float
    text: str
    start_at: datetime | None = None
    """Wall-clock time, when the meeting's start is known (stored meetings)."""
    end_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class TranscriptDoc:
    phrases: Sequence[TimedPhrase]
    title: str = ""
    started_at: datetime | None = None
    meeting_id: str | None = None


def _clock(seconds: float, sep: str) -> str:
    ms = max(0, round(seconds * 1000))
    h, rest = divmod(ms, 3_600_000)
    m, rest = divmod(rest, 60_000)
    s, ms = divmod(rest, 1000)
    return f"{h:02d}:{m:02d}:{s:02d}{sep}{ms:03d}"


def _short(seconds: float) -> str:
    return _clock(seconds, ".")[:8]


def render_json(doc: TranscriptDoc) -> str:
    out = []
    for p in doc.phrases:
        item: dict[str, object] = {"participant": p.participant, "start": round(p.start_s, 3),
                                   "end": round(p.end_s, 3), "text": p.text}  # fmt: skip
        if p.start_at is not None and p.end_at is not None:
            item["start_at"] = p.start_at.isoformat()
            item["end_at"] = p.end_at.isoformat()
        out.append(item)
    return json.dumps(out, ensure_ascii=False, indent=1) + "\n"


def render_srt(doc: TranscriptDoc) -> str:
    cues = [
        f"{i}\n{_clock(p.start_s, ',')} --> {_clock(p.end_s, ',')}\n{p.participant}: {p.text}\n"
        for i, p in enumerate(doc.phrases, 1)
    ]
    return "\n".join(cues)


def _vtt_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def render_vtt(doc: TranscriptDoc) -> str:
    header = "WEBVTT" + (f" - {doc.title}" if doc.title else "") + "\n"
    cues = [
        f"{_clock(p.start_s, '.')} --> {_clock(p.end_s, '.')}\n"
        f"<v {_vtt_escape(p.participant)}>{_vtt_escape(p.text)}\n"
        for p in doc.phrases
    ]
    return "\n".join([header, *cues])


def render_md(doc: TranscriptDoc) -> str:
    lines = [f"# {doc.title or 'Transcript'}", ""]
    if doc.started_at is not None:
        lines += [f"*{doc.started_at.isoformat(timespec='seconds')}*", ""]
    for p in doc.phrases:
        lines.append(f"**{p.participant}** `{_short(p.start_s)}` {p.text}  ")
    return "\n".join(lines).rstrip() + "\n"


def render_txt(doc: TranscriptDoc) -> str:
    return "".join(f"[{_short(p.start_s)}] {p.participant}: {p.text}\n" for p in doc.phrases)


FORMATS: Registry[Callable[[TranscriptDoc], str]] = Registry(
    "format",
    {"json": render_json, "srt": render_srt, "vtt": render_vtt, "md": render_md, "txt": render_txt},
)


def render(doc: TranscriptDoc, fmt: str) -> str:
    """Render ``doc`` in format ``fmt`` (one of ``FORMATS``)."""
    return FORMATS[fmt](doc)
