"""Seed 000 (a transcript accumulator, a generation guard and a speculation gate), test by test,
against heard's own API: ``heard.transcript.accumulator.TranscriptAccumulator``,
``heard.transcript.guard.GenerationGuard`` and ``heard.transcript.speculation.SpeculationGate``.

Where heard's rules differ from the seed's, each test says so. In short: heard's gate works in
injected milliseconds, with its own defaults (``GateConfig``: a 300 ms debounce and at least 2
new *content* tokens, stopwords removed); only a *new* strong signal (an entity or recall phrase
not yet acted on this turn) bypasses the gate, and heard tells the kinds of firing apart
(``FIRE``, ``FIRE_SIGNAL``, ``FIRE_FINAL``); "nothing stable" is decided on the stable word count.
"""

from __future__ import annotations

from heard.transcript.accumulator import Hypothesis, TranscriptAccumulator
from heard.transcript.guard import GenerationGuard
from heard.transcript.signals import Signals
from heard.transcript.speculation import GateConfig, GateDecision, SpeculationGate
from heard.transcript.turns import TurnId
from tests.transcript.helpers import consider


def reading(stable: str, *, unstable: str = "", final: bool = False) -> Hypothesis:
    """A hypothesis built by hand, as the seed's gate tests build theirs."""
    return Hypothesis(
        turn_id=TurnId("user", 1),
        stable_words=tuple(stable.split()),
        unstable_words=tuple(unstable.split()),
        revision=1,
        final=final,
    )


# -- the accumulator ---------------------------------------------------------------------------


def test_the_stable_prefix_grows_as_revisions_agree() -> None:
    """Rule: the stable prefix is the word prefix two consecutive partials share, less the
    current partial's last word; the words after it are the unstable suffix."""
    acc = TranscriptAccumulator(TurnId("user", 1))
    first = acc.push_partial("what should")
    assert (first.stable_prefix, first.unstable_suffix) == ("", "what should")

    h = acc.push_partial("what should we eat")
    assert (h.stable_prefix, h.unstable_suffix) == ("what should", "we eat")
    assert h.stable_word_count == 2

    h = acc.push_partial("what should we eat tonight")
    assert (h.stable_prefix, h.unstable_suffix) == ("what should we eat", "tonight")
    assert h.stable_word_count == 4


def test_a_revised_tail_does_not_corrupt_the_stable_prefix() -> None:
    """Rule: a partial's last word is never stable, so a recognizer changing its mind about it
    ("read" -> "Rhea") leaves the stable prefix intact and shows the new word after it; the
    last word stays unstable even when a revision repeats it.

    heard compares words case-folded without edge punctuation by default; "read" and "Rhea"
    differ under that rule as well as the exact one, so both are checked.
    """
    for word_match in ("normalized", "exact"):
        acc = TranscriptAccumulator(TurnId("user", 1), word_match=word_match)
        acc.push_partial("book a table for read")
        h = acc.push_partial("book a table for Rhea")
        assert h.stable_prefix == "book a table for", word_match
        assert h.unstable_suffix == "Rhea", word_match
        assert "Rhea" in h.text, word_match
        assert "read" not in h.text.split(), word_match
        assert not h.contradiction, word_match
        # Heard again word for word, "Rhea" is still the last word, so still not stable.
        again = acc.push_partial("book a table for Rhea")
        assert (again.stable_prefix, again.unstable_suffix) == ("book a table for", "Rhea")


def test_finalizing_replaces_the_hypothesis_wholesale() -> None:
    """Rule: a final replaces the hypothesis outright, stable and unstable alike, even where it
    disagrees with the partials ("vegetarian" -> "pescatarian"), and marks the turn finalised.
    heard calls the flag ``final`` (on the hypothesis and on the accumulator)."""
    acc = TranscriptAccumulator(TurnId("user", 1))
    acc.push_partial("I am vegetarian")
    h = acc.finalize("I am pescatarian")
    assert h.final
    assert h.stable_prefix == "I am pescatarian"
    assert h.stable_word_count == 3
    assert h.unstable_suffix == ""
    assert acc.final
    assert acc.stable_prefix == "I am pescatarian"


def test_beginning_a_turn_clears_previous_state() -> None:
    """Rule: beginning a turn discards everything about the previous one: its turn id, its
    finalised flag and its words, so the next turn's first partial has nothing stable.

    heard additionally refuses partials on a finalised turn until ``begin_turn`` is called; the
    seed would silently keep folding them in.
    """
    acc = TranscriptAccumulator(TurnId("user", 1))
    acc.push_partial("first turn")
    acc.finalize("first turn")
    acc.begin_turn(TurnId("user", 2))
    assert acc.turn_id == TurnId("user", 2)
    assert not acc.final
    assert acc.stable_prefix == ""
    h = acc.push_partial("second")
    assert h.turn_id == TurnId("user", 2)
    assert h.stable_prefix == ""
    assert h.stable_word_count == 0
    assert h.revision == 1

    # Had the last turn's partial survived, "first turn" and "first thing" would share a word.
    acc = TranscriptAccumulator(TurnId("user", 1))
    acc.push_partial("first turn")
    acc.finalize("first turn")
    acc.begin_turn(TurnId("user", 2))
    h = acc.push_partial("first thing")
    assert (h.stable_prefix, h.unstable_suffix) == ("", "first thing")


# -- the generation guard ----------------------------------------------------------------------


