"""The release policy on the committed cadence fixtures (real streaming ASR over espeak-ng)."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import pytest

from heard.release import ESCALATE_AFTER_MS, LIVE_DWELL_MS, ReleaseTracker
from heard.release.cadence import cadence_rows, clause_gaps, nearest_rank
from heard.transcript.events import EventKind, read_events

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "cadence"
PUNCTUATED = ["natural", "continuous", "mixed"]


def events(name: str):  # type: ignore[no-untyped-def]
    return read_events(FIXTURES / f"{name}.jsonl")


def test_escalation_clears_the_clause_gaps() -> None:
    gaps = {name: clause_gaps(events(name)) for name in PUNCTUATED}
    every = [g for values in gaps.values() for g in values]
    assert len(every) >= 20, "the fixtures must hold enough boundaries to measure"
    assert max(every) > LIVE_DWELL_MS, "the fixtures must exercise gaps longer than the dwell"
    # Punctuated speech must not escalate Balanced more than once per fixture (one
    # stretch where the recognizer drops punctuation is real life), and nine waits in
    # ten must stay under the threshold: otherwise Balanced costs what Live costs.
    for name, values in gaps.items():
        above = [g for g in values if g >= ESCALATE_AFTER_MS]
        assert len(above) <= 1, f"{name}: waits {above} ms would escalate Balanced"
    assert sum(g < ESCALATE_AFTER_MS for g in every) >= 0.9 * len(every)


@pytest.mark.parametrize("name", ["natural", "continuous", "unpunctuated", "mixed", "alternating"])
def test_every_mode_releases_every_word_and_relaxed_is_the_floor(name: str) -> None:
    rows = {r.mode: r for r in cadence_rows(name, events(name))}
    assert rows["relaxed"].multiplier == 1.0
    assert rows["live"].units >= rows["relaxed"].units
    assert rows["balanced"].units >= rows["relaxed"].units
    assert rows["live"].p95_ms <= rows["relaxed"].p95_ms


def test_the_cadence_targets_hold() -> None:
    rows = {
        name: {r.mode: r for r in cadence_rows(name, events(name))}
        for name in ["natural", "unpunctuated", "mixed"]
    }
    assert rows["natural"]["balanced"].multiplier == 1.0
    assert rows["natural"]["balanced"].transitions == 0
    assert rows["mixed"]["balanced"].multiplier <= 1.2
    unpunctuated = rows["unpunctuated"]
    assert unpunctuated["balanced"].transitions >= 1
    assert unpunctuated["balanced"].p95_ms <= 6000
    assert unpunctuated["balanced"].multiplier <= 5.0
    assert unpunctuated["balanced"].units < unpunctuated["live"].units


def test_nearest_rank() -> None:
    assert nearest_rank([5, 1, 3, 2, 4], 50) == 3
    assert nearest_rank([5, 1, 3, 2, 4], 95) == 5
    assert nearest_rank([7], 1) == 7


def test_on_the_alternating_fixture_balanced_escalates_and_returns() -> None:
    tracker = ReleaseTracker("balanced")
    last: int | None = None
    for e in events("alternating"):
        for t in range((last or e.t_ms) + 100, e.t_ms, 100):  # the live pipeline's timer
            tracker.poll(t)
        last = e.t_ms
        if e.kind is EventKind.FINAL:
            tracker.on_finalize(e.text, e.t_ms)
        else:
            tracker.on_partial(e.text, e.t_ms)
    states = [c.escalated for c in tracker.transitions]
    assert states[:2] == [True, False], "escalates in a bare stretch, returns when punctuated"
    assert all(a != b for a, b in pairwise(states)), "transitions alternate"
    ups = [c.t_ms for c in tracker.transitions if c.escalated]
    for a, b in pairwise(ups):  # the probe test above covers spacing on a longer script
        assert b - a >= ESCALATE_AFTER_MS
