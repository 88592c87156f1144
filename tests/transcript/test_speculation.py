from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.transcript.helpers import consider

from heard.transcript.accumulator import Hypothesis
from heard.transcript.signals import Signals
from heard.transcript.speculation import GateConfig, GateDecision, SpeculationGate


def hyp(stable: str, *, final: bool = False) -> Hypothesis:
    return Hypothesis(
        turn_id=None,
        stable_words=tuple(stable.split()),
        unstable_words=(),
        revision=1,
        final=final,
    )


def test_rapid_revisions_are_debounced_then_fire() -> None:
    gate = SpeculationGate(GateConfig(debounce_ms=300))
    assert consider(gate, hyp("where should we eat dinner"), 0) is GateDecision.FIRE
    longer = hyp("where should we eat dinner tonight with Rhea and Kushal")
    assert consider(gate, longer, 50) is GateDecision.DEBOUNCED
    assert consider(gate, longer, 299) is GateDecision.DEBOUNCED
    assert consider(gate, longer, 300) is GateDecision.FIRE


def test_revisions_that_add_too_little_content_do_not_fire() -> None:
    gate = SpeculationGate(GateConfig(min_new_content_tokens=2))
    assert consider(gate, hyp("where should we eat dinner"), 0) is GateDecision.FIRE
    # "now" and "for us" are stopwords, "Friday" is one new content token
    assert (
        consider(gate, hyp("where should we eat dinner now for us Friday"), 5_000)
        is GateDecision.INSUFFICIENT_NEW_CONTENT
    )
    assert consider(gate, hyp("where should we eat dinner Friday with Rhea"), 5_000).fires


def test_a_first_fire_needs_the_minimum_too() -> None:
    gate = SpeculationGate(GateConfig(min_new_content_tokens=2))
    assert consider(gate, hyp("and so"), 0) is GateDecision.INSUFFICIENT_NEW_CONTENT
    assert consider(gate, hyp("and so the Tokyo"), 1000) is GateDecision.INSUFFICIENT_NEW_CONTENT
    assert consider(gate, hyp("and so the Tokyo office"), 2000) is GateDecision.FIRE


def test_nothing_stable_means_nothing_to_speculate_on() -> None:
    gate = SpeculationGate()
    assert consider(gate, hyp(""), 0) is GateDecision.NOTHING_STABLE
    assert consider(gate, hyp("", final=True), 0) is GateDecision.NOTHING_STABLE


def test_a_final_bypasses_debounce_and_new_content() -> None:
    gate = SpeculationGate()
    assert consider(gate, hyp("tell me about Rhea"), 0).fires
    assert consider(gate, hyp("tell me about Rhea", final=True), 1) is GateDecision.FIRE_FINAL


def test_a_new_strong_signal_bypasses_once() -> None:
    gate = SpeculationGate()
    rhea = Signals(entities=("Rhea",))
    assert consider(gate, hyp("tell me about Rhea"), 0) is GateDecision.FIRE
    assert consider(gate, hyp("tell me about Rhea"), 1, rhea) is GateDecision.FIRE_SIGNAL
    # the same signal again is not new: the ordinary gates apply
    assert consider(gate, hyp("tell me about Rhea"), 2, rhea) is GateDecision.DEBOUNCED
    both = Signals(entities=("Rhea",), recall_phrases=("do you remember",))
    assert consider(gate, hyp("tell me about Rhea do you"), 3, both) is GateDecision.FIRE_SIGNAL


def test_reset_forgets_the_previous_turn() -> None:
    gate = SpeculationGate()
    rhea = Signals(entities=("Rhea",))
    assert consider(gate, hyp("tell me about Rhea"), 0, rhea).fires
    gate.reset()
    assert consider(gate, hyp("tell me about Rhea"), 1, rhea) is GateDecision.FIRE_SIGNAL
    assert gate.last_query_tokens == ("tell", "rhea")


@pytest.mark.parametrize("kwargs", [{"debounce_ms": -1}, {"min_new_content_tokens": -3}])
def test_config_rejects_negative_values(kwargs: dict[str, int]) -> None:
    with pytest.raises(ValueError, match="must be >= 0"):
        GateConfig(**kwargs)


words = st.sampled_from(["rhea", "table", "tokyo", "river", "we", "the", "boat", "friday"])


@given(
    st.lists(
        st.tuples(st.integers(0, 400), st.lists(words, max_size=3), st.booleans(), st.booleans()),
        max_size=40,
    ),
    st.integers(0, 1000),
)
def test_never_fires_twice_inside_the_window_without_a_final_or_new_signal(
    steps: list[tuple[int, list[str], bool, bool]], debounce_ms: int
) -> None:
    gate = SpeculationGate(GateConfig(debounce_ms=debounce_ms, min_new_content_tokens=1))
    now, stable, last_plain_fire, last_fire = 0, [], None, None
    for gap, added, final, signal in steps:
        now += gap
        stable = stable + added
        signals = Signals(entities=(f"entity{now}",)) if signal else Signals()
        decision = consider(gate, hyp(" ".join(stable), final=final), now, signals)
        if decision is GateDecision.FIRE:
            assert last_fire is None or now - last_fire >= debounce_ms
            last_plain_fire = now
        if decision.fires:
            last_fire = now
        if final:
            gate.reset()
            stable, last_fire = [], None
    assert last_plain_fire is None or last_plain_fire <= now
