from __future__ import annotations

import bm25s
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from heard.memory.bm25 import BM25Index, light_stem

CORPUS = [
    "Caroline went to the LGBTQ support group yesterday",
    "Melanie painted a sunrise over the lake last year",
    "the support group met again and Caroline spoke",
    "kids and work keep Melanie busy",
    "a lake trip with the kids is planned for summer",
]


def test_scores_match_bm25s_on_the_same_tokens() -> None:
    index = BM25Index(stopwords=())
    tokens = [index.tokens(text) for text in CORPUS]
    for t in tokens:
        index.add_tokens(t)
    reference = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
    reference.index(tokens, show_progress=False)
    for query in [
        "caroline support group",
        "lake kids",
        "melanie painted sunrise",
        "unknown words",
    ]:
        q = index.tokens(query)
        expected = reference.get_scores(q)
        assert np.allclose(index.score_vector(q), expected, atol=1e-6)
        dict_scores = index.scores(q)
        assert np.allclose(
            [dict_scores.get(i, 0.0) for i in range(len(CORPUS))], expected, atol=1e-6
        )


def test_documents_are_searchable_as_soon_as_they_are_added() -> None:
    index = BM25Index()
    index.add("we ship on friday")
    assert index.search("saturday") == []
    doc = index.add("actually saturday works better")
    assert [h.doc for h in index.search("saturday")] == [doc]


def test_search_ranks_and_limits() -> None:
    index = BM25Index()
    for text in CORPUS:
        index.add(text)
    hits = index.search("Caroline support group", k=2)
    assert {h.doc for h in hits} == {0, 2}
    assert hits[0].score >= hits[1].score > 0


@pytest.mark.parametrize(
    ("word", "stem"),
    [("paints", "paint"), ("painted", "paint"), ("painting", "paint"), ("stories", "story"),
     ("classes", "class"), ("is", "is"), ("bus", "bus"), ("sing", "sing"), ("happiness", "happi")],
)  # fmt: skip
def test_light_stem(word: str, stem: str) -> None:
    assert light_stem(word) == stem


def test_bad_parameters() -> None:
    with pytest.raises(ValueError, match="k1"):
        BM25Index(k1=-1)
    with pytest.raises(ValueError, match="b="):
        BM25Index(b=2)


TERMS = st.sampled_from(["a1", "b2", "c3", "d4", "e5"])


@given(
    st.lists(st.lists(TERMS, max_size=8), min_size=1, max_size=20),
    st.lists(st.sampled_from(["a1", "b2", "c3", "zz"]), min_size=1, max_size=4),
)
def test_vector_and_dict_scores_agree(docs: list[list[str]], query: list[str]) -> None:
    index = BM25Index(stopwords=())
    for d in docs:
        index.add_tokens(d)
    vector = index.score_vector(query)
    scores = index.scores(query)
    assert np.allclose([scores.get(i, 0.0) for i in range(len(docs))], vector)
    assert all(v > 0 for v in scores.values())
