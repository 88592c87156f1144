"""Word commits inside continuous speech: what two consecutive decodes agree on is final.

A live stream re-decodes its buffer every step. ``WordCommits`` reads each decode's timed
words and commits, word by word, the longest prefix of what is new that the decode before
also said (LocalAgreement-2, the policy whisper_streaming describes, on heard's normalized
word rule). A committed word is never taken back, and the stream may drop the audio before
it (``cut_s``): the next decodes start after it. Three rules keep a word from being lost or
said twice where the buffer was cut:

* a decode's words that end before the last committed word ended (within ``OVERLAP_S``) were
  heard already and are skipped;
* the first words of what is new that repeat the last committed ones (1 to 5 words: Whisper
  heard the end of the cut word again) are skipped;
* the buffer is cut between the last committed word and the first word after it, never
  inside either.

Pure: words in, words out. ``tests/asr/test_commits.py`` holds it to the invariant on random
streams: the committed words, and the endpoint's, are the speech's words, each once.
"""

from __future__ import annotations

from collections.abc import Sequence

from heard.speech import Word
from heard.transcript.words import normalized_key

__all__ = ["OVERLAP_S", "WordCommits"]

OVERLAP_S = 0.1
"""Word times from the alignment move by tens of milliseconds between decodes: a word that
ends within this of where the last committed word ended is that word again."""

_MAX_REPEAT = 5


def _key(w: Word) -> str:
    return normalized_key(w.text)


class WordCommits:
    """One stream's committed words; ``agree`` per decode, ``endpoint`` when speech ends."""

    def __init__(self) -> None:
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
        """The words of a decode after the committed ones."""
        fresh = [w for w in words if w.end > self.committed_end_s + OVERLAP_S]
        keys = [_key(w) for w in fresh]
        tail = [_key(w) for w in self._tail]
        for n in range(min(_MAX_REPEAT, len(tail), len(keys)), 0, -1):
            if keys[:n] == tail[-n:] and fresh[0].start < self.committed_end_s + 1.0:
                return fresh[n:]
        return fresh

    def agree(self, words: Sequence[Word]) -> tuple[list[Word], list[Word]]:
        """Fold in one decode: (words committed now, words still pending)."""
        new = self._new(words)
        agreed = 0
        previous = self._pending
        while (
            agreed < len(new)
            and agreed < len(previous)
            and _key(new[agreed]) == _key(previous[agreed])
        ):
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
