"""The release policy on the committed cadence fixtures (real streaming ASR over espeak-ng):
the cadence targets, and the thresholds derived from what the fixtures measure."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import pytest

from heard.release import BARE_FINAL_WORDS, ESCALATE_AFTER_WORDS, punctuated
from heard.release.cadence import cadence_rows, nearest_rank, unpunctuated_runs
from heard.transcript.events import EventKind, read_events

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "cadence"
PUNCTUATED = ["natural", "continuous", "mixed"]
ALL = ["natural", "continuous", "unpunctuated", "mixed", "alternating"]


def events(name: str):  # type: ignore[no-untyped-def]
    return read_events(FIXTURES / f"{name}.jsonl")


def rows(name: str):  # type: ignore[no-untyped-def]
    return {r.mode: r for r in cadence_rows(name, events(name))}


def test_the_escalation_thresholds_clear_every_punctuated_run() -> None:
    runs = [n for name in PUNCTUATED for n in unpunctuated_runs(events(name))]
    assert len(runs) >= 40, "the fixtures must hold enough marks to measure"
    # 20% above the longest run of words the punctuated finals go without a mark
    assert round(1.2 * max(runs)) == ESCALATE_AFTER_WORDS
    bare_finals = [
        e.text for name in PUNCTUATED for e in events(name)
        if e.kind is EventKind.FINAL and not any(map(punctuated, e.text.split()))
    ]  # fmt: skip
    assert bare_finals == [], "a punctuating recognizer ends its utterances with a mark"
    assert BARE_FINAL_WORDS >= 8


@pytest.mark.parametrize("name", ALL)
def test_every_mode_holds_every_final_word_and_relaxed_is_the_floor(name: str) -> None:
    finals = sum(len(e.text.split()) for e in events(name) if e.kind is EventKind.FINAL)
    by_mode = rows(name)
    assert {r.words for r in by_mode.values()} == {finals}
    assert by_mode["relaxed"].x_relaxed == 1.0
    assert by_mode["relaxed"].corrections == 0
    assert by_mode["live"].x_live == 1.0
    assert by_mode["balanced"].units >= by_mode["relaxed"].units
    assert by_mode["live"].p95_ms <= by_mode["relaxed"].p95_ms


def test_the_cadence_targets_hold() -> None:
    natural, mixed, unpunctuated = rows("natural"), rows("mixed"), rows("unpunctuated")
    assert natural["balanced"].x_relaxed == 1.0
    assert natural["balanced"].escalations == 0
    assert mixed["balanced"].escalations == 0, "punctuated speech never escalates"
    assert mixed["balanced"].x_relaxed <= 1.2
    assert unpunctuated["balanced"].escalations == 1
    assert unpunctuated["balanced"].p95_ms <= 5000
    assert unpunctuated["balanced"].x_live <= 0.8


def test_on_the_alternating_fixture_balanced_escalates_and_returns() -> None:
    from heard.release import Captions
    from heard.transcript.stabilizer import TranscriptStabilizer

    stabilizer, captions = TranscriptStabilizer(), Captions("balanced")
    for e in events("alternating"):
        captions.on_step(stabilizer.on_event(e))
    changes = captions.tracker("speaker").transitions
    assert [c.escalated for c in changes[:2]] == [True, False]
    assert all(a.escalated != b.escalated for a, b in pairwise(changes))


def test_nearest_rank() -> None:
    assert nearest_rank([5, 1, 3, 2, 4], 50) == 3
    assert nearest_rank([5, 1, 3, 2, 4], 95) == 5
    assert nearest_rank([7], 1) == 7
