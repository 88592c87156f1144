"""Word commits inside continuous speech: what two consecutive decodes agree on is final,
and so is a word the decoder heard with a second of audio after it.

A live stream re-decodes its buffer every step. ``WordCommits`` reads each decode's timed
words and commits, word by word, the longest prefix of what is new that the decode before
also said (LocalAgreement-2, the policy whisper_streaming describes, on heard's normalized
word rule), and past it, the words that end ``SETTLED_S`` or more before the end of the
audio decoded (``CONFIDENT_SETTLED_S`` for a word Whisper gave ``CONFIDENT`` probability or
more): Whisper rarely changes its reading of a word it heard with that much after
it, and agreement alone commits a word two steps after it is spoken, so the latency is
twice the step, which a loaded server widens (on real conversation at 1.5 s steps,
``bench/stream_policy.py``: commit p50 2.9-3.1 s by agreement alone, 1.8-2.0 s with these
rules, and WER 0.02 lower in the room and by phone).
A committed word is never taken back, and the stream may drop the audio before
it (``cut_s``): the next decodes start after it. Three rules keep a word from being lost or
said twice where the buffer was cut:

* a decode's words whose middle comes before the last committed word's end were heard
  already and are skipped (whisper_streaming skips those that start before it, less 0.1 s:
  a word shorter than the alignment's error then passes twice); unless the two words before
  that line read as the committed words end, the line moves by up to two words to where they
  do (a short word's time moved past it; the end of a cut word heard again at the start of
  the next buffer);
* the buffer is cut in a pause (``cut_at``): between the last committed word and the first
  word after it, never inside either. Word times from the alignment are off by tens to
  hundreds of milliseconds on tiny.en, so a cut between two words of continuous speech
  risks half a word; a buffer that runs ``force`` long with no pause is cut inside speech,
  before the committed word that starts ``OVERLAP_S`` before their end (the next buffer
  begins on committed words, read again and skipped, never on the first word to commit).

Pure: words in, words out. ``tests/asr/test_commits.py`` holds it to the invariant on random
streams: the committed words, and the endpoint's, are the speech's words, each once. Its one
limit: a word said twice with no pause between ("with with"), the second shorter than the
alignment's error, may come out three times, as it reads the same as one heard twice (over
10,000 random streams of the fake recognizer in the test, each word once when the speaker
pauses between the two; before the rule for the last committed word heard again across the
line, one of them said an "on" of "on ... on ... on" twice).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from heard.speech import Word
from heard.transcript.words import normalized_key

__all__ = [
    "CONFIDENT",
    "CONFIDENT_SETTLED_S",
    "OVERLAP_S",
    "PAUSE_SLACK_S",
    "SETTLED_S",
    "CommitRule",
    "WordCommits",
]

PAUSE_SLACK_S = 0.3
"""A pause may start this much before the last committed word's end, as aligned, and end this
much after the next word's start: the alignment's error, not speech."""

SETTLED_S = 1.0
"""A word that ends this long before the end of the audio a decode heard is committed from
that one decode. Measured on 10 real recordings (AMI and a phone call, 1-1.5 s steps): 0.7 s
cost about 0.02 WER, 1 s none."""

CONFIDENT = 0.9
CONFIDENT_SETTLED_S = 0.3
"""A word Whisper reads with at least ``CONFIDENT`` probability is committed once a decode has
heard ``CONFIDENT_SETTLED_S`` after it. ``bench/stream_policy.py`` at 1.5 s steps (a loaded
server's), against the rule without it: commit p50 1.83 s against 2.10 in the room, 1.98
against 2.13 by phone, 1.78 against 2.01 on a phone call; WER 0.313 against 0.315, 0.343 and
0.343, 0.210 against 0.198 (one word in 81). 0.8 at 0.4 s cost 0.008 WER more; 0.95 at 0 s
gained less (scratch runs on the same calls). A word given no probability (``Word``'s
default, 1.0) counts as sure."""

OVERLAP_S = 1.0
"""A cut inside speech leaves about this much of the committed words in the next buffer.
Issue 58, on a real sales call by phone (gecko's parts kept for tuning): a cut at their end
went through the next word as often as not, and tiny.en, reading a buffer that starts on a
word, drops it ("product on [travel] a lot"); WER 0.249 at 0 s, 0.229 at 1 s."""

_REREAD_WORDS = 3
_IN_PLACE_S = 0.2
"""Words past the line that, with the words before it, repeat the committed tail word for word
(at least ``_REREAD_WORDS`` in one run across the line) are that tail read again, however late
a re-read buffer timed them (issue 73: a phrase released three times), unless the decode also
holds the last committed word where it was said (within ``_IN_PLACE_S``): then the words
after it were said again ("on on on")."""
_MAX_REPEAT = 5
_REPEAT_S = 0.3
"""Words repeating the committed tail are that tail heard again only if they start within
this of its end; later, the speaker said them again ("test. test.")."""


def _key(w: Word) -> str:
    return normalized_key(w.text)


@dataclass(frozen=True, slots=True)
class CommitRule:
    """When a word inside continuous speech is final (the module's rules, by default); the
    others are for comparing policies (``bench/stream_policy.py``)."""

    agreement: bool = True
    """Two consecutive decodes that agree on a word commit it."""
    settled_s: float = SETTLED_S
    confident: float = CONFIDENT
    confident_settled_s: float = CONFIDENT_SETTLED_S

    def __post_init__(self) -> None:
        if not (self.settled_s > 0 and self.confident_settled_s > 0):
            # a word ending at the audio's end may be cut through by it, and misheard
            raise ValueError("settled_s and confident_settled_s must be over 0 s")

    @classmethod
    def endpoint_only(cls) -> CommitRule:
        """Nothing final before the utterance ends (or runs ``max_utterance_s``)."""
        return cls(agreement=False, settled_s=math.inf, confident=math.inf)

    def settled(self, w: Word, heard_to: float) -> bool:
        """A decode of audio up to ``heard_to`` heard enough after ``w`` to commit it alone."""
        if w.probability >= self.confident:
            return w.end <= heard_to - self.confident_settled_s
        return w.end <= heard_to - self.settled_s


class WordCommits:
    """One stream's committed words; ``agree`` per decode, ``endpoint`` when speech ends."""

    def __init__(self, rule: CommitRule | None = None) -> None:
        self.rule = rule or CommitRule()
        self.committed_end_s = 0.0
        """Where the last committed word ended (seconds of the stream)."""
        self._tail: list[Word] = []  # the last committed words, for the repeat rule
        self._pending: list[Word] = []  # the last decode's words after the committed ones
        self.open = False
        """Words were committed since the last endpoint: an utterance is open."""
        self.cut_s: float | None = None
        """Where the audio may be cut: between the last committed word and the next one
        (None until something is committed)."""

    def _new(self, words: Sequence[Word]) -> list[Word]:
        """The words of a decode after the committed ones: from the first whose middle comes
        after the committed words end; unless the (two) words before it end as the committed
        words do, moved by up to two words to where they do (a short word's time
        moved past the line; the end of a cut word heard again, if it starts within
        ``_REPEAT_S``). Time first: text alone cannot tell "on on" from "on" heard twice."""
        keys = [_key(w) for w in words]
        tail = [_key(w) for w in self._tail]
        by_time = next((i for i, w in enumerate(words)
                        if (w.start + w.end) / 2 > self.committed_end_s), len(words))  # fmt: skip

        def matched(j: int) -> int:
            m = 0
            while m < min(j, len(tail)) and keys[j - m - 1] == tail[-m - 1]:
                m += 1
            return m

        best, best_m = by_time, matched(by_time)
        again = (by_time < len(words) and bool(tail) and keys[by_time] == tail[-1]
                 and words[by_time].start < self.committed_end_s)  # fmt: skip
        # ("again": the line's word is the last committed one, its middle moved over the line)
        if best_m and best_m >= min(2, by_time, len(tail)) and not again:
            return list(words[by_time:])  # the words before the line end as the committed do
        for j in range(max(0, by_time - 2), min(len(words), by_time + 2) + 1):
            if j > by_time and words[j - 1].start > self.committed_end_s + _REPEAT_S:
                break
            m = matched(j)
            if j > by_time and m < j - by_time:
                continue  # past the line only over words that are the committed ones again
            if m > best_m or (m == best_m and m and abs(j - by_time) < abs(best - by_time)):
                best, best_m = j, m  # the nearest of the longest
        last = self._tail[-1] if self._tail else None
        in_place = last is not None and any(  # the last committed word, where it was said
            keys[i] == tail[-1] and abs(words[i].end - last.end) <= _IN_PLACE_S
            for i in range(by_time)
        )
        for j in range(by_time + 1, min(len(words), by_time + len(tail)) + 1):
            m = matched(j)
            if not in_place and m >= _REREAD_WORDS and m > j - by_time and j > best:
                best = j  # the committed words read again, timed later: one copy across the line
        return list(words[best:])

    def agree(
        self, words: Sequence[Word], *, heard_to: float | None = None
    ) -> tuple[list[Word], list[Word]]:
        """Fold in one decode of audio up to ``heard_to`` (seconds of the stream; None: the
        agreement rule alone): (words committed now, words still pending)."""
        new = self._new(words)
        agreed = 0
        previous = self._pending
        while (
            self.rule.agreement
            and agreed < len(new)
            and agreed < len(previous)
            and _key(new[agreed]) == _key(previous[agreed])
        ):
            agreed += 1
        if heard_to is not None:
            while agreed < len(new) and self.rule.settled(new[agreed], heard_to):
                agreed += 1
        done, self._pending = new[:agreed], new[agreed:]
        self._commit(done)
        return done, list(self._pending)

    def endpoint(self, words: Sequence[Word]) -> list[Word]:
        """The utterance ended (silence): every new word of its last decode is final
        (``close`` once the endpoint is said)."""
        done = self._new(words)
        self._commit(done)
        self._pending = []
        return done

    @property
    def pending(self) -> list[Word]:
        """The last decode's words after the committed ones."""
        return list(self._pending)

    def cut_at(
        self, pauses: Sequence[tuple[float, float]], *, force: bool = False
    ) -> tuple[float, bool] | None:
        """Where to cut the audio (seconds of the stream), and whether it is a forced cut: the
        middle of the last of ``pauses`` (silences, as VAD found them) between the last
        committed word and the next (an earlier pause would leave committed words in the
        buffer, to be read again, and tiny.en's times for them move); with none and ``force``,
        the last pause behind them, else the committed words' end; None if nothing is
        committed."""
        if self.cut_s is None:
            return None
        latest = behind = None
        for start, end in pauses:
            middle = (start + end) / 2
            if middle <= self.cut_s + PAUSE_SLACK_S:
                behind = middle
                if middle >= self.committed_end_s - PAUSE_SLACK_S:
                    latest = middle
        if latest is not None:
            return latest, False
        if not force:
            return None
        # the buffer is long: an earlier pause (its committed words are read again, and
        # skipped) before a cut inside speech, which may take half a word with it
        if behind is not None:
            return behind, False
        return self._overlap_cut(self.cut_s), True

    def _overlap_cut(self, cut_s: float) -> float:
        """A cut inside speech: before the committed word that starts ``OVERLAP_S`` or more
        before the committed words end, so the next buffer begins with committed words,
        heard again and skipped, not with the first word still to commit, which tiny.en
        reads badly or not at all when the buffer starts on it."""
        if OVERLAP_S <= 0 or not self._tail:
            return cut_s
        start = self._tail[0].start
        for w in reversed(self._tail):
            if w.start <= self.committed_end_s - OVERLAP_S:
                start = w.start
                break
        return start

    def close(self) -> None:
        """The utterance ended (its endpoint was said)."""
        self.open = False

    def _commit(self, done: list[Word]) -> None:
        if not done:
            return
        self.open = True
        self.committed_end_s = max(self.committed_end_s, done[-1].end)
        self._tail = (self._tail + done)[-_MAX_REPEAT:]
        after = self._pending[0].start if self._pending else None
        end = done[-1].end
        self.cut_s = end if after is None or after <= end else (end + after) / 2
