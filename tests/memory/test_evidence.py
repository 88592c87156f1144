from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta, timezone

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import heard.memory.evidence as evidence_module
from heard.errors import InputError
from heard.memory.evidence import MAX_QUERY_CHARS, Evidence, EvidenceIndex


def conversation(index: EvidenceIndex, name: str, turns: list[tuple[str, str]]) -> None:
    for i, (speaker, text) in enumerate(turns):
        index.add(Evidence(id=f"{name}:{i}", speaker=speaker, text=text, conversation=name))


def test_the_answer_next_to_the_matching_turn_is_recalled() -> None:
    index = EvidenceIndex()
    conversation(index, "c1", [
        ("Mel", "Did you finally go to the pottery workshop?"),
        ("Caro", "Yes! Last Sunday, it was wonderful."),
        ("Mel", "My kids love the beach in summer."),
        ("Caro", "We should plan a camping trip."),
    ])  # fmt: skip
    ids = [r.id for r in index.recall("When did Caro go to the pottery workshop?", k=2)]
    # the answer carries no query word but the speaker's name: it rides on its neighbour
    # (and, Caro being named, comes first)
    assert ids == ["c1:1", "c1:0"]


def test_a_turn_saying_the_questions_phrase_beats_one_with_its_words_scattered() -> None:
    index = EvidenceIndex()
    for i, text in enumerate([
        "Last month I finally started going to a support group for new parents in town",
        "The group was my support.",
    ]):  # fmt: skip
        index.add(Evidence(id=f"t{i}", speaker="ana", text=text, conversation=f"c{i}"))
    # single words alone rank the short turn first (both hold "support" and "group")
    assert index._bm25.search("support group")[0].doc == 1
    assert [r.id for r in index.recall("Who went to the support group?", k=2)] == ["t0", "t1"]
    assert evidence_module.word_pairs("Went to the support-group!") == [
        "went to", "to the", "the support", "support group"
    ]  # fmt: skip


def test_neighbours_stay_inside_their_conversation() -> None:
    index = EvidenceIndex()
    conversation(index, "a", [("x", "pottery workshop on sunday")])
    conversation(index, "b", [("y", "unrelated chatter about trains"), ("y", "more trains")])
    ids = [r.id for r in index.recall("pottery workshop", k=5)]
    assert ids == ["a:0"]


def test_a_named_speaker_is_preferred() -> None:
    index = EvidenceIndex()
    turns = [
        ("Caroline", "I adopted a dog"),
        ("x", "filler one"),
        ("x", "filler two"),
        ("Melanie", "I adopted a dog"),
        ("x", "filler three"),
        ("x", "filler four"),
    ]
    conversation(index, "c", turns)
    assert index.recall("Did Melanie adopt a dog?", k=1)[0].id == "c:3"
    assert index.recall("Did Caroline adopt a dog?", k=1)[0].id == "c:0"


def test_bad_queries_and_duplicates() -> None:
    index = EvidenceIndex()
    index.add(Evidence(id="e1", speaker="a", text="hello there"))
    with pytest.raises(InputError, match="empty"):
        index.recall("   ")
    with pytest.raises(InputError, match="already"):
        index.add(Evidence(id="e1", speaker="a", text="again"))
    with pytest.raises(InputError, match="needs an id"):
        index.add(Evidence(id="", speaker="a", text="no id"))
    hits = index.recall("hello " * MAX_QUERY_CHARS)
    assert index.truncated_last_query
    assert [h.id for h in hits] == ["e1"]
    assert EvidenceIndex().recall("anything") == []


def test_the_sparse_path_ranks_exactly_like_a_full_pass() -> None:
    import random

    rng = random.Random(3)
    words = [f"w{i}" for i in range(300)]
    index = EvidenceIndex()
    items = []
    for i in range(3000):
        e = Evidence(
            id=f"e{i}",
            speaker=f"s{i % 3}",
            text=" ".join(rng.choices(words, k=8)),
            conversation=f"c{i // 40}",
        )
        if i % 500 == 7:
            e = Evidence(
                id=e.id, speaker=e.speaker, text=e.text + " rareword", conversation=e.conversation
            )
        index.add(e)
        items.append(e)
    # brute force: BM25 on every item, then each item's neighbours within its conversation
    scores = index._bm25.score_vector("rareword")
    expected = {}
    for d, e in enumerate(items):
        total = scores[d]
        for off, share in ((1, 0.5), (2, 0.25)):
            for n in (d - off, d + off):
                if 0 <= n < len(items) and items[n].conversation == e.conversation:
                    total += share * scores[n]
        expected[e.id] = total
    want = sorted((i for i in expected if expected[i] > 0), key=lambda i: -expected[i])[:10]
    got = index.recall("rareword", k=10)
    assert [h.id for h in got] == want
    assert [h.score for h in got] == pytest.approx([round(expected[i], 4) for i in want], abs=1e-3)


