"""Evidence: final utterances a conversation produced, and lexical recall over them.

Only finals are evidence; a partial is refused. Recall is BM25 (light stemming)
plus two signals a conversation carries, both measured on LoCoMo's dev set
(bench/locomo.py):

* neighbouring turns: an answer often sits next to the turn that matches the
  question's words ("Did you go?" / "Yes, last Sunday."), so each hit lends a
  share of its score to the two turns either side in the same conversation
  (half to the adjacent ones, a quarter to the next);
* the speaker: a question that names someone ("When did Caroline...") favours
  that person's own turns (their final score x1.8);
* the session: a conversation talks about one thing for a while, so among the best
  candidates each turn gains a share of the best score in its own session (x0.4): a
  turn where the question's topic is being discussed beats an equal match elsewhere;
* word pairs: adjacent words, kept as they are (stopwords too: "went to", "support group"),
  are a second BM25 field beside the stemmed single words, at half their weight: a turn that
  says the question's phrase beats one that has its words scattered;
* the date: a question that names days ("on 13 October, 2023", "in June", when.py) favours
  the turns said in them or in the few days after (their final score x2.5).
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Iterable, KeysView
from dataclasses import dataclass
from datetime import UTC, date
from itertools import pairwise

import numpy as np

from heard.errors import InputError
from heard.memory.bm25 import BM25Index
from heard.memory.dense import DenseIndex, Embedder
from heard.memory.language import analyze, guess, primary
from heard.memory.weights import (
    COSINE_NEIGHBOUR_SHARE,
    DATE_BOOST,
    DATE_GRACE_DAYS,
    FULL_PASS_RATIO,
    K1,
    NEIGHBOUR_OFFSETS,
    NEIGHBOUR_SHARE,
    NEIGHBOUR_WINDOW,
    PAIR_WEIGHT,
    SESSION_CANDIDATES,
    SESSION_SHARE,
    SPEAKER_BOOST,
    SPREAD,
    B,
)
from heard.memory.when import named_dates
from heard.transcript.tokenize import tokenize
from heard.utterance import Evidence

__all__ = ["MAX_QUERY_CHARS", "Evidence", "EvidenceIndex", "Recalled", "embedded_text"]

MAX_QUERY_CHARS = 2000
"""Longer queries are cut here (a recall query is a question, not a document)."""


def embedded_text(evidence: Evidence) -> str:
    """What the index reads of an item (and the dense scout encodes): ``speaker: text``."""
    return f"{evidence.speaker}: {evidence.text}"


def said_day(evidence: Evidence) -> int:
    """The UTC day ``evidence`` was said (proleptic ordinal; 0: not known), as the database
    keeps it, so an index read back ranks as the one that heard it (a time without a zone is
    taken as UTC)."""
    if evidence.t is None:
        return 0
    try:
        said = evidence.t.astimezone(UTC) if evidence.t.tzinfo is not None else evidence.t
    except OverflowError:
        raise InputError(
            f"evidence {evidence.id!r}: its time {evidence.t} is out of range"
        ) from None
    return said.date().toordinal()


def word_pairs(text: str) -> list[str]:
    """Adjacent words of ``text``, as the pair field indexes them: "went to", "to the"."""
    words = tokenize(text)
    return [f"{a} {b}" for a, b in pairwise(words)]


@dataclass(frozen=True, slots=True)
class Recalled:
    id: str
    kind: str
    """"evidence" or "page"."""
    score: float
    text: str
    speaker: str = ""


class EvidenceIndex:
    """Evidence added as it is heard (``add``) and recalled at once (``recall``)."""

    def __init__(self, embedder: Embedder | None = None) -> None:
        self.embedder = embedder
        self._dense = None if embedder is None else DenseIndex(embedder.dim, embedder.unrelated)
        self._bm25 = BM25Index(k1=K1, b=B, stem=True)  # fed tokens analyzed per language
        self._pairs = BM25Index(k1=K1, b=B)
        self._items: list[Evidence] = []
        self._last_in: dict[str, int] = {}  # conversation -> its latest doc
        # neighbours within the conversation, -1 when none: [before2, before1, after1, after2]
        self._near = [array("i") for _ in range(2 * NEIGHBOUR_WINDOW)]
        self._speaker_of = array("i")
        self._speaker_ids: dict[str, int] = {}
        self._session_of = array("i")  # -1: no session
        self._session_ids: dict[tuple[str, str], int] = {}
        self._day = array("i")  # the UTC day it was said (proleptic ordinal), 0: not known
        self._years: set[int] = set()
        self._ids: dict[str, int] = {}
        self._gone = bytearray()  # 1: forgotten (``forget``), never recalled again
        self._languages: Counter[str] = Counter()
        self._spoken_in: dict[str, Counter[str]] = {}  # conversation -> its items' languages
        self.truncated_last_query = False

    def __contains__(self, evidence_id: object) -> bool:
        return evidence_id in self._ids

    def __len__(self) -> int:
        return len(self._items)

    def ids(self) -> KeysView[str]:
        """The ids of the items held (and not forgotten)."""
        return self._ids.keys()

    def forget(self, ids: Iterable[str]) -> int:
        """Never recall these items again (a meeting rebuilt or deleted); how many were held.
        They keep their place (and their share of the BM25 statistics) until the index is
        made again, which ``forgotten`` tells when to do."""
        docs = [self._ids.pop(i) for i in set(ids) if i in self._ids]
        for doc in docs:
            self._gone[doc] = 1
        return len(docs)

    @property
    def forgotten(self) -> float:
        """The share of the index's items that are forgotten."""
        return (len(self._items) - len(self._ids)) / max(1, len(self._items))

    def add(self, evidence: Evidence) -> None:
        """Add one final: searchable as soon as this returns."""
        self.extend((evidence,))

    def extend(self, items: Iterable[Evidence], vectors: np.ndarray | None = None) -> None:
        """Add items (all of them or, on a bad one, none). With an embedder, ``vectors`` are
        theirs (stored ones, one row per item); without them they are made in one batch."""
        batch = list(items)
        seen: set[str] = set()
        for evidence in batch:
            if not evidence.id:
                raise InputError("evidence needs an id")
            if evidence.id in self._ids or evidence.id in seen:
                raise InputError(f"evidence {evidence.id!r} is already in memory")
            seen.add(evidence.id)
        days = [said_day(evidence) for evidence in batch]
        if self._dense is not None and batch:
            if vectors is None:
                assert self.embedder is not None
                vectors = self.embedder.embed([embedded_text(e) for e in batch])
            if vectors.shape != (len(batch), self._dense.dim):
                raise ValueError(f"expected {len(batch)} vectors, got {vectors.shape}")
            self._dense.add(vectors)
        for evidence, day in zip(batch, days, strict=True):
            self._add(evidence, day)

    def language_of(self, evidence: Evidence) -> str:
        """The language ``evidence`` is analyzed in: its own, else the one its text shows,
        else its conversation's so far, else the memory's, else English."""
        told = primary(evidence.language)
        if told:
            return told
        shown = guess(evidence.text)
        if shown:
            return shown
        spoken = self._spoken_in.get(evidence.conversation) or self._languages
        return spoken.most_common(1)[0][0] if spoken else "en"

    def _lexical(self, query: str) -> np.ndarray:
        """BM25 of ``query`` read in each language the memory holds, the best per item: an
        item indexed in one language is matched by the query read in it, so a short question
        in a memory of several languages needs no guess of its own."""
        languages = sorted(self._languages) or ["en"]
        scores = self._bm25.score_vector(analyze(query, languages[0]))
        for language in languages[1:]:
            np.maximum(scores, self._bm25.score_vector(analyze(query, language)), out=scores)
        return scores

    def _add(self, evidence: Evidence, day: int) -> None:
        language = self.language_of(evidence)
        self._languages[language] += 1
        self._spoken_in.setdefault(evidence.conversation, Counter())[language] += 1
        doc = self._bm25.add_tokens(analyze(embedded_text(evidence), language))
        self._pairs.add_tokens(word_pairs(evidence.text))
        before2, before1, after1, after2 = self._near
        prev = self._last_in.get(evidence.conversation, -1)
        prev2 = before1[prev] if prev >= 0 else -1
        before1.append(prev)
        before2.append(prev2)
        after1.append(-1)
        after2.append(-1)
        if prev >= 0:
            after1[prev] = doc
        if prev2 >= 0:
            after2[prev2] = doc
        self._last_in[evidence.conversation] = doc
        speaker = evidence.speaker.casefold()
        self._speaker_of.append(self._speaker_ids.setdefault(speaker, len(self._speaker_ids)))
        key = (evidence.conversation, evidence.session)
        self._session_of.append(
            self._session_ids.setdefault(key, len(self._session_ids)) if evidence.session else -1
        )
        self._day.append(day)
        if day:
            self._years.add(date.fromordinal(day).year)
        self._items.append(evidence)
        self._ids[evidence.id] = doc
        self._gone.append(0)

    def recall(self, query: str, k: int = 10) -> list[Recalled]:
        query = query.strip()
        if not query:
            raise InputError("the query is empty")
        self.truncated_last_query = len(query) > MAX_QUERY_CHARS
        query = query[:MAX_QUERY_CHARS]
        scores = self._lexical(query)
        if not len(scores):
            return []
        pairs = word_pairs(query)
        if pairs:
            scores += np.float32(PAIR_WEIGHT) * self._pairs.score_vector(pairs)
        gone = np.frombuffer(self._gone, dtype=np.bool_)
        scores[gone] = 0  # nor do they lend neighbours a share
        named = [self._speaker_ids[t] for t in set(tokenize(query)) if t in self._speaker_ids]
        dated = self._said_on(query)
        dense = self.embedder is not None and self._dense is not None
        boost = SPEAKER_BOOST if named else 1
        targets = self._candidates(scores, k, everything=dense, boost=boost, dated=dated)
        if not len(targets) and not dense:
            return []
        near = [np.frombuffer(n, dtype=np.int32) for n in self._near]
        padded = np.append(scores, 0.0)  # index -1 reads this zero: "no neighbour"
        spread = scores[targets].copy()
        for n, offset in zip(near, NEIGHBOUR_OFFSETS, strict=True):
            spread += NEIGHBOUR_SHARE / offset * padded[n[targets]]
        if self._session_ids:
            self._session_context(targets, spread, k)
        if named:
            speakers = np.frombuffer(self._speaker_of, dtype=np.int32)[targets]
            spread[np.isin(speakers, named)] *= SPEAKER_BOOST
        if self.embedder is not None and self._dense is not None:
            targets, spread = self._fuse(query, targets, spread, len(scores))
        if dated is not None:
            spread[dated[targets]] *= DATE_BOOST
        spread[gone[targets]] = 0
        k = min(k, len(spread))
        kth = spread[np.argpartition(-spread, k - 1)[:k]].min()
        # everything tied with the k-th score stays in, so ties break by position, not by chance
        keep = np.flatnonzero(spread >= kth)
        top = targets[keep]
        spread_of = dict(zip(top.tolist(), spread[keep].tolist(), strict=True))
        best = sorted(
            ((int(d), spread_of[int(d)]) for d in top if spread_of[int(d)] > 0),
            key=lambda x: (-x[1], x[0]),
        )[:k]
        return self._recalled(best)

    def _said_on(self, query: str) -> np.ndarray | None:
        """Which items were said in the days ``query`` names, from the day before to
        DATE_GRACE_DAYS after (None: it names none, or none was said then)."""
        if not self._years:
            return None
        ranges = [r for named in named_dates(query) for r in named.days(sorted(self._years))]
        if not ranges:
            return None
        days = np.frombuffer(self._day, dtype=np.int32)
        said = np.zeros(len(days), dtype=bool)
        for first, last in ranges:
            said |= (days >= first - 1) & (days <= last + DATE_GRACE_DAYS)
        return said if said.any() else None

    def _candidates(
        self,
        scores: np.ndarray,
        k: int,
        *,
        everything: bool,
        boost: float = 1.0,
        dated: np.ndarray | None = None,
    ) -> np.ndarray:
        """The items whose final score can reach the top: the best ``depth`` (k, or the
        session signal's candidates) are among them. An item that is under
        ``floor = depth-th score / ((1 + SPREAD) x boost)`` and whose neighbours all are,
        gains less than ``SPREAD x floor`` from them and, boosted, stays under the depth-th
        score: it can be left out. The rest are the items over the floor and their
        neighbours; and of the items said on the days the query names (``dated``), which
        climb DATE_BOOST times higher, those that are or have a neighbour over
        ``floor / DATE_BOOST``. With ``everything`` (the dense scout scores every item) the
        floor is 0: every match and its neighbours."""
        n = len(scores)
        depth = min(n, max(SESSION_CANDIDATES, 4 * k) if self._session_ids else k)
        floor = 0.0
        if not everything and depth < n:
            floor = self._depth_score(scores, depth) / ((1 + SPREAD) * boost)
        seeds = np.flatnonzero(scores >= floor) if floor > 0 else np.flatnonzero(scores)
        if len(seeds) * FULL_PASS_RATIO >= n:
            # most items are candidates: one pass over all costs less than collecting them
            return np.arange(n)
        chosen = np.zeros(n + 1, dtype=bool)  # the last slot takes "no neighbour" (-1)
        chosen[seeds] = True
        for m in self._near:
            chosen[np.frombuffer(m, dtype=np.int32)[seeds]] = True
        if dated is not None and floor > 0:
            said = np.flatnonzero(dated)
            padded = np.append(scores, scores.dtype.type(0))
            best = scores[said]
            for m in self._near:
                best = np.maximum(best, padded[np.frombuffer(m, dtype=np.int32)[said]])
            chosen[said[best >= floor / DATE_BOOST]] = True
        result: np.ndarray = np.flatnonzero(chosen[:n])
        return result

    @staticmethod
    def _depth_score(scores: np.ndarray, depth: int) -> float:
        """The ``depth``-th best score (0 when fewer items score), found among the items
        over a threshold halved from the best score until enough are over it: a partial
        sort of those few, not of every item."""
        threshold = float(scores.max())
        for _ in range(16):
            if threshold <= 0:
                break
            threshold /= 2
            over = scores[scores >= threshold]
            if len(over) >= depth:
                return float(np.partition(over, len(over) - depth)[len(over) - depth])
        return 0.0

    def _session_context(self, targets: np.ndarray, spread: np.ndarray, k: int) -> None:
        """Among the best candidates, each gains SESSION_SHARE of the best score in its
        session (in place)."""
        n = min(len(spread), max(SESSION_CANDIDATES, 4 * k))
        best = np.argpartition(-spread, n - 1)[:n]
        sessions = np.frombuffer(self._session_of, dtype=np.int32)[targets[best]]
        chosen = (sessions >= 0) & (spread[best] > 0)
        best, sessions = best[chosen], sessions[chosen]
        if not len(best):
            return
        top_of = np.zeros(len(self._session_ids))
        np.maximum.at(top_of, sessions, spread[best])
        spread[best] += SESSION_SHARE * top_of[sessions]

    def _fuse(
        self, query: str, targets: np.ndarray, spread: np.ndarray, n: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """The dense scout: lexical scores scaled to [0, 1] plus the cosine (rescaled, weighted
        as the embedder was measured to fuse best), for all items;
        like the lexical score, an item's cosine lends a share to its neighbours."""
        if self.embedder is None or self._dense is None:
            return targets, spread
        cosine = np.clip(self._dense.scores(self.embedder.embed_query(query)), 0.0, None)
        padded = np.append(cosine, np.float32(0.0))
        near = cosine.copy()
        for m, offset in zip(self._near, NEIGHBOUR_OFFSETS, strict=True):
            near += COSINE_NEIGHBOUR_SHARE / offset * padded[np.frombuffer(m, dtype=np.int32)]
        lexical = np.zeros(n)
        lexical[targets] = spread
        best = np.max(lexical)
        if best > 0:
            lexical /= best
        fused = lexical + self.embedder.weight * near
        return np.arange(n), fused

    def _recalled(self, best: list[tuple[int, float]]) -> list[Recalled]:
        return [
            Recalled(
                self._items[d].id,
                "evidence",
                round(s, 4),
                self._items[d].text,
                self._items[d].speaker,
            )
            for d, s in best
        ]
