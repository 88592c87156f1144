"""Phrases on one meeting timeline, from each participant's own segments.

Each participant's track is transcribed on its own, with times relative to the
track; ``offset_s`` places the track on the meeting's timeline. The merge:

1. all segments are shifted by their track's offset and sorted by start (ties:
   end, then participant name, then order within the track);
2. consecutive segments of one participant form a *run*;
3. runs become phrases: a run by the participant of the open phrase extends it
   (silence inside one person's speech does not break a phrase); a run by
   someone else shorter than ``interjection_threshold_s`` ("uh-huh") is kept as
   its own phrase but leaves the open phrase open; a longer run closes the open
   phrase and opens its own. Overlapping speech therefore keeps both phrases.

Phrases come out sorted by start. The function is pure: no clock, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

__all__ = [
    "INTERJECTION_THRESHOLD_S",
    "PhraseDraft",
    "Segment",
    "SpeakerSegment",
    "Track",
    "Word",
    "build_phrases",
    "merge_timeline",
]

INTERJECTION_THRESHOLD_S = 1.5
"""Another participant speaking for less than this does not break a phrase."""


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

    def __post_init__(self) -> None:
        if self.end < self.start:
            raise ValueError(f"segment ends ({self.end}) before it starts ({self.start})")


@dataclass(frozen=True, slots=True)
class Track:
    """One participant's segments and where their track starts on the meeting timeline."""

    segments: Sequence[Segment]
    offset_s: float = 0.0


@dataclass(frozen=True, slots=True)
class SpeakerSegment:
    """A segment placed on the meeting timeline."""

    participant: str
    start: float
    end: float
    text: str


@dataclass(frozen=True, slots=True)
class PhraseDraft:
    """A phrase, in seconds from the meeting start, before it is stored."""

    participant: str
    start: float
    end: float
    text: str

    def to_dict(self) -> dict[str, object]:
        return {
            "participant": self.participant,
            "start": self.start,
            "end": self.end,
            "text": self.text,
        }


def merge_timeline(tracks: Mapping[str, Track]) -> list[SpeakerSegment]:
    """Every segment shifted by its track's offset, in timeline order."""
    keyed = []
    for participant, track in tracks.items():
        for index, seg in enumerate(track.segments):
            start, end = seg.start + track.offset_s, seg.end + track.offset_s
            keyed.append(
                (
                    (start, end, participant, index),
                    SpeakerSegment(participant, start, end, seg.text),
                )
            )
    keyed.sort(key=lambda pair: pair[0])
    return [seg for _, seg in keyed]


@dataclass(slots=True)
class _Open:
    participant: str
    start: float
    end: float
    texts: list[str]

    def add(self, segments: Iterable[SpeakerSegment]) -> None:
        for seg in segments:
            self.end = max(self.end, seg.end)
            self.texts.append(seg.text)

    def draft(self) -> PhraseDraft:
        text = " ".join(t.strip() for t in self.texts if t.strip())
        return PhraseDraft(self.participant, self.start, self.end, text)


def _runs(timeline: list[SpeakerSegment]) -> list[list[SpeakerSegment]]:
    runs: list[list[SpeakerSegment]] = []
    for seg in timeline:
        if runs and runs[-1][0].participant == seg.participant:
            runs[-1].append(seg)
        else:
            runs.append([seg])
    return runs


def build_phrases(
    tracks: Mapping[str, Track],
    *,
    interjection_threshold_s: float = INTERJECTION_THRESHOLD_S,
) -> list[PhraseDraft]:
    """Phrases of all participants on one timeline, sorted by start (see module docstring)."""
    if interjection_threshold_s < 0:
        raise ValueError(f"interjection_threshold_s must be >= 0, got {interjection_threshold_s}")
    done: list[_Open] = []
    current: _Open | None = None
    for run in _runs(merge_timeline(tracks)):
        who = run[0].participant
        if current is not None and who == current.participant:
            current.add(run)
            continue
        phrase = _Open(who, run[0].start, run[0].end, [])
        phrase.add(run)
        span = max(s.end for s in run) - run[0].start
        if current is not None and span < interjection_threshold_s:
            done.append(phrase)  # an interjection: its own phrase, the open one stays open
        else:
            if current is not None:
                done.append(current)
            current = phrase
    if current is not None:
        done.append(current)
    drafts = [p.draft() for p in done]
    drafts.sort(key=lambda d: (d.start, d.end, d.participant))
    return drafts