def test_a_turn_in_the_session_of_the_best_match_beats_an_equal_one_elsewhere() -> None:
    filler = ["Sounds good.", "Sure thing!", "Talk soon."]
    index = EvidenceIndex()
    # session "b" is heard first: without the session signal its turn wins the tie
    index.extend(
        Evidence(id=f"b{i}", speaker="Ben", text=text, conversation="c2", t=None, session="b")
        for i, text in enumerate([*filler, "Flights in March are cheap."])
    )
    index.extend(
        Evidence(id=f"a{i}", speaker="Ana", text=text, conversation="c1", t=None, session="a")
        for i, text in enumerate(
            ["My sister moves to Lisbon in March.", *filler, "Flights in March are cheap."]
        )
    )
    ranked = [h.id for h in index.recall("when does the sister move to Lisbon in March", k=9)]
    assert ranked[0] == "a0"
    assert ranked.index("a4") < ranked.index("b3")


def test_without_sessions_equal_turns_keep_their_order() -> None:
    index = EvidenceIndex()
    index.extend(
        Evidence(
            id=f"d{i}", speaker="Ana", text="Flights in March are cheap.", conversation=f"c{i}"
        )
        for i in range(3)
    )
    assert [h.id for h in index.recall("flights in March", k=3)] == ["d0", "d1", "d2"]


WORDS = ["lisbon", "march", "sister", "budget", "dog", "ana", "ben", "green", "kitchen", "friday"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    turns=st.lists(
        st.tuples(
            st.lists(st.sampled_from(WORDS), min_size=1, max_size=6),  # words
            st.sampled_from(["Ana", "Ben", "Cy"]),  # speaker
            st.integers(0, 2),  # conversation
            st.sampled_from(["", "s1", "s2"]),  # session
            st.sampled_from([None, 1, 10, 20]),  # the day of June 2023 it was said
        ),
        min_size=1,
        max_size=120,
    ),
    query=st.lists(st.sampled_from([*WORDS, "cy"]), min_size=1, max_size=4),
    when=st.sampled_from(["", " on June 10, 2023", " on 2023-06-20", " in June"]),
    k=st.integers(1, 8),
)
def test_recall_over_the_candidates_equals_recall_over_every_item(
    turns: list[tuple[list[str], str, int, str, int | None]], query: list[str], when: str, k: int
) -> None:
    """Leaving out items that cannot reach the top never changes the answer (ties included)."""
    index = EvidenceIndex()
    index.extend(
        Evidence(
            id=f"d{i}",
            speaker=speaker,
            text=" ".join(words),
            conversation=f"c{conv}",
            t=datetime(2023, 6, day, 12, tzinfo=UTC) if day else None,
            session=session,
        )
        for i, (words, speaker, conv, session, day) in enumerate(turns)
    )
    query = [*query, when]
    saved = evidence_module.FULL_PASS_RATIO, evidence_module.SESSION_CANDIDATES
    everything = EvidenceIndex._candidates
    try:
        # small enough that a small memory is pruned: the rule holds for any value
        evidence_module.SESSION_CANDIDATES = 4
        evidence_module.FULL_PASS_RATIO = 10**9  # always the candidates, never the full pass
        pruned = index.recall(" ".join(query), k=k)
        EvidenceIndex._candidates = lambda self, scores, k, **_: np.arange(len(scores))  # type: ignore[method-assign]
        full = index.recall(" ".join(query), k=k)
    finally:
        evidence_module.FULL_PASS_RATIO, evidence_module.SESSION_CANDIDATES = saved
        EvidenceIndex._candidates = everything  # type: ignore[method-assign]
    assert [(h.id, h.score) for h in pruned] == [(h.id, h.score) for h in full]


