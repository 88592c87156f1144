"""A reference port of seed 000's transcript accumulator, for tests only.

Not part of heard: it exists so that ``test_seed_reference.py`` can compare heard's
``TranscriptAccumulator`` with the seed's rule, revision by revision. It keeps the seed's
behaviour deliberately, including what heard changes on purpose:

* words are whitespace-split and compared exactly (no case or punctuation folding);
* the number of stable words after a partial is the common word prefix of that partial and
  the previous one, capped one short of the partial's length (its last word is never stable);
* the stable words are replaced by the partial's first ``stable_len`` words whenever
  ``stable_len`` exceeds the number already stable, whether or not the partial agrees with
  them (the seed has no notion of a contradiction), and are otherwise kept as they were;
* the unstable suffix is the partial's words after as many words as are stable (empty when the
  partial is shorter), so a contradicting partial can show a splice of two readings;
* a final replaces everything wholesale.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SeedAccumulator", "SeedHypothesis"]


@dataclass(frozen=True, slots=True)
class SeedHypothesis:
    """What the seed's accumulator reports after one revision."""

    stable_prefix: str
    unstable_suffix: str
    revision: int
    finalised: bool

    @property
    def stable_words(self) -> list[str]:
        return self.stable_prefix.split()


def _shared_words(a: list[str], b: list[str]) -> int:
    count = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        count += 1
    return count


class SeedAccumulator:
    """Seed 000's accumulator: one turn's stable prefix, by the seed's rule only."""

    def __init__(self, turn_id: object = None) -> None:
        self.begin_turn(turn_id)

    def begin_turn(self, turn_id: object) -> None:
        """Forget everything about the previous turn."""
        self.turn_id = turn_id
        self._previous: list[str] = []
        self._stable: list[str] = []
        self.revision = 0
        self.finalised = False

    def push_partial(self, text: str) -> SeedHypothesis:
        current = text.split()
        stable_len = min(_shared_words(self._previous, current), max(len(current) - 1, 0))
        if stable_len > len(self._stable):
            self._stable = current[:stable_len]
        self._previous = current
        self.revision += 1
        return SeedHypothesis(
            stable_prefix=" ".join(self._stable),
            unstable_suffix=" ".join(current[len(self._stable) :]),
            revision=self.revision,
            finalised=False,
        )

    def finalize(self, text: str) -> SeedHypothesis:
        self._stable = text.split()
        self._previous = list(self._stable)
        self.revision += 1
        self.finalised = True
        return SeedHypothesis(
            stable_prefix=" ".join(self._stable),
            unstable_suffix="",
            revision=self.revision,
            finalised=True,
        )