def test_stale_generations_are_rejected() -> None:
    """Rule: work records the generation it started at; once the guard advances, that
    generation is no longer current and only the new one is. heard's ``current`` is a
    property, and ``advance`` returns the new generation as the seed's does."""
    guard = GenerationGuard()
    started_at = guard.current
    assert guard.is_current(started_at)
    newer = guard.advance()
    assert newer != started_at
    assert guard.current == newer
    assert not guard.is_current(started_at)
    assert guard.is_current(newer)


# -- the speculation gate ----------------------------------------------------------------------


def test_the_gate_debounces_rapid_revisions() -> None:
    """Rule: no speculation within the debounce window of the last one, even with plenty of new
    content; after the window the same revision fires.

    The seed's 50 ms and 400 ms straddle heard's default window (300 ms) as they do the seed's,
    so the seed's times are kept. Both readings have enough new content tokens for heard's
    minimum of 2 ("eat dinner"; then "tonight rhea kushal nearby"), so only the debounce
    decides.
    """
    gate = SpeculationGate(GateConfig())
    assert consider(gate, reading("what should we eat for dinner"), 0) is GateDecision.FIRE

    second = reading("what should we eat for dinner tonight with Rhea and Kushal nearby")
    assert consider(gate, second, 50) is GateDecision.DEBOUNCED
    assert consider(gate, second, 400) is GateDecision.FIRE
    assert gate.last_query_tokens == ("eat", "dinner", "tonight", "rhea", "kushal", "nearby")


def test_the_gate_ignores_revisions_that_add_nothing() -> None:
    """Rule: outside the debounce window, a revision still fires only if its stable prefix adds
    enough new content to change the query.

    heard counts content tokens (stopwords removed) and needs 2 by default: the seed's "now" is
    a stopword, so it adds nothing at all; one content word ("tonight") is still too little;
    two ("tonight", "downtown") fire.
    """
    gate = SpeculationGate(GateConfig())
    assert consider(gate, reading("what should we eat for dinner"), 0) is GateDecision.FIRE
    assert (
        consider(gate, reading("what should we eat for dinner now"), 5_000)
        is GateDecision.INSUFFICIENT_NEW_CONTENT
    )
    assert (
        consider(gate, reading("what should we eat for dinner tonight"), 10_000)
        is GateDecision.INSUFFICIENT_NEW_CONTENT
    )
    assert (
        consider(gate, reading("what should we eat for dinner tonight downtown"), 15_000)
        is GateDecision.FIRE
    )


def test_a_strong_signal_or_a_final_transcript_bypasses_both_gates() -> None:
    """Rule: a strong signal (a known entity, a recall phrase) or a final transcript fires even
    within the debounce window and with no new content.

    heard's differences: the bypass is for a *new* strong signal only (one not yet acted on in
    this turn), so the same entity reported on every revision of "tell me about Rhea" prefetches
    once rather than on every revision; and heard names the bypasses ``FIRE_SIGNAL`` and
    ``FIRE_FINAL``. Without the signal, the same revision at the same time is debounced, which
    is what makes the bypass observable.
    """
    gate = SpeculationGate(GateConfig())
    h = reading("tell me about Rhea")
    rhea = Signals(entities=("Rhea",))
    assert consider(gate, h, 0) is GateDecision.FIRE
    assert consider(gate, h, 1) is GateDecision.DEBOUNCED
    assert consider(gate, h, 1, rhea) is GateDecision.FIRE_SIGNAL
    # heard: the signal has been acted on, so it no longer bypasses the debounce...
    assert consider(gate, h, 2, rhea) is GateDecision.DEBOUNCED
    # ...nor, outside the window, the new-content minimum; a new recall phrase does, for both.
    assert consider(gate, h, 5_000, rhea) is GateDecision.INSUFFICIENT_NEW_CONTENT
    recall = Signals(entities=("Rhea",), recall_phrases=("do you remember",))
    assert consider(gate, h, 5_000, recall) is GateDecision.FIRE_SIGNAL

    finalised = reading("tell me about Rhea", final=True)
    assert consider(gate, finalised, 5_001) is GateDecision.FIRE_FINAL


def test_nothing_stable_yet_means_nothing_to_speculate_on() -> None:
    """Rule: with nothing stable (only an unstable fragment, "wha"), there is nothing to
    speculate on, whatever the clock says.

    heard decides this on the stable word count rather than on the stable prefix's tokens, and
    applies it to finals too: where the seed would fire on an empty final, heard has no query to
    run. A prefix of punctuation only counts as stable words in heard and then fails the
    new-content minimum instead.
    """
    gate = SpeculationGate(GateConfig())
    assert consider(gate, reading("", unstable="wha"), 0) is GateDecision.NOTHING_STABLE
    # heard: an empty final has nothing to speculate on either (the seed would fire).
    assert consider(gate, reading("", final=True), 1) is GateDecision.NOTHING_STABLE

    # The same through the accumulator: a first partial has no stable words.
    acc = TranscriptAccumulator(TurnId("user", 1))
    h = acc.push_partial("wha")
    assert (h.stable_prefix, h.unstable_suffix, h.stable_word_count) == ("", "wha", 0)
    assert consider(gate, h, 10_000) is GateDecision.NOTHING_STABLE
    assert gate.last_query_tokens == ()

    # heard: a stable prefix of punctuation only has stable words but no content tokens.
    dashes = reading("\u2014 \u2026")
    assert dashes.stable_word_count == 2
    assert consider(gate, dashes, 20_000) is GateDecision.INSUFFICIENT_NEW_CONTENT