def test_a_run_of_weaker_turns_is_not_left_out_of_the_candidates() -> None:
    """B1 matches less than A (0.58 of its score) but its neighbours match too: it wins on
    spread, so it must be among the candidates although every turn of its run is weaker."""
    index = EvidenceIndex()
    index.add(Evidence(id="A", speaker="Ana", text="alpha alpha alpha", conversation="c1"))
    index.extend(
        Evidence(
            id=f"B{i}", speaker="Ben", text="alpha yankee yankee yankee yankee", conversation="c2"
        )
        for i in range(3)
    )
    index.extend(
        Evidence(id=f"F{i}", speaker="Cy", text="nothing here at all", conversation="c3")
        for i in range(20)
    )
    assert [h.id for h in index.recall("alpha", k=1)] == ["B1"]


class Concepts:
    """An embedder that knows that a puppy is a young dog, and nothing else."""

    name = "concepts"
    dim = 2
    unrelated = 0.0
    weight = 0.9

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        rows = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            dog = any(w in text.lower() for w in ("puppy", "dog"))
            rows[i] = (1.0, 0.0) if dog else (0.0, 1.0)
        return rows

    def embed_query(self, text: str) -> np.ndarray:
        row: np.ndarray = self.embed([text])[0]
        return row


def test_a_turn_next_to_a_dense_match_shares_in_it() -> None:
    index = EvidenceIndex(Concepts())
    index.extend(
        Evidence(id=f"u{i}", speaker="Cy", text="Trains were late.", conversation="other")
        for i in range(3)
    )
    index.extend(
        [
            Evidence(id="A", speaker="Ana", text="I adopted a puppy.", conversation="c"),
            Evidence(
                id="B", speaker="Ana", text="Yes, from the shelter on Elm Street.", conversation="c"
            ),
        ]
    )
    ranked = [h.id for h in index.recall("young dog?", k=5)]
    assert ranked[:2] == ["A", "B"]  # B has no word and no meaning of its own in common


JUNE_10 = datetime(2023, 6, 10, 15, 30, tzinfo=UTC)


def dated(index: EvidenceIndex, days_after_june_10: list[int], text: str) -> None:
    index.extend(
        Evidence(
            id=f"d{n}",
            speaker="Ana",
            text=text,
            conversation=f"c{n}",
            t=JUNE_10 + timedelta(days=n),
        )
        for n in days_after_june_10
    )


@pytest.mark.parametrize(
    ("question", "first"),
    [
        ("What did Ana paint on June 10, 2023?", {"d0", "d2"}),  # that day and 2 days after
        ("What did Ana paint on 10 June?", {"d0", "d2"}),  # any year the memory holds
        ("What did Ana paint in July 2023?", {"d30"}),
        ("What did Ana paint in 2024?", {"d400"}),
        ("What did Ana paint on 2023-06-10?", {"d0", "d2"}),
    ],
)
def test_a_question_naming_a_day_favours_what_was_said_then(question: str, first: set[str]) -> None:
    index = EvidenceIndex()
    # d-20 is heard first and says the most: it wins whenever the date is not read
    index.add(
        Evidence(
            id="d-20",
            speaker="Ana",
            text="I paint, paint, paint a sunset",
            conversation="c",
            t=JUNE_10 - timedelta(20),
        )
    )
    dated(index, [0, 2, 7, 30, 400], "I paint a sunset")
    ranked = [h.id for h in index.recall(question, k=6)]
    assert set(ranked[: len(first)]) == first, ranked


def test_without_a_date_or_a_time_the_order_is_the_words_alone() -> None:
    index = EvidenceIndex()
    dated(index, [7, 0], "I paint a sunset")
    # no date named: position breaks the tie
    assert [h.id for h in index.recall("What did Ana paint?", k=2)] == ["d7", "d0"]
    undated = EvidenceIndex()
    undated.extend(
        Evidence(id=f"u{i}", speaker="Ana", text="I paint a sunset", conversation="c")
        for i in range(2)
    )
    assert [h.id for h in undated.recall("What did Ana paint on June 10, 2023?", k=2)] == [
        "u0",
        "u1",
    ]


