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

__all__ = ["Diarization", "SpeakerTurn", "TurnIndex", "speaker_words", "split_words"]

EDGE_S = 1.0
"""A stretch of a speaker's speech starts with its first word, and ends with its last, when
they are at most this far apart (``speaker_words``)."""
WORD_GAP_S = 1.0
"""A pause between two words of one stretch of a speaker's speech at most this long is the
first word's (``speaker_words``)."""
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


class TurnIndex:
    """Each speaker's turns, joined where they overlap, for finding a word's speaker in
    O(speakers x log turns) however long a turn runs."""

    def __init__(self, turns: Sequence[SpeakerTurn]) -> None:
        spans: dict[int, list[list[float]]] = {}
        for t in sorted(turns, key=lambda t: (t.start, t.end)):
            mine = spans.setdefault(t.speaker, [])
            if mine and t.start <= mine[-1][1]:
                mine[-1][1] = max(mine[-1][1], t.end)
            else:
                mine.append([t.start, t.end])
        self.spans = {k: ([a for a, _ in v], [b for _, b in v]) for k, v in spans.items()}
        self.first = min(turns, key=lambda t: (t.start, t.end)).speaker if turns else 0

    def speaker_of(self, word: Word) -> int | None:
        """The speaker whose turns ``word`` overlaps most, else the one of the nearest turn
        within NEAREST_TURN_S; None when no turn is that close."""
        best: tuple[float, int] | None = None
        nearest: tuple[float, int] | None = None
        for speaker, (starts, ends) in self.spans.items():
            i = bisect.bisect_left(starts, word.end)  # spans starting before the word ends
            overlap, j = 0.0, i - 1
            while j >= 0 and ends[j] > word.start:
                overlap += min(word.end, ends[j]) - max(word.start, starts[j])
                j -= 1
            if overlap > 0 and (best is None or overlap > best[0]):
                best = overlap, speaker
            gaps = [word.start - ends[i - 1]] if i > 0 else []
            gaps += [starts[i] - word.end] if i < len(starts) else []
            gap = min(gaps)
            if gap <= NEAREST_TURN_S and (nearest is None or gap < nearest[0]):
                nearest = gap, speaker
        if best is not None:
            return best[1]
        return None if nearest is None else nearest[1]


def _pieces(segments: Sequence[Segment], diarization: Diarization) -> list[tuple[int, Word, int]]:
    """(segment index, word, speaker) of every word: the speaker whose turns the word
    overlaps most (a segment without word times is one word); a word near no turn goes to
    the speaker before it (or after it, at the start)."""
    index = TurnIndex(diarization.turns)
    pieces = [
        (i, word)
        for i, segment in enumerate(segments)
        for word in (segment.words or (Word(segment.start, segment.end, segment.text),))
    ]
    who = [index.speaker_of(word) for _, word in pieces]
    known = next((k for k in who if k is not None), index.first)
    for n, k in enumerate(who):  # a word near no turn: the speaker before it
        known = who[n] = known if k is None else k
    return _placed([(i, w, k) for (i, w), k in zip(pieces, who, strict=True)], index)  # type: ignore[misc]


def speaker_words(segments: Sequence[Segment], diarization: Diarization) -> list[tuple[Word, int]]:
    """Every word of ``segments`` with its speaker, in order: the one decision both the
    stored segments (``split_words``) and the transcript's words are made of."""
    return [(word, k) for _, word, k in _pieces(segments, diarization)]


def _placed(pieces: list[tuple[int, Word, int]], index: TurnIndex) -> list[tuple[int, Word, int]]:
    """The words' times put on their speaker's speech, as the diarizer heard it (Whisper's
    word times are found from attention, and are often off by a tenth of a second or more at
    the edges of speech):

    * a word is cut to the stretch of its speaker's speech it overlaps most;
    * within one stretch, a word's end is moved on to the start of its speaker's next word
      when the pause between them is at most ``WORD_GAP_S`` (the diarizer heard no change
      of speaker and no silence long enough to end the turn), and the first word of a
      stretch starts, and its last ends, with the stretch when that is at most ``EDGE_S``
      away.

    Words over no stretch of their speaker's keep their times."""
    out = list(pieces)
    where: list[tuple[int, int] | None] = []  # (speaker, stretch) of each word
    for n, (i, word, k) in enumerate(pieces):
        starts, ends = index.spans.get(k, ([], []))
        j = bisect.bisect_right(starts, word.end) - 1
        best, best_j = -1.0, -1
        while j >= 0 and ends[j] >= word.start:  # a word of no length is in the one it is in
            overlap = min(word.end, ends[j]) - max(word.start, starts[j])
            if overlap > best and (overlap > 0 or starts[j] <= word.start <= ends[j]):
                best, best_j = overlap, j
            j -= 1
        if best_j < 0:
            where.append(None)
            continue
        where.append((k, best_j))
        a, b = max(word.start, starts[best_j]), min(word.end, ends[best_j])
        out[n] = (i, Word(a, b, word.text, word.probability), k)
    last: dict[tuple[int, int], int] = {}  # the latest word seen in each stretch
    for n, key in enumerate(where):
        if key is None:
            continue
        k, j = key
        starts, ends = index.spans[k]
        i, word, _ = out[n]
        before = last.get(key)
        if before is None:
            if word.start - starts[j] <= EDGE_S:
                word = Word(starts[j], word.end, word.text, word.probability)
        else:
            bi, bw, _ = out[before]
            if 0 < word.start - bw.end <= WORD_GAP_S:
                out[before] = (bi, Word(bw.start, word.start, bw.text, bw.probability), k)
        out[n] = (i, word, k)
        last[key] = n
    for (k, j), n in last.items():
        i, word, _ = out[n]
        if 0 < index.spans[k][1][j] - word.end <= EDGE_S:
            out[n] = (i, Word(word.start, index.spans[k][1][j], word.text, word.probability), k)
    return out


def split_words(segments: Sequence[Segment], diarization: Diarization) -> dict[int, list[Segment]]:
    """Each speaker's segments: the recognizer's segments cut wherever the speaker of their
    words changes (a segment kept whole keeps the recognizer's text), each word's speaker as
    ``speaker_words`` gives it. Speakers who got no words are left out."""
    triples = _pieces(segments, diarization)
    pieces = [(i, word) for i, word, _ in triples]
    who = [k for _, _, k in triples]
    out: dict[int, list[Segment]] = {}
    n = 0
    while n < len(pieces):
        m = n + 1
        while m < len(pieces) and pieces[m][0] == pieces[n][0] and who[m] == who[n]:
            m += 1
        segment = segments[pieces[n][0]]
        words = [word for _, word in pieces[n:m]]
        speaker = who[n]
        start, end = min(w.start for w in words), max(w.end for w in words)
        if not segment.words:  # one piece, its time as placed
            part = Segment(start, end, segment.text, (), segment.avg_logprob)
        elif len(words) == len(segment.words):  # kept whole: the recognizer's text
            part = Segment(start, end, segment.text, tuple(words), segment.avg_logprob)
        else:
            part = _segment(words, segment.avg_logprob)
        out.setdefault(speaker, []).append(part)
        n = m
    return out


def _segment(words: list[Word], avg_logprob: float | None) -> Segment:
    """A part of a segment: its words, joined by spaces (Whisper's words carry no spaces)."""
    text = " ".join(w.text for w in words).strip()
    start, end = min(w.start for w in words), max(w.end for w in words)
    return Segment(start, end, text, tuple(words), avg_logprob)
