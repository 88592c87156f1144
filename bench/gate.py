"""Speculations fired on the real partial logs for a grid of gate settings.

What the defaults in ``heard.transcript.speculation`` were chosen from: retrievals per
turn (cost) against how fresh the last speculative query is when the final
arrives (the share of the final's content tokens it already held).

Usage: python bench/gate.py [--json]
"""

from __future__ import annotations

import argparse
import json
from collections import Counter

from heard.samples import SAMPLE_LOGS, sample_path
from heard.transcript.events import read_events
from heard.transcript.speculation import GateConfig
from heard.transcript.stabilizer import TranscriptStabilizer
from heard.transcript.tokenize import content_tokens

DEBOUNCE_MS = (0, 300, 1000)
MIN_NEW = (1, 2, 3)


def measure(name: str, config: GateConfig) -> dict[str, object]:
    events = read_events(sample_path(name))
    session = TranscriptStabilizer(gate=config)
    last_query: tuple[str, ...] = ()
    for step in session.replay(events[:-1]):
        if step.decision.fires:
            last_query = tuple(content_tokens(step.hypothesis.stable_prefix))
    final_tokens = content_tokens(events[-1].text)
    covered = (Counter(last_query) & Counter(final_tokens)).total()  # a bag, as BM25 sees it
    return {
        "log": name,
        "debounce_ms": config.debounce_ms,
        "min_new_content_tokens": config.min_new_content_tokens,
        "partials": len(events) - 1,
        "speculations": session.summary.speculations,
        "final_tokens_in_last_query": f"{covered}/{len(final_tokens)}",
    }


def main(argv: list[str] | None = None) -> list[dict[str, object]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    rows = [
        measure(name, GateConfig(debounce_ms=d, min_new_content_tokens=m))
        for name in SAMPLE_LOGS
        for d in DEBOUNCE_MS
        for m in MIN_NEW
    ]
    if args.json:
        print(json.dumps(rows, indent=1))
        return rows
    print(f"{'log':22}{'debounce':>9}{'min new':>8}{'fired':>7}{'final tokens in last query':>28}")
    for r in rows:
        print(
            f"{r['log']!s:22}{r['debounce_ms']!s:>9}{r['min_new_content_tokens']!s:>8}"
            f"{r['speculations']!s:>7}{r['final_tokens_in_last_query']!s:>28}"
        )
    return rows


if __name__ == "__main__":
    main()
