"""The cadence table: every committed fixture under Relaxed, Balanced and Live.

Two families: heard's own streaming ASR over espeak-ng speech, which finalizes every few
seconds (``tools/make_cadence_fixtures.py``, logs in ``tests/data/cadence``), and the same
recognition as a recognizer that finalizes once per turn, plus a Gemini-style log whose
partials revise earlier words (``tools/make_late_final_fixtures.py``, ``late/``). Latency runs
from a word first heard in a partial to the release of the unit carrying it; percentiles are
nearest-rank. Also prints Balanced without pause boundaries (the design of the spec this
policy extends), for comparison.

Usage: python bench/cadence.py [--json]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from heard.cli.cadence import render_table
from heard.release import ReleaseConfig
from heard.release.cadence import CadenceRow, cadence_rows
from heard.transcript.events import read_events

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "data" / "cadence"
ORDER = ["natural", "continuous", "unpunctuated", "mixed", "alternating"]
LATE = [f"late/{name}" for name in [*ORDER, "gemini"]]


def main(argv: list[str] | None = None) -> list[CadenceRow]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    rows = [
        r for name in ORDER for r in cadence_rows(name, read_events(FIXTURES / f"{name}.jsonl"))
    ]
    late = [r for name in LATE for r in cadence_rows(name, read_events(FIXTURES / f"{name}.jsonl"))]
    no_pause = [
        r
        for name in [*ORDER, *LATE]
        for r in cadence_rows(
            name, read_events(FIXTURES / f"{name}.jsonl"), ReleaseConfig(pause_ms=None)
        )
        if r.mode == "balanced"
    ]
    if args.json:
        doc = {
            "rows": [r.to_dict() for r in rows],
            "late_finals": [r.to_dict() for r in late],
            "balanced_without_pauses": [r.to_dict() for r in no_pause],
        }
        print(json.dumps(doc, indent=1))
    else:
        print(render_table(rows))
        print("\nOne final per turn (late finals), and a Gemini-style log:")
        print(render_table(late))
        print("\nBalanced without pause boundaries:")
        print(render_table(no_pause))
    return rows + late


if __name__ == "__main__":
    main()
