"""The prefetch policy on plain steps, with no event loop and no retriever."""

from __future__ import annotations

from heard.transcript.events import EventKind, TranscriptEvent
from heard.transcript.prefetch import PrefetchPolicy, Speculation, TurnPlan
from heard.transcript.speculation import GateConfig
from heard.transcript.stabilizer import TranscriptStabilizer, TranscriptStep


def steps(*events: tuple[int, str, str]) -> list[TranscriptStep]:
    stabilizer = TranscriptStabilizer(gate=GateConfig(debounce_ms=300))
    kinds = {"p": EventKind.PARTIAL, "f": EventKind.FINAL}
    return [stabilizer.on_event(TranscriptEvent(t, kinds[k], text, "ana")) for t, k, text in events]


def test_a_firing_speculates_on_the_stable_prefix_and_a_final_reuses_it() -> None:
    policy, plan = PrefetchPolicy(GateConfig(debounce_ms=300)), TurnPlan(1)
    *partials, final = steps(
        (0, "p", "where did Rhea move"),
        (500, "p", "where did Rhea move to Lisbon"),
        (900, "f", "Where did Rhea move to, Lisbon last spring?"),
    )
    made = [policy.on_partial(plan, s) for s in partials]
    assert made[0] is None  # "where did Rhea" holds one content word: below the minimum
    assert made[1] == Speculation("where did Rhea move", pause=False)
    assert plan.tokens == {"rhea", "move"}
    assert not policy.on_final(plan, final, usable=True)  # 2 of 5 content words
    assert (plan.retrievals, plan.wasted) == (2, 1)


def test_a_repeated_partial_speculates_on_all_of_it_outside_the_debounce() -> None:
    policy, plan = PrefetchPolicy(GateConfig(debounce_ms=300)), TurnPlan(1)
    first, second, again, later, final = steps(
        (0, "p", "book a table"),
        (400, "p", "book a table for Rhea"),
        (800, "p", "book a table for Rhea"),
        (900, "p", "book a table for Rhea"),
        (1500, "f", "book a table for Rhea"),
    )
    assert policy.on_partial(plan, first) is None  # nothing stable yet
    assert policy.on_partial(plan, second) == Speculation("book a table", pause=False)
    # one new content word: the gate waits, the pause does not
    assert policy.on_partial(plan, again) == Speculation("book a table for Rhea", pause=True)
    assert policy.on_partial(plan, later) is None  # within the debounce, and nothing new
    assert policy.on_final(plan, final, usable=True)
    assert (plan.retrievals, plan.wasted) == (2, 1)


def test_a_cancelled_speculation_is_never_reused() -> None:
    policy, plan = PrefetchPolicy(), TurnPlan(1)
    plan.pending, plan.tokens, plan.retrievals = True, frozenset({"rhea", "lisbon"}), 1
    (final,) = steps((0, "f", "Rhea Lisbon"))
    assert not policy.on_final(plan, final, usable=False)
    assert (plan.retrievals, plan.wasted) == (2, 1)


def test_an_interrupt_drops_the_speculation_and_counts_it_only_if_it_ran() -> None:
    plan = TurnPlan(1, pending=True, tokens=frozenset({"rhea"}), query="rhea", retrievals=1)
    PrefetchPolicy.on_interrupt(plan, 2, running=False)
    assert (plan.generation, plan.pending, plan.query, plan.wasted) == (2, False, "", 0)
    plan.pending = True
    PrefetchPolicy.on_interrupt(plan, 3, running=True)
    assert plan.wasted == 1
