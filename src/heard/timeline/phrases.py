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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter

from heard.speech import Segment, Word

__all__ = [
    "INTERJECTION_THRESHOLD_S",
    "PhraseDraft",
    "Track",
    "build_phrases",
]

INTERJECTION_THRESHOLD_S = 1.5
"""Another participant speaking for strictly less than this does not break a phrase: a reply
of exactly 1.5 s breaks it, 1.49 s does not."""

RESOLUTION_MS = 1
"""Times go on the meeting timeline in whole milliseconds - the resolution every transcript
format writes - before anything is added or compared, so the interjection rule is decided in
exact integer arithmetic (a segment written 0.51-2.01 s lasts 1500 ms, not 1.4999999999999998
s) and the times written out are the ones the rule used."""


def _ms(seconds: float) -> int:
    return round(seconds * 1000)


@dataclass(frozen=True, slots=True)
class Track:
    """One participant's segments and where their track starts on the meeting timeline."""

    segments: Sequence[Segment]
    offset_s: float = 0.0


@dataclass(frozen=True, slots=True)
class PhraseDraft:
    """A phrase, in seconds from the meeting start, before it is stored."""

    participant: str
    start: float
    end: float
    text: str
    words: tuple[Word, ...] = ()
    """Its words with their times on the meeting timeline, when the recognizer gave them."""

    def to_dict(self) -> dict[str, object]:
        return {
            "participant": self.participant,
            "start": self.start,
            "end": self.end,
            "text": self.text,
        }


def _placed(tracks: Mapping[str, Track]) -> list[tuple[int, int, str, int, str, tuple[Word, ...]]]:
    """(start ms, end ms, participant, index, text, words) on the meeting timeline, in
    timeline order; each written time and offset is taken to the millisecond before they are
    added."""
    rows = [
        (_ms(seg.start) + _ms(track.offset_s), _ms(seg.end) + _ms(track.offset_s),
         participant, index, seg.text, _words(seg.words, _ms(track.offset_s)))
        for participant, track in tracks.items()
        for index, seg in enumerate(track.segments)
    ]  # fmt: skip
    rows.sort(key=lambda r: r[:4])
    return rows


def _words(words: Sequence[Word], offset_ms: int) -> tuple[Word, ...]:
    def placed(seconds: float) -> float:
        return (_ms(seconds) + offset_ms) / 1000

    return tuple(Word(placed(w.start), placed(w.end), w.text, w.probability) for w in words)


@dataclass(slots=True)
class _Open:
    participant: str
    start: int
    end: int
    """Milliseconds on the meeting timeline."""
    texts: list[str]
    words: list[Word]

    def draft(self) -> PhraseDraft:
        texts = self.texts
        if len(texts) == 1:
            text = texts[0].strip()
        else:
            text = " ".join(filter(None, map(str.strip, texts)))
        return PhraseDraft(
            self.participant, self.start / 1000, self.end / 1000, text, tuple(self.words)
        )


def build_phrases(
    tracks: Mapping[str, Track],
    *,
    interjection_threshold_s: float = INTERJECTION_THRESHOLD_S,
) -> list[PhraseDraft]:
    """Phrases of all participants on one timeline, sorted by start (see module docstring)."""
    if interjection_threshold_s < 0:
        raise ValueError(f"interjection_threshold_s must be >= 0, got {interjection_threshold_s}")
    threshold_ms = _ms(interjection_threshold_s)
    done: list[_Open] = []
    current: _Open | None = None
    rows = _placed(tracks)
    i, n = 0, len(rows)
    while i < n:
        start, end, who, _, text, spoken = rows[i]
        texts, words = [text], list(spoken)
        j = i + 1
        while j < n and rows[j][2] == who:  # a run: consecutive segments of one participant
            row = rows[j]
            if row[1] > end:
                end = row[1]
            texts.append(row[4])
            words += row[5]
            j += 1
        i = j
        if current is not None and who == current.participant:
            if end > current.end:
                current.end = end
            current.texts += texts
            current.words += words
        elif current is not None and end - start < threshold_ms:
            done.append(_Open(who, start, end, texts, words))  # an interjection; stays open
        else:
            if current is not None:
                done.append(current)
            current = _Open(who, start, end, texts, words)
    if current is not None:
        done.append(current)
    drafts = [p.draft() for p in done]
    drafts.sort(key=attrgetter("start", "end", "participant"))
    return drafts
