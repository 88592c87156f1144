"""Throughput of transcript stabilization on a synthetic one-hour conversation.

Two speakers take turns of 4-20 s; each turn revises every 90 ms (about 38,000
revisions an hour) the way re-decoding recognizers do: the text grows about 2.5
words a second, the last word is often wrong, case and punctuation flip, and now
and then a word inside the prefix changes. Measured side by side in one run:

* ``heard session``: ``TranscriptStabilizer`` (turns, accumulator, strong signals,
  speculation gate) - what ``heard replay`` and a live conversation run;
* ``heard accumulator``: ``TranscriptAccumulator`` alone;
* ``LocalAgreement-2``: the commit policy of whisper_streaming, re-implemented
  in ``bench/peers.py`` from its published description. It keeps no last-word
  rule, no contradiction count and no gate, so it is a floor on cost.

Usage: python bench/transcript.py [--minutes 60] [--repeat 5] [--json]
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass

from heard.transcript.accumulator import TranscriptAccumulator
from heard.transcript.events import EventKind, TranscriptEvent
from heard.transcript.signals import SignalExtractor
from heard.transcript.stabilizer import TranscriptStabilizer
from peers import LocalAgreement2

VOCABULARY = """
    we should book a table for two near the river on friday and ask rhea whether the
    tokyo office still needs the budget review before the launch which is planned for
    next week because kushal said the numbers look fine but the boat trip might move to
    saturday
""".split()
ENTITIES = ["Rhea", "Kushal", "Tokyo office", "budget review"]
REVISION_EVERY_MS = 90
WORDS_PER_S = 2.5


def synthetic_conversation(minutes: float, seed: int = 1) -> list[TranscriptEvent]:
    rng = random.Random(seed)
    events: list[TranscriptEvent] = []
    t_ms = 0
    end_ms = int(minutes * 60_000)
    speakers = ("alice", "bob")
    turn = 0
    while t_ms < end_ms:
        speaker = speakers[turn % 2]
        turn += 1
        length_ms = rng.randint(4_000, 20_000)
        truth = [rng.choice(VOCABULARY) for _ in range(int(length_ms / 1000 * WORDS_PER_S) + 1)]
        for step_ms in range(REVISION_EVERY_MS, length_ms, REVISION_EVERY_MS):
            n = max(1, int(step_ms / 1000 * WORDS_PER_S))
            words = truth[:n]
            if rng.random() < 0.5:
                words[-1] = rng.choice(VOCABULARY)
            if rng.random() < 0.02:
                words[rng.randrange(n)] = rng.choice(VOCABULARY)
            if rng.random() < 0.3:
                words[-1] = words[-1].capitalize() + "."
            events.append(
                TranscriptEvent(t_ms + step_ms, EventKind.PARTIAL, " ".join(words), speaker)
            )
        t_ms += length_ms
        events.append(TranscriptEvent(t_ms, EventKind.FINAL, " ".join(truth) + ".", speaker))
        t_ms += rng.randint(100, 600)
    return events


def run_session(events: list[TranscriptEvent]) -> int:
    session = TranscriptStabilizer(signals=SignalExtractor(ENTITIES))
    for event in events:
        session.on_event(event)
    return session.summary.speculations


def run_accumulators(events: list[TranscriptEvent]) -> int:
    accs: dict[str, TranscriptAccumulator] = {}
    stable = 0
    for e in events:
        acc = accs.get(e.speaker)
        if acc is None or acc.final:
            acc = accs[e.speaker] = TranscriptAccumulator()
        if e.kind is EventKind.FINAL:
            stable += acc.finalize(e.text).stable_word_count
        else:
            acc.push_partial(e.text)
    return stable


def run_local_agreement(events: list[TranscriptEvent]) -> int:
    buffers: dict[str, LocalAgreement2] = {}
    committed = 0
    for e in events:
        buf = buffers.setdefault(e.speaker, LocalAgreement2())
        if e.kind is EventKind.FINAL:
            committed += len(buf.committed)
            buf.finish(e.text)
        else:
            buf.insert(e.text)
    return committed


@dataclass(frozen=True, slots=True)
class Timing:
    name: str
    best_s: float
    revisions: int

    @property
    def per_s(self) -> float:
        return self.revisions / self.best_s


def best_of(name: str, fn: Callable[[list[TranscriptEvent]], int], events: list[TranscriptEvent],
            repeat: int) -> Timing:  # fmt: skip
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        fn(events)
        best = min(best, time.perf_counter() - started)
    return Timing(name, best, len(events))


def main(argv: list[str] | None = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    events = synthetic_conversation(args.minutes)
    timings = [
        best_of("heard session", run_session, events, args.repeat),
        best_of("heard accumulator", run_accumulators, events, args.repeat),
        best_of("LocalAgreement-2 (re-implemented)", run_local_agreement, events, args.repeat),
    ]
    peer = timings[-1]
    result: dict[str, object] = {
        "minutes": args.minutes,
        "revisions": len(events),
        "speculations": run_session(events),
        "timings": [
            {
                "name": t.name,
                "best_s": round(t.best_s, 4),
                "revisions_per_s": round(t.per_s),
                "cost_vs_local_agreement": round(t.best_s / peer.best_s, 2),
            }
            for t in timings
        ],
    }
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        print(
            f"{len(events):,} revisions ({args.minutes:g} min, 2 speakers), best of {args.repeat}"
        )
        print(f"{'':36}{'seconds':>9}{'revisions/s':>14}{'x LA-2 time':>13}")
        for t in timings:
            print(f"{t.name:36}{t.best_s:9.3f}{t.per_s:14,.0f}{t.best_s / peer.best_s:13.2f}")
        print(f"speculations fired by the gate: {result['speculations']:,}")
    return result


if __name__ == "__main__":
    main()
