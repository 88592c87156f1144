"""What a final changes in the captions already released: an edit-distance alignment.

Before a final arrives, some of its words may have been released from the partials, and a
few of those may be wrong ("book a table for" released, then the final "look at the cable for
two people"), or may belong to the next utterance (the recognizer finalized a shorter stretch
than its partials had reached). ``align_final`` aligns the released words with the final's,
on normalized words, and says:

* ``edits``: where the final differs from what was released, in order: each replaces some
  released words (a *correction*, when it replaces any) or inserts the final's words that
  were never released;
* ``carried``: released words past the end of the final, which belong to what comes next.

Applying the edits to the released words, then appending nothing, gives the final's words
followed by the carried ones. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from heard.transcript.words import normalized_key

__all__ = ["Edit", "FinalAlignment", "align_final", "align_reading"]


@dataclass(frozen=True, slots=True)
class Edit:
    at: int
    """Index, among the released words, where the edit starts."""
    replaces: int
    """Released words it replaces (0: a pure insertion of words never released)."""
    words: tuple[str, ...]
    """The final's words put there."""


@dataclass(frozen=True, slots=True)
class FinalAlignment:
    edits: tuple[Edit, ...]
    carried: int
    """Released words after the final (a suffix of them), kept for the next utterance."""

    @property
    def corrections(self) -> int:
        """Released words the final contradicts (replaced or dropped)."""
        return sum(e.replaces for e in self.edits)


def _costs(r: list[str], f: list[str]) -> list[list[int]]:
    """cost[i][j]: the edit distance of r[:i] and f[:j] (substitution, insertion, deletion 1)."""
    n, m = len(r), len(f)
    cost = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n + 1):
        cost[i][0] = i
    for j in range(m + 1):
        cost[0][j] = j
    for i in range(1, n + 1):
        row, prev = cost[i], cost[i - 1]
        for j in range(1, m + 1):
            row[j] = min(
                prev[j - 1] + (r[i - 1] != f[j - 1]),
                prev[j] + 1,  # a released word the other reading drops
                row[j - 1] + 1,  # a word of the other reading never released
            )
    return cost


def _edits(
    r: list[str], f: list[str], words: Sequence[str], cost: list[list[int]], i: int, j: int
) -> tuple[Edit, ...]:
    """The edits that turn r[:i] into f[:j] (``words`` are f's surface forms), in order."""
    ops: list[tuple[str, int, int]] = []  # (kind, released index, final index), backwards
    while i > 0 or j > 0:
        if i > 0 and j > 0 and cost[i][j] == cost[i - 1][j - 1] + (r[i - 1] != f[j - 1]):
            ops.append(("match" if r[i - 1] == f[j - 1] else "sub", i - 1, j - 1))
            i, j = i - 1, j - 1
        elif i > 0 and cost[i][j] == cost[i - 1][j] + 1:
            ops.append(("del", i - 1, j))
            i -= 1
        else:
            ops.append(("ins", i, j - 1))
            j -= 1
    ops.reverse()
    edits: list[Edit] = []
    block: list[tuple[str, int, int]] = []

    def close() -> None:
        if block:
            at = block[0][1]
            replaces = sum(kind != "ins" for kind, _, _ in block)
            put = tuple(words[j] for kind, _, j in block if kind != "del")
            edits.append(Edit(at, replaces, put))
            block.clear()

    for op in ops:
        if op[0] == "match":
            close()
        else:
            block.append(op)
    close()
    return tuple(edits)


def align_final(released: Sequence[str], final: Sequence[str]) -> FinalAlignment:
    """Align released words with a final's words (normalized; see the module docstring).

    Cost: a substitution, an insertion or a deletion costs 1, a match 0; released words left
    after the whole final is aligned cost nothing (they are carried). Of equal alignments, the
    one that uses more of the released words wins, so a wrong word is corrected rather than
    carried.
    """
    r = [normalized_key(w) for w in released]
    f = [normalized_key(w) for w in final]
    cost = _costs(r, f)
    n, m = len(r), len(f)
    best = min(range(n + 1), key=lambda i: (cost[i][m], -i))
    return FinalAlignment(_edits(r, f, final, cost, best, m), n - best)


def align_reading(released: Sequence[str], reading: Sequence[str]) -> tuple[tuple[Edit, ...], int]:
    """Align all the released words with the start of a new reading of the same utterance
    (a stable prefix that changed): the edits that turn them into ``reading[:end]``, and
    ``end``. The rest of the reading was never released. Of equal costs, the end closest to
    the released words' count wins."""
    r = [normalized_key(w) for w in released]
    f = [normalized_key(w) for w in reading]
    cost = _costs(r, f)
    n = len(r)
    end = min(range(len(f) + 1), key=lambda j: (cost[n][j], abs(j - n)))
    return _edits(r, f, reading, cost, n, end), end
