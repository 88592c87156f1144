"""Transcript formats: JSON, SubRip, WebVTT, Markdown and plain text.

Every format names the speaker on every cue or line (WebVTT with a ``<v Name>``
voice span), unless the phrase has none (SubRip and WebVTT then hold the text alone, as a
recognizer's subtitles do). Input is a sequence of ``TimedPhrase``; rendering is pure.

Where the tracks' languages are known, the formats carry them: JSON on every phrase; WebVTT
in a ``Language:`` header (one language) or a ``<lang>`` span on every cue (several), and a
``NOTE`` naming each participant's language and how it was found; SubRip, which has no header,
beside the speaker's name when a meeting has more than one language (one file, one language
otherwise: players take it from the file name, ``meeting.es.srt``); Markdown under the title.
A track's warnings (an English-only model on other speech) go where the languages do, in
WebVTT and Markdown; the other formats have no place for them (the CLI and the API say them).

What a format's syntax gives meaning to never comes from a name, a title or a phrase: every
such string is written on one line (line breaks and other control characters become one
space), ``-->`` (a cue's timing arrow) is broken in SubRip, WebVTT escapes ``& < >`` (so no
arrow, tag or ``NOTE`` can be made), and Markdown escapes its emphasis, code and link marks.
JSON keeps every string as it is: its escaping is JSON's own.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from heard.registry import Registry
from heard.speech import Word
from heard.storable import BIDI_CONTROLS

__all__ = ["FORMATS", "SpokenLanguage", "TimedPhrase", "TranscriptDoc", "render"]


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
    language: str | None = None
    """The language of the speaker's track, when known."""
    words: tuple[Word, ...] = ()
    """Its words, seconds from the meeting start, when the recognizer timed them."""


@dataclass(frozen=True, slots=True)
class SpokenLanguage:
    code: str
    probability: float | None = None
    """Of the detection; None when the language was given."""

    def __str__(self) -> str:
        how = "given" if self.probability is None else f"detected, {self.probability:.2f}"
        return f"{self.code} ({how})"


@dataclass(frozen=True, slots=True)
class TranscriptDoc:
    phrases: Sequence[TimedPhrase]
    title: str = ""
    started_at: datetime | None = None
    meeting_id: str | None = None
    languages: Mapping[str, SpokenLanguage] = field(default_factory=dict)
    """Each participant's language, when known."""
    warnings: Mapping[str, Sequence[str]] = field(default_factory=dict)
    """What each track's transcription warned of, by its participant (WebVTT writes them in
    a ``NOTE``, Markdown under the title)."""

    def warning_lines(self) -> list[str]:
        return [f"Warning, {name}: {w}" for name, said in sorted(self.warnings.items())
                for w in said]  # fmt: skip

    @property
    def language_codes(self) -> set[str]:
        return {language.code for language in self.languages.values()}

    def languages_line(self) -> str:
        return "Languages: " + "; ".join(
            f"{name} {language}" for name, language in sorted(self.languages.items())
        )


def _breaks(c: str) -> bool:
    return unicodedata.category(c) in ("Cc", "Zl", "Zp") or c in BIDI_CONTROLS


def _line(text: str) -> str:
    """``text`` on one line: runs of whitespace and control characters become one space."""
    if not text.isprintable():
        text = "".join(" " if _breaks(c) else c for c in text)
    return " ".join(text.split())


_ARROW = re.compile(r"-{2,}>")


def _srt(text: str) -> str:
    """One line of a SubRip cue: no arrow that a player could take for a timing line."""
    return _ARROW.sub("->", _line(text))


_MD_MARKS = re.compile(r"([\\`*_\[\]<>|~])")


def _md(text: str) -> str:
    """Markdown text that reads as written: its emphasis, code, link and HTML marks escaped."""
    return _MD_MARKS.sub(r"\\\1", _line(text))


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
        if p.language is not None:
            item["language"] = p.language
        if p.words:
            item["words"] = [
                {"word": w.text.strip(), "start": round(w.start, 3), "end": round(w.end, 3),
                 "probability": round(w.probability, 4), "speaker": p.participant}
                for w in p.words
            ]  # fmt: skip
        out.append(item)
    return json.dumps(out, ensure_ascii=False, indent=1) + "\n"


def render_srt(doc: TranscriptDoc) -> str:
    several = len(doc.language_codes) > 1

    def speaker(p: TimedPhrase) -> str:
        name = _srt(p.participant)
        return f"{name} [{p.language}]" if several and p.language else name

    def line(p: TimedPhrase) -> str:
        return f"{speaker(p)}: {_srt(p.text)}" if p.participant else _srt(p.text)

    cues = [
        f"{i}\n{_clock(p.start_s, ',')} --> {_clock(p.end_s, ',')}\n{line(p)}\n"
        for i, p in enumerate(doc.phrases, 1)
    ]
    return "\n".join(cues)


def _vtt_escape(text: str) -> str:
    return _line(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def render_vtt(doc: TranscriptDoc) -> str:
    header = "WEBVTT" + (f" - {_vtt_escape(doc.title)}" if doc.title else "") + "\n"
    codes = doc.language_codes
    if len(codes) == 1:
        header += f"Language: {next(iter(codes))}\n"
    blocks = [header]
    if doc.languages:
        blocks.append(f"NOTE {_vtt_escape(doc.languages_line())}\n")
    blocks += [f"NOTE {_vtt_escape(line)}\n" for line in doc.warning_lines()]

    def text(p: TimedPhrase) -> str:
        escaped = _vtt_escape(p.text)
        return f"<lang {p.language}>{escaped}</lang>" if len(codes) > 1 and p.language else escaped

    def voice(p: TimedPhrase) -> str:
        return f"<v {_vtt_escape(p.participant)}>" if p.participant else ""

    blocks += [
        f"{_clock(p.start_s, '.')} --> {_clock(p.end_s, '.')}\n{voice(p)}{text(p)}\n"
        for p in doc.phrases
    ]
    return "\n".join(blocks)


def render_md(doc: TranscriptDoc) -> str:
    lines = [f"# {_md(doc.title) or 'Transcript'}", ""]
    if doc.started_at is not None:
        lines += [f"*{doc.started_at.isoformat(timespec='seconds')}*", ""]
    if doc.languages:
        lines += [f"*{_md(doc.languages_line())}*", ""]
    for line in doc.warning_lines():
        lines += [f"> {_md(line)}", ""]
    for p in doc.phrases:
        lines.append(f"**{_md(p.participant)}** `{_short(p.start_s)}` {_md(p.text)}  ")
    return "\n".join(lines).rstrip() + "\n"


def render_txt(doc: TranscriptDoc) -> str:
    return "".join(
        f"[{_short(p.start_s)}] {_line(p.participant)}: {_line(p.text)}\n" for p in doc.phrases
    )


FORMATS: Registry[Callable[[TranscriptDoc], str]] = Registry(
    "format",
    {"json": render_json, "srt": render_srt, "vtt": render_vtt, "md": render_md, "txt": render_txt},
)


def render(doc: TranscriptDoc, fmt: str) -> str:
    """Render ``doc`` in format ``fmt`` (one of ``FORMATS``)."""
    return FORMATS[fmt](doc)
