"""Seed 004 (LiveCap #211, "Escalate Balanced automatically on unpunctuated stretches"): the
tests its PR names, against heard's Balanced. heard measures the window on its own clock (the
wait from the first settled word after the last mark) and adds a shorter window while the
recognizer has written no mark at all; the rules below are the seed's."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

from heard.release import (
    ESCALATE_AFTER_MS,
    ESCALATED_DWELL_MS,
    LIVE_DWELL_MS,
    ReleaseConfig,
    ReleaseReason,
)
from heard.release.cadence import boundary_free_waits, cadence_rows
from heard.transcript.events import read_events
from tests.release.speech import Turn, clause

CADENCE = Path(__file__).resolve().parents[1] / "data" / "cadence"
PUNCTUATED = ["natural", "continuous", "mixed", "late/natural", "late/continuous", "late/mixed"]


def punctuated_start() -> Turn:
    """A speaker whose recognizer has shown it punctuates."""
    turn = Turn()
    turn.say(["Good", "morning."])
    turn.final()
    turn.t_ms += 1000
    return turn


def test_balanced_holds_unpunctuated_text_until_the_stretch_proves_itself() -> None:
    """Seed: no release at the dwell, none just before the window, a dwell release at it."""
    turn = punctuated_start()
    turn.units.clear()
    start = turn.t_ms
    turn.say(["w0", "w1"])
    settled = turn.t_ms - turn.every_ms  # "w0" settles with the partial "w0 w1"
    turn.say([f"w{i}" for i in range(2, 40)])
    [first, *_] = turn.units
    assert first.reason is ReleaseReason.DWELL
    assert first.t_ms == settled + ESCALATE_AFTER_MS, (start, settled, first)
    assert first.t_ms > settled + LIVE_DWELL_MS
    assert [c.t_ms for c in turn.transitions] == [settled + ESCALATE_AFTER_MS]


def test_escalation_threshold_clears_the_inter_boundary_interval() -> None:
    """Seed: the constant clears the measured worst wait of punctuated speech, and a window
    that only clears the dwell (1600 ms, the value seed 004 seeded to show it) escalates the
    punctuated meeting: the
    binding constraint is the measurement, not the dwell."""
    worst = max(
        w
        for name in PUNCTUATED
        for w in boundary_free_waits(read_events(CADENCE / f"{name}.jsonl"))
    )
    assert ESCALATE_AFTER_MS > worst > ESCALATED_DWELL_MS
    mixed = read_events(CADENCE / "late/mixed.jsonl")
    too_short = ReleaseConfig(escalate_after_ms=1600)
    rows = {r.mode: r for r in cadence_rows("late/mixed", mixed, too_short)}
    assert rows["balanced"].escalations >= 1
    assert {r.mode: r for r in cadence_rows("late/mixed", mixed)}["balanced"].escalations == 0


def test_escalation_cannot_flip_twice_inside_one_window() -> None:
    """Seed: probing every 500 ms over a hand-built timeline that punctuates in bursts, no two
    changes fall within one window. Issue 25's case among them: "ok. yes." then 23 bare words
    must not de-escalate and re-escalate at the same moment."""
    turn = punctuated_start()
    turn.say(clause(30, ""))  # escalates
    turn.say(["ok.", "yes."])  # two clause ends at once
    turn.say(clause(23, "", "b"))
    turn.say(clause(4) + clause(3) + clause(5))
    turn.say(clause(30, "", "c"))
    changes = turn.transitions
    assert len(changes) >= 2
    assert all(b.t_ms - a.t_ms >= ESCALATE_AFTER_MS for a, b in pairwise(changes)), changes
    assert all(a.escalated != b.escalated for a, b in pairwise(changes))


def test_escalation_does_not_oscillate_on_alternating_speech() -> None:
    """Seed: speech alternating punctuated and unpunctuated stretches gives alternating
    changes, consecutive escalations at least one window apart; on both alternating
    fixtures (one final per segment, one per turn)."""
    for name in ["alternating", "late/alternating"]:
        turn_events = read_events(CADENCE / f"{name}.jsonl")
        from heard.release import Captions
        from heard.transcript.stabilizer import TranscriptStabilizer

        stabilizer, captions = TranscriptStabilizer(), Captions("balanced")
        last = turn_events[0].t_ms
        for e in turn_events:
            for t in range(last + 500, e.t_ms, 500):
                captions.tick(t)
            last = e.t_ms
            captions.on_step(stabilizer.on_event(e))
        changes = captions.tracker("speaker").transitions
        escalations = [c for c in changes if c.escalated]
        assert 1 <= len(escalations) <= 2, (name, changes)  # two unpunctuated windows
        assert all(a.escalated != b.escalated for a, b in pairwise(changes))
        assert all(b.t_ms - a.t_ms >= ESCALATE_AFTER_MS for a, b in pairwise(changes))


def test_a_single_boundary_does_not_de_escalate() -> None:
    """Seed: one clause end is not evidence; the stretch stays escalated however long after."""
    turn = punctuated_start()
    turn.say(clause(30, ""))
    assert turn.escalated
    turn.say(clause(6))  # one stray full stop
    turn.say(clause(40, "", "b"))
    assert turn.escalated
    assert [c.escalated for c in turn.transitions] == [True]


def test_sustained_boundaries_de_escalate_the_stretch() -> None:
    """Seed: two clause ends bring Balanced back (dwell releases between them do not reset
    the count); commas never do."""
    turn = punctuated_start()
    turn.say(clause(30, ""))
    escalated_at = turn.transitions[-1].t_ms
    turn.say(clause(8, ",") * 3)  # commas only, past a whole window
    assert turn.escalated
    turn.say(clause(9))
    turn.say(clause(9, "", "b"))  # long enough for a dwell release between the two
    assert any(u.reason is ReleaseReason.DWELL and u.t_ms > escalated_at for u in turn.units)
    turn.say([*clause(4, "?"), "and"])  # the question mark settles under the next word
    assert not turn.escalated
    assert [c.escalated for c in turn.transitions] == [True, False]


def test_escalated_balanced_still_releases_at_clause_boundaries() -> None:
    """Issue 25: escalation adds dwell releases; a clause end still releases at once (it
    waited for the dwell before)."""
    turn = punctuated_start()
    turn.say(clause(30, ""))
    assert turn.escalated
    turn.units.clear()
    turn.every_ms = 150  # a quick clause: its end settles before the dwell falls due
    turn.say(["so", "we", "ship", "today.", "and"])  # "today." settles under "and"
    [unit] = [u for u in turn.units if u.reason is ReleaseReason.BOUNDARY]
    assert unit.text.endswith("so we ship today.")
    assert unit.t_ms == turn.t_ms - turn.every_ms  # at the partial that settled it
