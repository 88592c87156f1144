"""An incremental BM25 index over heard's tokenizer.

Documents are added one at a time and are searchable at once (a new final can be
recalled in the same turn). Postings are per-term arrays of (document, term
frequency); a query walks only its terms' postings, so its cost follows how
common its words are, not how big the index is. Scores are BM25 as Lucene (and
bm25s) compute it: IDF ``log(1 + (N - df + 0.5) / (df + 0.5))`` and no ``(k1 + 1)``
factor in the numerator (it scales every score alike), checked against ``bm25s``
in tests/memory/test_bm25.py.
"""

from __future__ import annotations

import math
from array import array
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from heard.transcript.tokenize import ENGLISH_STOPWORDS, tokenize

__all__ = ["BM25Index", "Hit", "light_stem"]

_SUFFIXES = (
    ("ies", "y"), ("sses", "ss"), ("ness", ""), ("ment", ""), ("ing", ""),
    ("edly", ""), ("ed", ""), ("ly", ""), ("es", ""), ("s", ""),
)  # fmt: skip


def light_stem(token: str) -> str:
    """Strip one common English suffix, keeping at least three letters.

    Deliberately light: it merges "paints", "painted" and "painting", and leaves
    irregular forms alone. On LoCoMo's dev questions it lifts recall@10 by about
    two points over no stemming (bench/locomo.py).
    """
    for suffix, replacement in _SUFFIXES:
        if token.endswith(suffix) and len(token) - len(suffix) >= 3:
            return token[: -len(suffix)] + replacement
    return token


@dataclass(frozen=True, slots=True)
class Hit:
    doc: int
    """The document's position, in the order documents were added."""
    score: float


class BM25Index:
    """BM25 over documents added with ``add``; ``search`` returns the top ``k`` hits."""

    def __init__(
        self,
        *,
        k1: float = 1.5,
        b: float = 0.75,
        stopwords: Iterable[str] = ENGLISH_STOPWORDS,
        stem: bool = False,
    ):
        if k1 < 0 or not 0 <= b <= 1:
            raise ValueError(f"need k1 >= 0 and 0 <= b <= 1, got k1={k1}, b={b}")
        self.k1, self.b = k1, b
        self.stopwords = frozenset(stopwords)
        self.stem = stem
        self._docs: dict[str, array[int]] = {}
        self._tfs: dict[str, array[int]] = {}
        self._lengths = array("i")
        self._total_length = 0
        self._norms: npt.NDArray[np.float32] | None = None

    def __len__(self) -> int:
        return len(self._lengths)

    def tokens(self, text: str) -> list[str]:
        tokens = tokenize(text, stopwords=self.stopwords)
        return [light_stem(t) for t in tokens] if self.stem else tokens

    def add(self, text: str) -> int:
        """Index ``text``; returns its document number."""
        return self.add_tokens(self.tokens(text))

    def add_tokens(self, tokens: Sequence[str]) -> int:
        doc = len(self._lengths)
        for term, tf in Counter(tokens).items():
            postings = self._docs.get(term)
            if postings is None:
                self._docs[term] = array("i", (doc,))
                self._tfs[term] = array("i", (tf,))
            else:
                postings.append(doc)
                self._tfs[term].append(tf)
        self._lengths.append(len(tokens))
        self._total_length += len(tokens)
        return doc

    def idf(self, term: str) -> float:
        df = len(self._docs.get(term, ()))
        n = len(self._lengths)
        return math.log(1 + (n - df + 0.5) / (df + 0.5))

    def scores(self, query: str | Sequence[str]) -> dict[int, float]:
        """Every matching document's score (documents matching no query term are absent)."""
        terms = self.tokens(query) if isinstance(query, str) else list(query)
        n = len(self._lengths)
        if not n or not terms:
            return {}
        avgdl = self._total_length / n or 1.0
        k1, b, lengths = self.k1, self.b, self._lengths
        norm = k1 * (1 - b)
        per_len = k1 * b / avgdl
        totals: dict[int, float] = {}
        for term, weight in Counter(terms).items():
            postings = self._docs.get(term)
            if postings is None:
                continue
            idf = self.idf(term) * weight
            get = totals.get
            for doc, tf in zip(postings, self._tfs[term], strict=True):
                totals[doc] = get(doc, 0.0) + idf * tf / (tf + norm + per_len * lengths[doc])
        return totals

    def score_vector(self, query: str | Sequence[str]) -> npt.NDArray[np.float32]:
        """Scores of every document as one float32 array (0 where no query term matches).

        Vectorized over each term's postings (read from the arrays in place), so a
        common term in a million documents costs milliseconds, not a Python loop. Each
        document's length norm is computed once per change of the index, not per posting.
        """
        terms = self.tokens(query) if isinstance(query, str) else list(query)
        n = len(self._lengths)
        out = np.zeros(n, dtype=np.float32)
        if not n or not terms:
            return out
        norm = self._length_norms()
        for term, weight in Counter(terms).items():
            postings = self._docs.get(term)
            if postings is None:
                continue
            docs = np.frombuffer(postings, dtype=np.int32)
            tf = np.frombuffer(self._tfs[term], dtype=np.int32).astype(np.float32)
            out[docs] += np.float32(self.idf(term) * weight) * tf / (tf + norm[docs])
        return out

    def _length_norms(self) -> npt.NDArray[np.float32]:
        """``k1 (1 - b + b |d| / avgdl)`` per document, kept until a document is added."""
        n = len(self._lengths)
        if self._norms is None or len(self._norms) != n:
            lengths = np.frombuffer(self._lengths, dtype=np.int32)
            avgdl = self._total_length / n or 1.0
            self._norms = (self.k1 * (1 - self.b + self.b * lengths / avgdl)).astype(np.float32)
        return self._norms

    def search(self, query: str | Sequence[str], k: int = 10) -> list[Hit]:
        """The ``k`` best documents, best first (ties: earlier document first)."""
        scores = self.score_vector(query)
        k = min(k, len(scores))
        if k <= 0:
            return []
        kth = np.min(scores[np.argpartition(-scores, k - 1)[:k]])
        tied_in = np.flatnonzero(scores >= max(kth, np.nextafter(0.0, 1.0)))
        ranked = sorted(tied_in.tolist(), key=lambda d: (-scores[d], d))[:k]
        return [Hit(d, float(scores[d])) for d in ranked]
