from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from heard.errors import TurnStateError, UnknownNameError
from heard.transcript.accumulator import TranscriptAccumulator
from heard.transcript.turns import TurnId
from heard.transcript.words import normalized_key


def test_stable_prefix_grows_only_where_consecutive_revisions_agree() -> None:
    acc = TranscriptAccumulator(TurnId("a", 1))
    first = acc.push_partial("where should")
    assert first.stable_prefix == ""
    h = acc.push_partial("where should we eat")
    assert (h.stable_prefix, h.unstable_suffix) == ("where should", "we eat")
    h = acc.push_partial("where should we eat tonight")
    assert (h.stable_prefix, h.unstable_suffix) == ("where should we eat", "tonight")
    assert h.text == "where should we eat tonight"


def test_the_last_word_stays_unstable_even_when_repeated() -> None:
    acc = TranscriptAccumulator()
    acc.push_partial("call my sister")
    h = acc.push_partial("call my sister")
    assert h.stable_prefix == "call my"
    assert h.unstable_suffix == "sister"


def test_a_revised_tail_leaves_the_stable_prefix_alone() -> None:
    acc = TranscriptAccumulator()
    acc.push_partial("order a pizza for read")
    h = acc.push_partial("order a pizza for Rhea")
    assert h.stable_prefix == "order a pizza for"
    assert h.unstable_suffix == "Rhea"
    assert not h.contradiction


def test_a_final_replaces_the_hypothesis_wholesale() -> None:
    acc = TranscriptAccumulator()
    acc.push_partial("I am a vegetarian now")
    acc.push_partial("I am a vegetarian now")
    h = acc.finalize("I am pescatarian")
    assert h.final
    assert (h.stable_prefix, h.unstable_suffix) == ("I am pescatarian", "")
    assert acc.final_contradicted


def test_a_final_that_extends_the_stable_prefix_is_not_a_contradiction() -> None:
    acc = TranscriptAccumulator()
    acc.push_partial("see you")
    acc.push_partial("see you to")
    acc.finalize("See you tomorrow.")
    assert not acc.final_contradicted


def test_begin_turn_clears_everything() -> None:
    acc = TranscriptAccumulator(TurnId("a", 1))
    acc.push_partial("one two three")
    acc.push_partial("one two three four")
    acc.finalize("one two three four")
    acc.begin_turn(TurnId("a", 2))
    assert acc.turn_id == TurnId("a", 2)
    assert not acc.final
    assert acc.revisions == 0
    assert acc.push_partial("five six").stable_prefix == ""


def test_a_partial_after_the_final_is_refused() -> None:
    acc = TranscriptAccumulator()
    acc.finalize("done")
    with pytest.raises(TurnStateError, match="begin_turn"):
        acc.push_partial("more")
    with pytest.raises(TurnStateError):
        acc.finalize("again")


def test_case_and_punctuation_flips_agree_under_the_default_rule() -> None:
    acc = TranscriptAccumulator()
    acc.push_partial("the launch is planned.")
    h = acc.push_partial("The launch is planned for Friday")
    assert h.stable_prefix == "The launch is planned"  # surface form of the latest revision
    assert h.unstable_suffix == "for Friday"


def test_exact_rule_treats_flips_as_disagreement() -> None:
    acc = TranscriptAccumulator(word_match="exact")
    acc.push_partial("the launch is planned.")
    h = acc.push_partial("The launch is planned for Friday")
    assert h.stable_prefix == ""


def test_unknown_word_match_rule_lists_the_valid_ones() -> None:
    with pytest.raises(UnknownNameError, match="exact, normalized"):
        TranscriptAccumulator(word_match="fuzzy")


def test_a_contradiction_is_counted_and_never_retracts_the_prefix() -> None:
    acc = TranscriptAccumulator()
    acc.push_partial("book a table for two")
    acc.push_partial("book a table for two people")
    assert acc.stable_prefix == "book a table for two"
    h = acc.push_partial("look a table for two people")
    assert h.contradiction
    assert h.stable_prefix == "book a table for two"
    assert acc.contradictions == 1
    h = acc.push_partial("look a table for two people")
    assert h.contradiction
    assert acc.contradictions == 2


