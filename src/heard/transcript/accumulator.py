"""Stable prefix of one turn's revising partial transcripts.

The stable prefix is the longest word-aligned common prefix of consecutive
revisions, compared with a word-match rule (``heard.transcript.words``). Three
rules keep it trustworthy:

* the last word of a partial is never stable: it is the one most often revised;
* a partial that disagrees with the stable prefix is counted as a *contradiction*
  and changes nothing by itself. Its new reading is *confirmed*, and becomes the
  stable prefix (``revised``), when the next revision agrees with it on a prefix
  longer than the stable one (seed 000's rule). A partial that agrees with the
  stable prefix grows it where it agrees with the last revision on what follows the
  stable prefix, even if that revision misread a committed word ("on" / "to" / "on":
  the recognizer's flip does not stall the words after it). So the stable prefix is
  always a word prefix of one revision of the turn, never a splice of two readings,
  and it never shrinks;
* a final replaces the hypothesis wholesale: only finals are evidence.

Without contradictions this is seed 000's accumulator word for word (exact word
rule); ``tests/transcript/test_seed_reference.py`` checks it against a port.
"""

from __future__ import annotations

from dataclasses import dataclass

from heard.errors import TurnStateError
from heard.transcript.turns import TurnId
from heard.transcript.words import WORD_MATCHERS, WordKey, normalized_key

__all__ = ["Hypothesis", "TranscriptAccumulator"]


@dataclass(frozen=True, slots=True)
class Hypothesis:
    """The current reading of a turn after one revision."""

    turn_id: TurnId | None
    stable_words: tuple[str, ...]
    """The stable prefix, word by word (surface forms), as the accumulator split it: nothing
    downstream splits the text again."""
    unstable_words: tuple[str, ...]
    revision: int
    final: bool
    contradiction: bool = False
    """This revision disagreed with the committed stable prefix."""
    revised: bool = False
    """This revision confirmed a new reading: the stable prefix was replaced by a longer one
    that two consecutive revisions agree on (it is then not an extension of the last)."""
    repeated: bool = False
    """This partial's words are the previous partial's, word for word (by the turn's word
    rule): the recognizer heard nothing new since. A pause, as the transcript tells it."""
    stable_keys: tuple[str, ...] | None = None
    """The stable words' keys by the turn's word rule, as the accumulator compared them:
    nobody downstream keys them again (None, in a hypothesis built by hand: they are then the
    ``normalized`` keys)."""

    def __post_init__(self) -> None:
        if self.stable_keys is None:
            object.__setattr__(self, "stable_keys", tuple(map(normalized_key, self.stable_words)))

    @property
    def keys(self) -> tuple[str, ...]:
        """``stable_keys``, never None."""
        assert self.stable_keys is not None
        return self.stable_keys

    @property
    def stable_prefix(self) -> str:
        return " ".join(self.stable_words)

    @property
    def unstable_suffix(self) -> str:
        return " ".join(self.unstable_words)

    @property
    def stable_word_count(self) -> int:
        return len(self.stable_words)

    @property
    def text(self) -> str:
        return " ".join(self.stable_words + self.unstable_words)


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
        self._stable_keys: list[str] = []
        self._stable_surface: list[str] = []
        self._last_keys: list[str] | None = None
        self._last_end: int | None = 0
        """Where the stable prefix ended in the last revision; None if it was unaligned."""
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
        # What this revision and the one before agree on; the final word is never stable
        # until a later revision confirms it.
        reach = min(_common_prefix_len(self._last_keys or [], keys), len(keys) - 1)
        revised = not agrees and reach > n_stable
        if agrees:
            # the last revision may have misread a committed word and still agree on what
            # follows it: compare what each says after the stable prefix
            reach = max(reach, n_stable + self._agreed_after(keys, n_stable))
        end: int | None = n_stable
        if reach > n_stable:
            self._stable_keys = keys[:reach]
            n_stable = end = reach
        elif not agrees:
            end = self._realign(keys)
        if agrees or revised:
            self._stable_surface = words[:n_stable]
        if not agrees:
            self.contradictions += 1
        self.revisions += 1
        repeated = keys == self._last_keys
        self._last_keys = keys
        self._last_end = end
        return Hypothesis(
            turn_id=self.turn_id,
            stable_words=tuple(self._stable_surface),
            # an unconfirmed reading that cannot be aligned shows nothing past the stable prefix:
            # its words would land at places no revision put them ("book a table cable")
            unstable_words=() if end is None else tuple(words[end:]),
            revision=self.revisions,
            final=False,
            contradiction=not agrees,
            revised=revised,
            repeated=repeated,
            stable_keys=tuple(self._stable_keys),
        )

    def _agreed_after(self, keys: list[str], end: int | None) -> int:
        """How many words after ``end`` (where the stable prefix ends in this revision) the
        last revision also had after its own end; the final word never counts."""
        last, last_end = self._last_keys, self._last_end
        if end is None or last is None or last_end is None:
            return 0
        return min(_common_prefix_len(last[last_end:], keys[end:]), len(keys) - end - 1)

    def _realign(self, keys: list[str]) -> int | None:
        """Where, in a contradicting partial, the committed stable prefix ends: what of the
        partial to show after it, until the new reading is confirmed (``None``: nothing).

        The recognizer may go on agreeing with itself after the point it changed its
        mind ("pears under loaf" -> "pears and a loaf", "the next order." -> "the next
        quarter."). Committed words are looked for within a few words of where the prefix would
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
        self._stable_surface = words
        self.revisions += 1
        self.final = True
        return Hypothesis(
            turn_id=self.turn_id,
            stable_words=tuple(words),
            unstable_words=(),
            revision=self.revisions,
            final=True,
            stable_keys=tuple(keys),
        )

    @property
    def stable_prefix(self) -> str:
        return " ".join(self._stable_surface)
