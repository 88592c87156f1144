"""The prefetch policy on plain steps, with no event loop and no retriever."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from heard.transcript.accumulator import Hypothesis
from heard.transcript.events import EventKind, TranscriptEvent
from heard.transcript.prefetch import PrefetchPolicy, Speculation, TurnPlan
from heard.transcript.signals import NO_SIGNALS
from heard.transcript.speculation import GateConfig, GateDecision
from heard.transcript.stabilizer import TranscriptStabilizer, TranscriptStep
from heard.transcript.tokenize import content_tokens
from heard.transcript.turns import TurnId

WORDS = ["Book", "a", "table,", "for", "Rhea.", "tonight", "the", "I'm", "café", "7", "p.m."]


def steps(*events: tuple[int, str, str]) -> list[TranscriptStep]:
    stabilizer = TranscriptStabilizer(gate=GateConfig(debounce_ms=300))
    kinds = {"p": EventKind.PARTIAL, "f": EventKind.FINAL}
    return [stabilizer.on_event(TranscriptEvent(t, kinds[k], text, "ana")) for t, k, text in events]


def test_a_firing_speculates_on_the_stable_prefix_and_a_final_reuses_it() -> None:
    policy, plan = PrefetchPolicy(GateConfig(debounce_ms=300)), TurnPlan()
    *partials, final = steps(
        (0, "p", "where did Rhea move"),
        (500, "p", "where did Rhea move to Lisbon"),
        (900, "f", "Where did Rhea move to, Lisbon last spring?"),
    )
    made = [policy.speculate(plan, s) for s in partials]
    assert made[0] is None  # "where did Rhea" holds one content word: below the minimum
    assert made[1] == Speculation("where did Rhea move", pause=False)
    assert plan.tokens == {"rhea", "move"}
    assert not policy.reuse(plan, final)  # 2 of 5 content words
    assert (plan.retrievals, plan.wasted) == (2, 1)


def test_a_repeated_partial_speculates_on_all_of_it_outside_the_debounce() -> None:
    policy, plan = PrefetchPolicy(GateConfig(debounce_ms=300)), TurnPlan()
    first, second, again, later, final = steps(
        (0, "p", "book a table"),
        (400, "p", "book a table for Rhea"),
        (800, "p", "book a table for Rhea"),
        (900, "p", "book a table for Rhea"),
        (1500, "f", "book a table for Rhea"),
    )
    assert policy.speculate(plan, first) is None  # nothing stable yet
    assert policy.speculate(plan, second) == Speculation("book a table", pause=False)
    # one new content word: the gate waits, the pause does not
    assert policy.speculate(plan, again) == Speculation("book a table for Rhea", pause=True)
    assert policy.speculate(plan, later) is None  # within the debounce, and nothing new
    assert policy.reuse(plan, final)
    assert (plan.retrievals, plan.wasted) == (2, 1)


def test_a_final_without_a_pending_speculation_retrieves_again() -> None:
    policy, plan = PrefetchPolicy(), TurnPlan()
    plan.tokens, plan.retrievals = frozenset({"rhea", "lisbon"}), 1
    (final,) = steps((0, "f", "Rhea Lisbon"))
    assert not policy.reuse(plan, final)
    assert (plan.retrievals, plan.wasted) == (2, 0)


def test_on_transcript_keeps_one_plan_per_open_turn_and_a_final_closes_it() -> None:
    policy = PrefetchPolicy(GateConfig(debounce_ms=300))
    first, second, final, next_turn = steps(
        (0, "p", "where did Rhea move"),
        (500, "p", "where did Rhea move to Lisbon"),
        (900, "f", "where did Rhea move to Lisbon"),
        (1500, "p", "and Kushal"),
    )
    assert policy.on_transcript(first).speculation is None
    decided = policy.on_transcript(second)
    assert decided.speculation == Speculation("where did Rhea move", pause=False)
    closing = policy.on_transcript(final)
    assert closing.plan is decided.plan
    assert closing.reuse  # 2 of 3 content words: enough
    opened = policy.on_transcript(next_turn)
    assert opened.plan is not decided.plan
    assert opened.plan.turn == next_turn.turn_id
    quiet = PrefetchPolicy(GateConfig(debounce_ms=300), speculate=False)
    assert quiet.on_transcript(first).speculation is None
    assert quiet.on_transcript(second).speculation is None


def test_an_interrupt_drops_the_speculation_and_counts_it_only_if_it_ran() -> None:
    plan = TurnPlan(pending=True, tokens=frozenset({"rhea"}), query="rhea", retrievals=1)
    PrefetchPolicy.drop(plan, running=False)
    assert (plan.pending, plan.query, plan.wasted) == (False, "", 0)
    plan.pending = True
    PrefetchPolicy.drop(plan, running=True)
    assert plan.wasted == 1


def made(
    t_ms: int,
    stable: str,
    decision: GateDecision,
    *,
    unstable: str = "",
    repeated: bool = False,
    contradiction: bool = False,
) -> TranscriptStep:
    """A step as plain data, the way the policy takes it."""
    hypothesis = Hypothesis(
        TurnId("ana", 1), tuple(stable.split()), tuple(unstable.split()), 1, False,
        contradiction=contradiction, repeated=repeated,
    )  # fmt: skip
    query = tuple(content_tokens(stable))
    pause = tuple(content_tokens(unstable)) if repeated and not contradiction else ()
    return TranscriptStep(t_ms, "ana", TurnId("ana", 1), EventKind.PARTIAL, hypothesis, decision,
                          NO_SIGNALS, query, pause)  # fmt: skip


def test_a_plain_firing_waits_out_the_debounce_and_a_new_signal_does_not() -> None:
    policy, plan = PrefetchPolicy(GateConfig(debounce_ms=300)), TurnPlan()
    first = policy.speculate(plan, made(0, "book a table for Rhea", GateDecision.FIRE))
    assert first == Speculation("book a table for Rhea", pause=False)
    assert (
        policy.speculate(plan, made(100, "book a table for Rhea tonight at", GateDecision.FIRE))
        is None
    )
    signal = made(150, "book a table for Rhea do you remember", GateDecision.FIRE_SIGNAL)
    assert policy.speculate(plan, signal) == Speculation(
        signal.hypothesis.stable_prefix, pause=False
    )
    assert (plan.retrievals, plan.wasted, plan.speculated_ms) == (2, 1, 150)
    later = made(450, "book a table for Rhea do you remember the place", GateDecision.FIRE)
    assert policy.speculate(plan, later) is not None  # the window has passed


def test_a_contradicted_repeat_is_no_pause() -> None:
    policy = PrefetchPolicy(GateConfig(debounce_ms=300))
    quiet = GateDecision.INSUFFICIENT_NEW_CONTENT
    pause = made(800, "book a table", quiet, unstable="for Rhea", repeated=True)
    assert policy.speculate(TurnPlan(), pause) == Speculation("book a table for Rhea", pause=True)
    contradicted = made(800, "book a table", quiet, unstable="", repeated=True,
                        contradiction=True)  # fmt: skip
    assert policy.speculate(TurnPlan(), contradicted) is None


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(WORDS), min_size=1, max_size=12), st.integers(1, 6))
def test_a_steps_query_tokens_are_its_stable_prefix_content_tokens(
    words: list[str], revisions: int
) -> None:
    stabilizer = TranscriptStabilizer()
    for i in range(revisions):
        shown = " ".join(words[: max(1, len(words) * (i + 1) // revisions)])
        step = stabilizer.on_event(TranscriptEvent(100 * i, EventKind.PARTIAL, shown, "ana"))
        assert step.query_tokens == tuple(content_tokens(step.hypothesis.stable_prefix))
    final = stabilizer.on_event(TranscriptEvent(1000, EventKind.FINAL, " ".join(words), "ana"))
    assert final.query_tokens == tuple(content_tokens(" ".join(words)))


def test_a_step_of_another_turn_starts_a_new_plan_even_without_a_final() -> None:
    """Steps as plain data need not come from one stabilizer: a speaker's step of a turn the
    policy did not see open starts that turn's plan, and the old plan's speculation is not
    reused for it."""
    policy = PrefetchPolicy(GateConfig(debounce_ms=300))
    first = made(0, "book a table for Rhea", GateDecision.FIRE)
    assert policy.on_transcript(first).speculation is not None
    other = replace(made(100, "book a table for Rhea", GateDecision.FIRE), turn_id=TurnId("ana", 2))
    opened = policy.on_transcript(other)
    assert opened.plan.turn == TurnId("ana", 2)
    assert opened.plan.retrievals == 1  # its own speculation, not the first turn's