def test_a_new_reading_confirmed_by_the_next_revision_becomes_the_stable_prefix() -> None:
    # Recorded from faster-whisper on the run-on sample: "under loaf" became "and a loaf".
    acc = TranscriptAccumulator()
    acc.push_partial("apples and pears under loaf of bread")
    acc.push_partial("apples and pears under loaf of bread and milk")
    assert acc.stable_prefix == "apples and pears under loaf of bread"
    h = acc.push_partial("apples and pears and a loaf of bread and my sister")
    assert h.contradiction
    assert not h.revised
    assert h.stable_prefix == "apples and pears under loaf of bread"
    h = acc.push_partial("apples and pears and a loaf of bread and my sister said")
    assert h.contradiction
    assert h.revised
    assert h.stable_prefix == "apples and pears and a loaf of bread and my sister"
    assert h.unstable_suffix == "said"
    assert acc.contradictions == 2


def test_a_word_the_recognizer_flips_does_not_stall_the_words_after_it() -> None:
    """Recorded from heard's ASR on the cadence monologue: "moved on the" / "moved to the"
    flip from revision to revision. A revision that agrees with the stable prefix grows it
    where it agrees with the last one after the prefix, though that one read "to"."""
    acc = TranscriptAccumulator()
    acc.push_partial("after that we moved on the web")
    acc.push_partial("after that we moved on the web dashboard")
    assert acc.stable_prefix == "after that we moved on the web"
    h = acc.push_partial("after that we moved to the web dashboard where customers ask")
    assert h.contradiction
    assert not h.revised
    assert h.stable_prefix == "after that we moved on the web"
    # back to "on": it agrees with the prefix, and with the last revision after it
    h = acc.push_partial("after that we moved on the web dashboard where customers asked for")
    assert not h.contradiction
    assert h.stable_prefix == "after that we moved on the web dashboard where customers"
    assert h.text == "after that we moved on the web dashboard where customers asked for"


def test_book_a_table_becomes_look_at_the_cable_once_two_revisions_agree() -> None:
    """A recognizer that changes its reading mid-turn (issue 25's log): the stable prefix
    follows the confirmed reading instead of freezing on the old one, and the display is
    never words no revision said ("book a table [cable for two people tonight at]")."""
    acc = TranscriptAccumulator()
    for text in ["book a", "book a table", "book a table for"]:
        h = acc.push_partial(text)
    assert h.stable_prefix == "book a table"
    h = acc.push_partial("look at the cable")
    assert h.contradiction
    assert h.stable_prefix == "book a table"
    assert h.text == "book a table"  # not "book a table cable": words no revision said
    h = acc.push_partial("look at the cable for two")
    assert h.revised
    assert h.stable_prefix == "look at the cable"
    revisions = ["look at the cable for two people", "look at the cable for two people tonight"]
    for text in [*revisions, "look at the cable for two people tonight at"]:
        h = acc.push_partial(text)
        assert not h.contradiction
        assert h.text == text
    assert h.stable_prefix == "look at the cable for two people tonight"
    final = acc.finalize("Look at the cable for two people tonight at eight.")
    assert final.stable_prefix == "Look at the cable for two people tonight at eight."
    assert not acc.final_contradicted


def test_a_shorter_partial_that_drops_stable_words_is_a_contradiction() -> None:
    acc = TranscriptAccumulator()
    acc.push_partial("one two three four")
    acc.push_partial("one two three four five")
    h = acc.push_partial("one two")
    assert h.contradiction
    assert h.stable_prefix == "one two three four"


@pytest.mark.parametrize(
    ("revisions", "stable"),
    [
        ([""], ""),
        (["", ""], ""),
        (["hello"], ""),
        (["hello", "hello"], ""),
        (["hello there", "hello there"], "hello"),
        (["a b c", "a x c", "a x c d"], "a x c"),
        (["a b", "a b c", "a b c", "a b c d"], "a b c"),
        (["  spaced   out  words ", "spaced out words again"], "spaced out words"),
    ],
)
def test_stable_prefix_table(revisions: list[str], stable: str) -> None:
    acc = TranscriptAccumulator()
    for text in revisions:
        h = acc.push_partial(text)
    assert h.stable_prefix == stable


