"""The script that made tests/data/cadence/late remakes it from the committed logs, exactly."""

from __future__ import annotations

import shutil
import subprocess
import sys
from itertools import pairwise
from pathlib import Path

from heard.transcript.events import EventKind, read_events

REPO = Path(__file__).resolve().parents[2]
CADENCE = REPO / "tests" / "data" / "cadence"
TOOL = REPO / "tools" / "make_late_final_fixtures.py"


def test_the_late_fixtures_are_what_the_script_makes(tmp_path: Path) -> None:
    for log in CADENCE.glob("*.jsonl"):
        shutil.copy(log, tmp_path / log.name)
    subprocess.run([sys.executable, str(TOOL), str(tmp_path)], check=True, capture_output=True)
    made = sorted(p.name for p in (tmp_path / "late").glob("*.jsonl"))
    assert made == sorted(p.name for p in (CADENCE / "late").glob("*.jsonl"))
    for name in made:
        assert (tmp_path / "late" / name).read_bytes() == (CADENCE / "late" / name).read_bytes()


def test_one_final_per_turn_and_each_partial_holds_the_turn_so_far() -> None:
    source = read_events(CADENCE / "continuous.jsonl")
    late = read_events(CADENCE / "late" / "continuous.jsonl")
    assert sum(e.kind is EventKind.FINAL for e in source) > 5
    assert [e.kind for e in late].count(EventKind.FINAL) == 1
    finals = " ".join(e.text for e in source if e.kind is EventKind.FINAL)
    assert late[-1].text == finals
    before_last = [e.text for e in source if e.kind is EventKind.FINAL][:-1]
    assert late[-2].text.startswith(" ".join(before_last))

    def revised(name: str) -> int:
        """Partials in which a word at least five back from the last one reads otherwise."""
        texts = [e.text.split() for e in read_events(CADENCE / "late" / f"{name}.jsonl")]
        return sum(a[: len(a) - 5] != b[: len(a) - 5] for a, b in pairwise(texts))

    assert revised("gemini") >= revised("continuous") + 5, "Gemini's log revises earlier words"
    gemini = read_events(CADENCE / "late" / "gemini.jsonl")
    assert gemini[-1] == late[-1], "and ends on the same final"
