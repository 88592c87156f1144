"""Who spoke when, and each recognized word given to its speaker. Pure: no models, no I/O.

A ``Diarization`` is a recording's speaker turns (seconds from its start; turns of two
speakers may overlap) and how many speakers it found. ``split_words`` hands every Whisper
word to the turn it overlaps most (the nearest turn when it overlaps none, as words are
often timed a little off the speech) and cuts the recognizer's segments where the speaker
changes, so each speaker gets their own segments for the meeting timeline.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from heard.speech import Segment, Word

__all__ = ["Diarization", "SpeakerTurn", "speaker_of", "split_words"]

NEAREST_TURN_S = 1.0
"""A word that overlaps no turn goes to the nearest one within this distance; further away
it goes to the speaker of the word before it (or after, for the first words)."""


@dataclass(frozen=True, slots=True)
class SpeakerTurn:
    start: float
    end: float
    speaker: int
    """0, 1, ...: numbered by when each speaker is first heard."""


@dataclass(frozen=True, slots=True)
class Diarization:
    turns: tuple[SpeakerTurn, ...]
    speakers: int
    """How many speakers were found (0 for a file with no speech)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "speakers": self.speakers,
            "turns": [[t.start, t.end, t.speaker] for t in self.turns],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Diarization:
        turns = tuple(SpeakerTurn(float(a), float(b), int(k)) for a, b, k in data["turns"])
        return cls(turns, int(data["speakers"]))

    def speech_s(self, speaker: int) -> float:
        return sum(t.end - t.start for t in self.turns if t.speaker == speaker)


def speaker_of(word: Word, turns: Sequence[SpeakerTurn], starts: Sequence[float]) -> int | None:
    """The speaker of the turn ``word`` overlaps most, else of the nearest turn within
    NEAREST_TURN_S; None when no turn is that close. ``turns`` sorted by start, ``starts``
    their starts."""
    best: tuple[float, int] | None = None
    hi = bisect.bisect_right(starts, word.end)
    for turn in turns[max(0, hi - 64) : hi]:  # turns starting before the word ends
        overlap = min(word.end, turn.end) - max(word.start, turn.start)
        if overlap > 0 and (best is None or overlap > best[0]):
            best = overlap, turn.speaker
    if best is not None:
        return best[1]
    nearest: tuple[float, int] | None = None
    for turn in turns[max(0, hi - 64) : hi + 1]:
        gap = max(turn.start - word.end, word.start - turn.end)
        if gap <= NEAREST_TURN_S and (nearest is None or gap < nearest[0]):
            nearest = gap, turn.speaker
    return None if nearest is None else nearest[1]


def split_words(segments: Sequence[Segment], diarization: Diarization) -> dict[int, list[Segment]]:
    """Each speaker's segments: the recognizer's segments cut wherever the speaker of their
    words changes. A segment without word times goes whole to the speaker its span overlaps
    most. A word near no turn goes to the speaker before it (or after it, at the start).
    Speakers who got no words are left out."""
    turns = sorted(diarization.turns, key=lambda t: (t.start, t.end))
    starts = [t.start for t in turns]
    pieces = [
        (i, word, bool(segment.words))
        for i, segment in enumerate(segments)
        for word in (segment.words or (Word(segment.start, segment.end, segment.text),))
    ]
    who = [speaker_of(word, turns, starts) if turns else 0 for _, word, _ in pieces]
    known = next((k for k in who if k is not None), turns[0].speaker if turns else 0)
    for n, k in enumerate(who):  # a word near no turn: the speaker before it
        known = who[n] = known if k is None else k
    out: dict[int, list[Segment]] = {}
    n = 0
    while n < len(pieces):
        m = n + 1
        while m < len(pieces) and pieces[m][0] == pieces[n][0] and who[m] == who[n]:
            m += 1
        words = [word for _, word, _ in pieces[n:m]]
        out.setdefault(who[n], []).append(_segment(words, pieces[n][2]))  # type: ignore[arg-type]
        n = m
    return out


def _segment(words: list[Word], timed: bool) -> Segment:
    text = " ".join(w.text for w in words).strip()
    return Segment(words[0].start, words[-1].end, text, tuple(words) if timed else ())
