"""The cadence table: what each release mode costs and how long words wait, on an event log.

Events are replayed per speaker through a ``ReleaseTracker`` with a timer tick
between events (as a live pipeline polls). For every released word, latency is
the time from the first partial that held it (its position in the utterance)
to the release of the unit carrying it; a word only the final holds counts
from the final. Percentiles are nearest-rank. Pure: events in, rows out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from heard.release.tracker import ReleaseConfig, ReleaseMode, ReleaseTracker, ReleaseUnit
from heard.transcript.events import EventKind, TranscriptEvent

__all__ = [
    "CadenceRow",
    "ModeRun",
    "SpokenUnit",
    "cadence_rows",
    "clause_gaps",
    "nearest_rank",
    "release_units",
]

TICK_MS = 100


def nearest_rank(values: Sequence[float], percentile: float) -> float:
    """The nearest-rank percentile (0 < percentile <= 100) of ``values``."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(percentile / 100 * len(ordered)))
    return ordered[rank - 1]


@dataclass(frozen=True, slots=True)
class CadenceRow:
    fixture: str
    mode: str
    units: int
    multiplier: float
    """Units against Relaxed's on the same fixture."""
    words: int
    p50_ms: float
    p95_ms: float
    transitions: int
    """Escalations plus de-escalations (Balanced only)."""

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class SpokenUnit:
    speaker: str
    unit: ReleaseUnit


@dataclass(frozen=True, slots=True)
class ModeRun:
    """One release mode over an event log."""

    units: list[SpokenUnit]
    latencies_ms: list[float]
    """Per released word: from when it was first heard to its release."""
    transitions: int
    """Escalations plus de-escalations (Balanced only)."""


def release_units(
    events: Sequence[TranscriptEvent],
    mode: ReleaseMode | str,
    config: ReleaseConfig | None = None,
) -> ModeRun:
    """The units one mode releases from ``events`` (every speaker), with their latencies."""
    trackers: dict[str, ReleaseTracker] = {}
    heard_at: dict[tuple[str, int, int], int] = {}  # (speaker, utterance, word) -> first heard
    units: list[SpokenUnit] = []
    latencies: list[float] = []
    last_t = events[0].t_ms if events else 0
    for e in events:
        for t in range(last_t + TICK_MS, e.t_ms, TICK_MS):
            for speaker, tracker in trackers.items():
                units += [SpokenUnit(speaker, u) for u in tracker.poll(t)]
        last_t = e.t_ms
        tracker = trackers.setdefault(e.speaker, ReleaseTracker(mode, config))
        utterance = tracker.utterance
        for i in range(len(e.text.split())):
            heard_at.setdefault((e.speaker, utterance, i), e.t_ms)
        if e.kind is EventKind.FINAL:
            units += [SpokenUnit(e.speaker, u) for u in tracker.on_finalize(e.text, e.t_ms)]
        else:
            units += [SpokenUnit(e.speaker, u) for u in tracker.on_partial(e.text, e.t_ms)]
    for spoken in units:
        unit = spoken.unit
        for i in range(unit.first_word, unit.first_word + unit.words):
            first = heard_at.get((spoken.speaker, unit.utterance, i), unit.t_ms)
            latencies.append(unit.t_ms - first)
    transitions = sum(len(t.transitions) for t in trackers.values())
    return ModeRun(units, latencies, transitions)


def cadence_rows(
    fixture: str, events: Sequence[TranscriptEvent], config: ReleaseConfig | None = None
) -> list[CadenceRow]:
    """One row per mode; the multiplier is against Relaxed on the same events."""
    runs = {m: release_units(events, m, config) for m in ReleaseMode}
    relaxed = max(1, len(runs[ReleaseMode.RELAXED].units))
    return [
        CadenceRow(
            fixture=fixture,
            mode=str(mode),
            units=len(run.units),
            multiplier=round(len(run.units) / relaxed, 2),
            words=len(run.latencies_ms),
            p50_ms=nearest_rank(run.latencies_ms, 50),
            p95_ms=nearest_rank(run.latencies_ms, 95),
            transitions=run.transitions,
        )
        for mode, run in runs.items()
    ]


def clause_gaps(events: Sequence[TranscriptEvent]) -> list[int]:
    """How long settled text waited for each clause boundary, as escalation measures it.

    Balanced runs with escalation and pauses off, one tracker per speaker; the wait
    starts when unreleased stable text appears after the previous boundary (or the
    utterance start), so a pause between utterances is never counted.
    """
    config = ReleaseConfig(escalate_after_ms=10**9, pause_ms=None)
    trackers: dict[str, ReleaseTracker] = {}
    for e in events:
        tracker = trackers.setdefault(e.speaker, ReleaseTracker(ReleaseMode.BALANCED, config))
        if e.kind is EventKind.FINAL:
            tracker.on_finalize(e.text, e.t_ms)
        else:
            tracker.on_partial(e.text, e.t_ms)
    return [w for tracker in trackers.values() for w in tracker.boundary_waits]