# A simulated recognizer: it reads a growing prefix of a sentence, often mangles
# the last word, flips case and punctuation, and now and then rewrites a word
# inside the prefix.
WORDS = ["we", "should", "book", "Rhea", "a", "table", "for", "two", "near", "the", "river"]


@st.composite
def revision_logs(draw: st.DrawFn) -> list[str]:
    sentence = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=12))
    revisions = []
    length = 0
    for _ in range(draw(st.integers(1, 25))):
        length = min(len(sentence), length + draw(st.integers(0, 2)))
        words = list(sentence[:length])
        if words and draw(st.booleans()):
            words[-1] = draw(st.sampled_from(WORDS))
        if words and draw(st.integers(0, 9)) == 0:
            i = draw(st.integers(0, len(words) - 1))
            words[i] = draw(st.sampled_from(WORDS))
        words = [
            draw(st.sampled_from([w, w.upper(), w.capitalize(), w + ".", w + ","])) for w in words
        ]
        revisions.append(" ".join(words))
    return revisions


def _keys(text: str) -> list[str]:
    return [normalized_key(w) for w in text.split()]


@given(revision_logs())
def test_the_stable_prefix_never_retracts_and_is_replaced_only_by_a_longer_reading(
    revisions: list[str],
) -> None:
    acc = TranscriptAccumulator()
    previous: list[str] = []
    for text in revisions:
        h = acc.push_partial(text)
        stable = _keys(h.stable_prefix)
        if h.revised:
            assert h.contradiction
            assert len(stable) > len(previous)
            assert stable[: len(previous)] != previous
        else:
            assert stable[: len(previous)] == previous
        previous = stable


@given(revision_logs())
def test_the_stable_prefix_is_a_word_prefix_of_one_revision_never_a_splice(
    revisions: list[str],
) -> None:
    """Issue 25: whatever the recognizer does, the stable prefix (normalized) is the start of
    some revision of the current turn, in that revision's own words."""
    acc = TranscriptAccumulator()
    seen: list[list[str]] = []
    for text in revisions:
        h = acc.push_partial(text)
        seen.append(_keys(text))
        stable = _keys(h.stable_prefix)
        assert any(keys[: len(stable)] == stable for keys in seen)
        assert len(stable) == h.stable_word_count


@given(revision_logs())
def test_the_stable_prefix_is_a_prefix_of_each_later_partial_unless_contradicted(
    revisions: list[str],
) -> None:
    acc = TranscriptAccumulator()
    contradictions = 0
    for text in revisions:
        before = _keys(acc.stable_prefix)
        h = acc.push_partial(text)
        keys = _keys(text)
        if keys[: len(before)] != before:
            assert h.contradiction
            contradictions += 1
        else:
            assert not h.contradiction
            # ...and then the new stable prefix is a prefix of this partial, short of its last word
            assert _keys(h.stable_prefix) == keys[: h.stable_word_count]
            assert h.stable_word_count <= max(len(keys) - 1, 0)
            assert h.text.split() == text.split()
    assert acc.contradictions == contradictions


@given(revision_logs())
def test_every_stable_word_was_seen_in_two_consecutive_revisions(revisions: list[str]) -> None:
    acc = TranscriptAccumulator()
    seen_pairs: set[tuple[str, ...]] = set()
    prev: list[str] = []
    for text in revisions:
        keys = _keys(text)
        for n in range(1, len(keys) + 1):
            if keys[:n] == prev[:n]:
                seen_pairs.add(tuple(keys[:n]))
        prev = keys
        h = acc.push_partial(text)
        if acc.contradictions == 0 and h.stable_word_count:
            assert tuple(_keys(h.stable_prefix)) in seen_pairs
