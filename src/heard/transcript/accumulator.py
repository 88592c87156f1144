"""Stable prefix of one turn's revising partial transcripts.

The stable prefix is the longest word-aligned common prefix of consecutive
revisions, compared with a word-match rule (``heard.transcript.words``). Three
rules keep it trustworthy:

* the last word of a partial is never stable: it is the one most often revised;
* within a turn the stable prefix never retracts; a partial that disagrees with
  it is counted as a *contradiction* and cannot change the committed words,
  though agreement after the point of disagreement may still extend them;
* a final replaces the hypothesis wholesale: only finals are evidence.
"""

from __future__ import annotations

from dataclasses import dataclass

from heard.errors import TurnStateError
from heard.transcript.turns import TurnId
from heard.transcript.words import WORD_MATCHERS, WordKey

__all__ = ["Hypothesis", "TranscriptAccumulator"]


@dataclass(frozen=True, slots=True)
class Hypothesis:
    """The current reading of a turn after one revision."""

    turn_id: TurnId | None
    stable_prefix: str
    unstable_suffix: str
    stable_word_count: int
    revision: int
    final: bool
    contradiction: bool = False
    """This revision disagreed with the committed stable prefix."""
    repeated: bool = False
    """This partial's words are the previous partial's, word for word (by the turn's word
    rule): the recognizer heard nothing new since. A pause, as the transcript tells it."""

    @property
    def text(self) -> str:
        if not self.unstable_suffix:
            return self.stable_prefix
        if not self.stable_prefix:
            return self.unstable_suffix
        return f"{self.stable_prefix} {self.unstable_suffix}"


_ANCHOR_WORDS = 3
_ANCHOR_SLACK = 3
_MAX_REPLACED = 2


def _common_prefix_len(a: list[str], b: list[str]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


class TranscriptAccumulator:
    """Accumulates the revisions of one turn; ``begin_turn`` starts the next.

    ``word_match`` names a rule in ``WORD_MATCHERS`` (default ``normalized``).
    Stable words are shown in the surface form of the latest agreeing revision,
    so "planned." becomes "planned," when the sentence goes on.
    """

    def __init__(self, turn_id: TurnId | None = None, *, word_match: str = "normalized") -> None:
        self._key: WordKey = WORD_MATCHERS[word_match]
        self.word_match = word_match
        self.begin_turn(turn_id)

    def begin_turn(self, turn_id: TurnId | None) -> None:
        """Discard all state and start accumulating ``turn_id``."""
        self.turn_id = turn_id
        self._prev_tail: list[str] | None = []
        """Keys after the stable prefix in the last revision; None if it was unaligned."""
        self._stable_keys: list[str] = []
        self._stable_surface: list[str] = []
        self._last_keys: list[str] | None = None
        self.revisions = 0
        self.contradictions = 0
        self.final = False
        self.final_contradicted = False
        """The final disagreed with the stable prefix committed before it."""

    def push_partial(self, text: str) -> Hypothesis:
        """Fold in a partial transcript and return the updated hypothesis."""
        if self.final:
            raise TurnStateError(
                f"turn {self.turn_id} is final; call begin_turn before pushing partials"
            )
        words = text.split()
        key = self._key
        keys = [key(w) for w in words]
        n_stable = len(self._stable_keys)
        agrees = keys[:n_stable] == self._stable_keys
        end = n_stable if agrees else self._realign(keys)
        if end is not None:
            tail = keys[end:]
            prev = self._prev_tail
            common = 0 if prev is None else _common_prefix_len(prev, tail)
            # The final word is never stable until a later revision confirms it.
            grown = min(common, len(tail) - 1)
            if agrees:
                self._stable_surface = words[: n_stable + max(grown, 0)]
            elif grown > 0:
                self._stable_surface += words[end : end + grown]
            if grown > 0:
                self._stable_keys += tail[:grown]
                n_stable += grown
                end += grown
            self._prev_tail = keys[end:]
        else:
            self._prev_tail = None
        if not agrees:
            self.contradictions += 1
        self.revisions += 1
        repeated = keys == self._last_keys
        self._last_keys = keys
        return Hypothesis(
            turn_id=self.turn_id,
            stable_prefix=" ".join(self._stable_surface),
            unstable_suffix=" ".join(words[n_stable if end is None else end :]),
            stable_word_count=n_stable,
            revision=self.revisions,
            final=False,
            contradiction=not agrees,
            repeated=repeated,
        )

    def _realign(self, keys: list[str]) -> int | None:
        """Where, in a contradicting partial, the committed stable prefix ends.

        The stable prefix cannot be retracted, but the recognizer may still go on
        agreeing with itself after the point it changed its mind ("pears under
        loaf" -> "pears and a loaf", "the next order." -> "the next quarter.").
        Committed words are looked for within a few words of where the prefix would
        end: first its last 3, 2 or 1 words; then, assuming its last 1 or 2 words
        were replaced one for one, the 3 or 2 words before them. The match closest
        to the expected position wins. ``None`` when no anchor is found.
        """
        stable = self._stable_keys
        n = len(stable)
        for replaced in range(_MAX_REPLACED + 1):
            widths = range(min(_ANCHOR_WORDS, n - replaced), 0 if replaced == 0 else 1, -1)
            for width in widths:
                anchor = stable[n - replaced - width : n - replaced]
                expected = n - replaced
                best: int | None = None
                lo = max(width, expected - _ANCHOR_SLACK)
                hi = min(len(keys) - replaced, expected + _ANCHOR_SLACK)
                for end in range(lo, hi + 1):
                    if keys[end - width : end] == anchor and (
                        best is None or abs(end - expected) < abs(best - expected)
                    ):
                        best = end
                if best is not None:
                    return best + replaced
        return None

    def finalize(self, text: str) -> Hypothesis:
        """Replace the hypothesis with the final transcript; the turn is then closed."""
        if self.final:
            raise TurnStateError(f"turn {self.turn_id} is already final")
        words = text.split()
        keys = [self._key(w) for w in words]
        self.final_contradicted = keys[: len(self._stable_keys)] != self._stable_keys
        self._stable_keys = keys
        self._prev_tail = []
        self._stable_surface = words
        self.revisions += 1
        self.final = True
        return Hypothesis(
            turn_id=self.turn_id,
            stable_prefix=" ".join(words),
            unstable_suffix="",
            stable_word_count=len(words),
            revision=self.revisions,
            final=True,
        )

    @property
    def stable_prefix(self) -> str:
        return " ".join(self._stable_surface)