def test_a_run_of_weaker_turns_said_on_the_named_day_is_not_left_out_of_the_candidates() -> None:
    """Each B matches a third of A, under the floor A sets without the date; said on the
    named day, the middle one wins on spread x2.5, so the floor must count the date."""
    index = EvidenceIndex()
    index.add(Evidence(id="A", speaker="Ana", text="alpha bravo", conversation="c1", t=JUNE_10))
    index.extend(
        Evidence(
            id=f"B{i}",
            speaker="Ben",
            text="alpha yankee",
            conversation="c2",
            t=JUNE_10 + timedelta(days=10),
        )
        for i in range(5)
    )
    index.extend(
        Evidence(id=f"F{i}", speaker="Cy", text="nothing here at all", conversation="c3")
        for i in range(20)
    )
    assert [h.id for h in index.recall("alpha bravo", k=1)] == ["A"]
    assert [h.id for h in index.recall("alpha bravo on June 20, 2023", k=1)] == ["B2"]


def test_a_day_kept_in_utc_still_counts_when_it_was_the_next_day_for_the_speaker() -> None:
    index = EvidenceIndex()
    index.add(
        Evidence(
            id="week-before",
            speaker="Ana",
            text="I paint a sunset",
            conversation="c",
            t=JUNE_10 - timedelta(7),
        )
    )
    # 23:30 UTC on 9 June: already 10 June where Ana lives
    late = datetime(2023, 6, 9, 23, 30, tzinfo=UTC)
    index.add(
        Evidence(id="late", speaker="Ana", text="I paint a sunset", conversation="c2", t=late)
    )
    assert [h.id for h in index.recall("What did Ana paint on June 10, 2023?", k=2)] == [
        "late",
        "week-before",
    ]


def test_a_dated_turn_that_matches_nothing_itself_still_rides_on_its_neighbours() -> None:
    """B2 matches no word; its neighbours each match a little more than a third of an A,
    under the floor the five As set. Said on the named day, B2's share of them beats every
    A: it must be a candidate for what its neighbours match, not only for its own words."""
    index = EvidenceIndex()
    index.extend(
        Evidence(id=f"A{i}", speaker="Ana", text="alpha bravo", conversation=f"a{i}", t=JUNE_10)
        for i in range(5)
    )
    index.extend(
        Evidence(
            id=f"B{i}",
            speaker="Ben",
            text="zulu" if i == 2 else "alpha yankee yankee",
            conversation="c2",
            t=JUNE_10 + timedelta(days=10),
        )
        for i in range(5)
    )
    # enough others that the candidates are collected, not every item scored
    index.extend(
        Evidence(id=f"F{i}", speaker="Cy", text="nothing here at all", conversation="c3")
        for i in range(100)
    )
    recalled = {h.id for h in index.recall("alpha bravo on June 20, 2023", k=5)}
    assert recalled == {f"B{i}" for i in range(5)}


@pytest.mark.parametrize("day", range(4, 14))
def test_a_time_with_an_offset_ranks_as_the_same_time_read_back_in_utc(day: int) -> None:
    """The database keeps UTC: an index that heard "01:00 on 10 June, +10:00" and one read
    back with "15:00 on 9 June, UTC" answer every dated question alike."""
    sydney = timezone(timedelta(hours=10))
    heard, read_back = EvidenceIndex(), EvidenceIndex()
    for index, t in ((heard, datetime(2023, 6, 10, 1, tzinfo=sydney)),
                     (read_back, datetime(2023, 6, 9, 15, tzinfo=UTC))):  # fmt: skip
        index.add(
            Evidence(
                id="before",
                speaker="Ana",
                text="I paint a sunset",
                conversation="c1",
                t=JUNE_10 - timedelta(30),
            )
        )
        index.add(
            Evidence(id="said", speaker="Ana", text="I paint a sunset", conversation="c2", t=t)
        )
    question = f"What did Ana paint on June {day}, 2023?"
    assert [h.id for h in heard.recall(question, k=2)] == [
        h.id for h in read_back.recall(question, k=2)
    ]


def test_a_time_out_of_range_is_refused_and_nothing_of_its_batch_is_kept() -> None:
    index = EvidenceIndex()
    first = Evidence(id="ok", speaker="Ana", text="I paint a sunset", conversation="c", t=JUNE_10)
    # 1 January of year 1 at +10:00 is 31 December of year 0 in UTC: no such date
    bad = Evidence(
        id="bad",
        speaker="Ana",
        text="I paint a sunset",
        conversation="c",
        t=datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=10))),
    )
    with pytest.raises(InputError, match="'bad'"):
        index.extend([first, bad])
    assert len(index) == 0
    assert index.recall("What did Ana paint on June 10, 2023?") == []
    index.add(first)
    assert [h.id for h in index.recall("What did Ana paint on June 10, 2023?")] == ["ok"]
