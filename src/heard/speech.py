"""Recognized speech: what every recognizer produces and the meeting timeline consumes.

A ``Segment`` is a stretch of one track's speech with its text and, when the recognizer
gives them, its ``Word`` timings; times are seconds from the start of that track. These
records sit below both ``heard.asr`` (which makes them) and ``heard.timeline`` (which places
them on the meeting's timeline), so neither has to import the other. A ``Transcription`` is
what a recognizer made of one track: its segments and the language they are in.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Segment", "Transcription", "Word"]


@dataclass(frozen=True, slots=True)
class Word:
    start: float
    end: float
    text: str
    probability: float = 1.0


@dataclass(frozen=True, slots=True)
class Segment:
    """A recognizer segment, in seconds from the start of its own track."""

    start: float
    end: float
    text: str
    words: tuple[Word, ...] = field(default=(), compare=False)
    avg_logprob: float | None = field(default=None, compare=False)
    """The mean log-probability of the tokens of the reading the segment comes from (Whisper's
    ``avg_logprob``); None when the recognizer does not say."""

    def __post_init__(self) -> None:
        if self.end < self.start:
            raise ValueError(f"segment ends ({self.end}) before it starts ({self.start})")


@dataclass(frozen=True, slots=True)
class Transcription:
    """One track's speech: its segments and their language."""

    segments: tuple[Segment, ...] = ()
    language: str | None = None
    """ISO 639-1 code (``en``, ``es``), given or detected; None when the recognizer does not
    say."""
    language_probability: float | None = None
    """How sure the detection was (0-1); None when the language was given, not detected."""
    warnings: tuple[str, ...] = ()
    """What a reader of the transcript should know about it (an English-only model that
    heard speech it could not make out as English)."""

    @property
    def text(self) -> str:
        return " ".join(s.text for s in self.segments)
