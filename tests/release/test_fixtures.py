"""The release policy on the committed cadence fixtures (real streaming ASR over espeak-ng)."""

from __future__ import annotations

from pathlib import Path

import pytest

from heard.release import ESCALATE_AFTER_MS, LIVE_DWELL_MS
from heard.release.cadence import cadence_rows, clause_gaps, nearest_rank
from heard.transcript.events import read_events

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "cadence"
PUNCTUATED = ["natural", "continuous", "mixed"]


def events(name: str):  # type: ignore[no-untyped-def]
    return read_events(FIXTURES / f"{name}.jsonl")


def test_escalation_clears_the_worst_clause_gap() -> None:
    worst = max(max(clause_gaps(events(name)), default=0) for name in PUNCTUATED)
    assert worst > LIVE_DWELL_MS, "the fixtures must exercise gaps longer than the dwell"
    assert worst < ESCALATE_AFTER_MS, (
        f"a {worst} ms gap between clause boundaries on punctuated speech would escalate "
        f"Balanced ({ESCALATE_AFTER_MS} ms) and make it cost what Live costs"
    )


@pytest.mark.parametrize("name", ["natural", "continuous", "unpunctuated", "mixed", "alternating"])
def test_every_mode_releases_every_word_and_relaxed_is_the_floor(name: str) -> None:
    rows = {r.mode: r for r in cadence_rows(name, events(name))}
    assert rows["relaxed"].multiplier == 1.0
    assert rows["live"].units >= rows["relaxed"].units
    assert rows["balanced"].units >= rows["relaxed"].units
    assert rows["live"].p95_ms <= rows["relaxed"].p95_ms


def test_balanced_escalates_on_unpunctuated_speech_only_when_needed() -> None:
    unpunctuated = {r.mode: r for r in cadence_rows("u", events("unpunctuated"))}
    natural = {r.mode: r for r in cadence_rows("n", events("natural"))}
    assert unpunctuated["balanced"].transitions >= 1
    assert unpunctuated["balanced"].p95_ms < unpunctuated["relaxed"].p95_ms
    assert unpunctuated["balanced"].units < unpunctuated["live"].units
    assert natural["balanced"].transitions == 0


def test_nearest_rank() -> None:
    assert nearest_rank([5, 1, 3, 2, 4], 50) == 3
    assert nearest_rank([5, 1, 3, 2, 4], 95) == 5
    assert nearest_rank([7], 1) == 7
