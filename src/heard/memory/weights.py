"""What each signal of evidence recall weighs (``heard.memory.evidence``), and where each
value was measured: LoCoMo's dev set (bench/locomo.py), recall@10 of the turns that answer."""

from __future__ import annotations

__all__ = [
    "COSINE_NEIGHBOUR_SHARE",
    "DATE_BOOST",
    "DATE_GRACE_DAYS",
    "FULL_PASS_RATIO",
    "K1",
    "NEIGHBOUR_OFFSETS",
    "NEIGHBOUR_SHARE",
    "NEIGHBOUR_WINDOW",
    "PAIR_WEIGHT",
    "SESSION_CANDIDATES",
    "SESSION_SHARE",
    "SPEAKER_BOOST",
    "SPREAD",
    "B",
]

NEIGHBOUR_SHARE = 0.5
NEIGHBOUR_WINDOW = 2
NEIGHBOUR_OFFSETS = (2, 1, 1, 2)
"""How far each of [before2, before1, after1, after2] is: it gets NEIGHBOUR_SHARE / offset."""
SPREAD = sum(NEIGHBOUR_SHARE / offset for offset in NEIGHBOUR_OFFSETS)
"""The most an item gains from its neighbours, as a multiple of the best of them."""
FULL_PASS_RATIO = 10
"""Candidates beyond one item in this many: a pass over every item is cheaper (bench/locomo.py
--scale)."""
SPEAKER_BOOST = 1.8
"""A named speaker's turns, after neighbours and sessions (LoCoMo dev R@10 0.720 -> 0.745;
applied to the BM25 score before neighbours instead: x1.4 was best, 0.720)."""
K1, B = 0.9, 0.4
"""BM25 parameters for short conversational turns (LoCoMo dev: R@10 0.696 vs 0.679 at 1.5/0.75)."""
SESSION_SHARE = 0.4
"""Of the best score in a candidate's session (LoCoMo dev: R@10 0.701 -> 0.720; 0.2: 0.717,
0.8: 0.718)."""
SESSION_CANDIDATES = 100
"""How many of the best candidates (at least 4k) the session signal reranks."""
PAIR_WEIGHT = 0.5
"""Of the word-pair field against the single words (LoCoMo dev R@10 lexical 0.745 -> 0.756,
with the dense scout 0.761 -> 0.780; 0.3: 0.751, 0.6: 0.758 and 0.779, 1.0: 0.750; pairs of
stemmed words without stopwords: 0.747; skip-pairs and triples: no better)."""
DATE_BOOST = 2.5
"""A turn said in the days a question names ("on 13 October, 2023", "in June"): its final
score x2.5 (LoCoMo dev R@10, each turn's time its session's: lexical 0.756 -> 0.772, dense
0.780 -> 0.798; x1.5: 0.763 and 0.795, x2: 0.770 and 0.798, x3: 0.773 and 0.797; the date's
words also taken out of the lexical query: no better)."""
DATE_GRACE_DAYS = 3
"""An event is told of on its day or in the days after: a turn up to this many days after the
named ones counts as said in them (LoCoMo dev R@10 with the dense scout: 0 days 0.797, 2-3
0.798, 7 0.795), and so does one the day before (a time kept in UTC can fall on the day before
the speaker's own: 0.798 all the same)."""
COSINE_NEIGHBOUR_SHARE = 0.25
"""The cosine's share to neighbours (LoCoMo dev R@10: none 0.754, 0.15 0.757, 0.25 0.764,
0.5 0.757)."""
