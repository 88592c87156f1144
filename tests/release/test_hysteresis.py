"""Balanced's hysteresis on random speech that alternates punctuated, comma-only and bare
stretches, one turn with no final (a recognizer that finalizes late), probed every 500 ms."""

from __future__ import annotations

from itertools import pairwise

from hypothesis import given, settings
from hypothesis import strategies as st

from heard.release import ESCALATE_AFTER_MS, ends_clause
from tests.release.speech import PROBE_MS, Turn

Stretch = tuple[str, list[int]]  # kind, clause lengths


@st.composite
def speech(draw: st.DrawFn) -> tuple[int, list[Stretch]]:
    pace_ms = draw(st.integers(250, 700))
    stretches = []
    for _ in range(draw(st.integers(2, 7))):
        kind = draw(st.sampled_from(["clauses", "commas", "bare"]))
        if kind == "bare":
            lengths = [draw(st.integers(5, 60))]
        else:
            lengths = draw(st.lists(st.integers(3, 9), min_size=1, max_size=5))
        stretches.append((kind, lengths))
    return pace_ms, stretches


def spoken(pace_ms: int, stretches: list[Stretch]) -> tuple[Turn, list[int]]:
    """Say the stretches; returns the turn and when each clause end was said."""
    turn = Turn(every_ms=pace_ms)
    turn.say(["Right."])  # a recognizer that punctuates: the main window applies
    ends: list[int] = []
    n = 0
    for kind, lengths in stretches:
        for length in lengths:
            words = [f"w{n + i}" for i in range(length)]
            n += length
            if kind == "clauses":
                words[-1] += draw_end(n)
                ends.append(turn.t_ms + (length - 1) * pace_ms)
            elif kind == "commas":
                words[-1] += ","
            turn.say(words)
    turn.say(["and", "so", "on"])  # the last clause end settles
    return turn, ends


def draw_end(n: int) -> str:
    return ".?!"[n % 3]


@settings(max_examples=100, deadline=None)
@given(speech())
def test_never_two_changes_within_one_window(sample: tuple[int, list[Stretch]]) -> None:
    turn, _ = spoken(*sample)
    changes = turn.transitions
    assert all(a.escalated != b.escalated for a, b in pairwise(changes))
    assert all(b.t_ms - a.t_ms >= ESCALATE_AFTER_MS for a, b in pairwise(changes)), changes


@settings(max_examples=100, deadline=None)
@given(speech())
def test_only_two_clause_ends_de_escalate_never_one_mark_or_commas(
    sample: tuple[int, list[Stretch]],
) -> None:
    pace_ms, _ = sample
    turn, ends = spoken(*sample)
    for escalation, back in pairwise(turn.transitions):
        if not escalation.escalated:
            continue
        # clause ends said since escalating (one said just before may settle just after it)
        seen = [t for t in ends if escalation.t_ms - 2 * pace_ms <= t < back.t_ms]
        assert len(seen) >= 2, (escalation, back, ends)


@settings(max_examples=100, deadline=None)
@given(speech())
def test_two_clause_ends_after_escalating_bring_balanced_back(
    sample: tuple[int, list[Stretch]],
) -> None:
    pace_ms, _ = sample
    turn, ends = spoken(*sample)
    for change in turn.transitions:
        if not change.escalated:
            continue
        later = [t for t in ends if t > change.t_ms]
        # two clause ends in a row with no stretch between them that could prove itself again
        pairs = [(a, b) for a, b in pairwise(later) if b - a < ESCALATE_AFTER_MS / 2]
        due = max(change.t_ms + ESCALATE_AFTER_MS, pairs[0][1] + 2 * pace_ms) if pairs else None
        if due is not None and turn.t_ms > due + PROBE_MS:  # decided at a later probe
            assert any(not c.escalated and c.t_ms > change.t_ms for c in turn.transitions), (
                change,
                pairs[0],
                turn.transitions,
            )


def test_the_speech_generator_makes_both_kinds_of_stretch() -> None:
    turn, ends = spoken(300, [("bare", [50]), ("clauses", [4, 4, 4]), ("bare", [50])])
    assert [c.escalated for c in turn.transitions] == [True, False, True]
    assert len(ends) == 3
    assert all(ends)
    assert ends_clause("w1.")
