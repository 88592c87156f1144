"""heard's ``TranscriptAccumulator`` against a port of seed 000's (``seed_reference``).

Two claims from heard's accumulator docstring, checked on generated streams of partials:

* without contradictions heard *is* the seed's accumulator: the same stable prefix and the same
  unstable suffix after every revision, under the exact word rule and the default normalized
  one (the words are plain lowercase, so the rules cannot differ);
* when the recognizer changes its reading, heard moves to the new reading no later than the seed
  does, and its stable prefix is always a word prefix of one revision of the turn, never a
  splice of two readings (the seed's unstable suffix can splice; its stable prefix cannot
  either, but that is not heard's business here).

Streams are sentences read as growing prefixes (the length never shrinks; it may repeat), each
partial's last word possibly misheard as another word of a small vocabulary, so coincidences
between readings are common.
"""

from __future__ import annotations

from hypothesis import given, note, settings
from hypothesis import strategies as st
from tests.transcript.seed_reference import SeedAccumulator

from heard.transcript.accumulator import Hypothesis, TranscriptAccumulator

VOCAB = ("a", "at", "book", "cable", "for", "look", "table", "the", "two")
WORD_RULES = ("exact", "normalized")

sentences = st.lists(st.sampled_from(VOCAB), min_size=1, max_size=8)


@st.composite
def read_growing(draw: st.DrawFn, sentence: list[str], *, min_length: int = 0) -> list[str]:
    """Partials of ``sentence`` read as a growing prefix; the last word may be misheard."""
    lengths = sorted(
        draw(st.lists(st.integers(min_length, len(sentence)), min_size=1, max_size=10))
    )
    partials = []
    for n in lengths:
        words = sentence[:n]
        misheard: bool = bool(words) and draw(st.booleans())
        if misheard:
            words[-1] = draw(st.sampled_from(VOCAB))
        partials.append(" ".join(words))
    return partials


@st.composite
def changed_readings(draw: st.DrawFn) -> tuple[list[str], list[str], list[str], list[str]]:
    """(A, B, partials reading A, partials reading B): B keeps A's first ``shared`` words
    (0 up to all but one) and then goes its own way."""
    a = draw(st.lists(st.sampled_from(VOCAB), min_size=1, max_size=8))
    shared = draw(st.integers(0, len(a) - 1))
    turn = draw(st.sampled_from([w for w in VOCAB if w != a[shared]]))
    b = [*a[:shared], turn, *draw(st.lists(st.sampled_from(VOCAB), max_size=6))]
    return a, b, draw(read_growing(a)), draw(read_growing(b, min_length=1))


def is_word_prefix(prefix: str, text: str) -> bool:
    words = prefix.split()
    return text.split()[: len(words)] == words


@settings(max_examples=300)
@given(sentence=sentences, data=st.data())
def test_without_contradictions_heard_is_the_seed(sentence: list[str], data: st.DataObject) -> None:
    partials = data.draw(read_growing(sentence))
    for rule in WORD_RULES:
        seed = SeedAccumulator()
        acc = TranscriptAccumulator(word_match=rule)
        for i, text in enumerate(partials):
            ours, theirs = acc.push_partial(text), seed.push_partial(text)
            where = f"{rule}, revision {i + 1}: {text!r}"
            # the generator's promise: a growing reading never contradicts its stable prefix
            assert not ours.contradiction, where
            assert ours.stable_prefix == theirs.stable_prefix, where
            assert ours.unstable_suffix == theirs.unstable_suffix, where
            assert ours.stable_word_count == len(theirs.stable_words), where
        final = " ".join(sentence)
        assert acc.finalize(final).stable_prefix == seed.finalize(final).stable_prefix == final


@settings(max_examples=300)
@given(stream=changed_readings())
def test_heard_reaches_a_changed_reading_no_later_than_the_seed(
    stream: tuple[list[str], list[str], list[str], list[str]],
) -> None:
    """After the switch to B: whenever the seed's stable prefix is B's first k words, heard's
    is B's first k words or more. Throughout: heard's stable prefix is a word prefix of a
    revision already seen, and never shrinks."""
    a, b, read_a, read_b = stream
    note(f"A = {' '.join(a)!r}, B = {' '.join(b)!r}")
    note(f"partials = {read_a + read_b!r}, switch at revision {len(read_a) + 1}")
    b_text = " ".join(b)
    for rule in WORD_RULES:
        seed = SeedAccumulator()
        acc = TranscriptAccumulator(word_match=rule)
        seen: list[str] = []
        previous_count = 0
        for i, text in enumerate(read_a + read_b):
            seen.append(text)
            ours: Hypothesis = acc.push_partial(text)
            theirs = seed.push_partial(text)
            where = f"{rule}, revision {i + 1}: {text!r}; heard {ours!r}; seed {theirs!r}"
            assert any(is_word_prefix(ours.stable_prefix, rev) for rev in seen), where
            assert ours.stable_word_count == len(ours.stable_prefix.split()), where
            assert ours.stable_word_count >= previous_count, where
            previous_count = ours.stable_word_count
            if i >= len(read_a) and is_word_prefix(theirs.stable_prefix, b_text):
                assert is_word_prefix(ours.stable_prefix, b_text), where
                assert ours.stable_word_count >= len(theirs.stable_words), where


BOOK_A_TABLE = [
    "book a",
    "book a table",
    "book a table for",
    "look at the cable",
    "look at the cable for two",
    "look at the cable for two people",
    "look at the cable for two people tonight",
    "look at the cable for two people tonight at",
]


def test_the_book_a_table_log_ends_on_the_new_reading_in_both() -> None:
    new_reading_starts = BOOK_A_TABLE.index("look at the cable")
    for rule in WORD_RULES:
        seed = SeedAccumulator()
        acc = TranscriptAccumulator(word_match=rule)
        for i, text in enumerate(BOOK_A_TABLE):
            ours, theirs = acc.push_partial(text), seed.push_partial(text)
            assert any(is_word_prefix(ours.stable_prefix, p) for p in BOOK_A_TABLE[: i + 1])
            assert ours.stable_word_count == len(ours.stable_prefix.split()), (rule, text)
            if i == new_reading_starts:
                assert ours.contradiction, rule
            if i >= new_reading_starts:
                assert ours.stable_word_count >= len(theirs.stable_words), (rule, text)
        assert theirs.stable_prefix == "look at the cable for two people tonight"
        assert ours.stable_prefix == "look at the cable for two people tonight", rule
        assert ours.unstable_suffix == theirs.unstable_suffix == "at", rule
