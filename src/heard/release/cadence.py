"""The cadence table: what each release mode costs and how long words wait, on an event log.

Events go through the stabilizer and the ``Captions`` stage the live path uses, with the
stage's timer ticking every ``TICK_MS`` between events, and ``finish`` at the end. The units
are then applied to each speaker's caption document (``apply_units``): it must come out as
the speaker's finals, word for word. For every final word, latency runs from the first
partial that held a word at its place in its utterance (a word only the final holds counts
from the final) to the unit that put it in the caption. Percentiles are nearest-rank.
Pure: events in, rows out.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from heard.release.captions import TICK_MS, Captions
from heard.release.tracker import ReleaseConfig, ReleaseMode, ReleaseReason, ReleaseUnit
from heard.transcript.events import EventKind, TranscriptEvent
from heard.transcript.stabilizer import TranscriptStabilizer

__all__ = [
    "CadenceRow",
    "ModeRun",
    "apply_units",
    "boundary_free_waits",
    "cadence_rows",
    "caption_run",
    "first_mark_waits",
    "nearest_rank",
    "unpunctuated_runs",
]


def nearest_rank(values: Sequence[float], percentile: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, math.ceil(percentile / 100 * len(ordered)))
    return ordered[rank - 1]


def apply_units(units: Iterable[ReleaseUnit]) -> dict[str, list[tuple[str, int]]]:
    """Each speaker's caption document after ``units``: (word, when it was put there)."""
    documents: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for unit in units:
        document = documents[unit.speaker]
        if not 0 <= unit.position <= len(document) - unit.replaces:
            raise AssertionError(f"unit out of place: {unit} on {len(document)} words")
        new = [(w, unit.t_ms) for w in unit.text.split()]
        document[unit.position : unit.position + unit.replaces] = new
    return dict(documents)


@dataclass(frozen=True, slots=True)
class ModeRun:
    """One release mode over an event log."""

    units: list[ReleaseUnit]
    finals: list[tuple[str, str]]
    """(speaker, text) of every final, in order."""
    documents: dict[str, list[tuple[str, int]]]
    """Each speaker's caption document once every unit is applied."""
    latencies_ms: list[float]
    """Per final word: from when it was first heard to when the captions held it."""
    escalations: int
    corrected_words: int
    """Released words a final contradicted."""


def caption_run(
    events: Sequence[TranscriptEvent], mode: ReleaseMode | str, config: ReleaseConfig | None = None
) -> ModeRun:
    """The units one mode releases from ``events``, as the live path would, with latencies."""
    stabilizer = TranscriptStabilizer()
    captions = Captions(mode, config)
    heard_at: dict[tuple[str, int, int], int] = {}  # (speaker, utterance, word) -> first heard
    utterance: dict[str, int] = defaultdict(int)
    finals: list[tuple[str, str]] = []
    last_t = events[0].t_ms if events else 0
    for e in events:
        for t in range(last_t + TICK_MS, e.t_ms, TICK_MS):
            captions.tick(t)
        last_t = e.t_ms
        u = utterance[e.speaker]
        for i in range(len(e.text.split())):
            heard_at.setdefault((e.speaker, u, i), e.t_ms)
        captions.on_step(stabilizer.on_event(e))
        if e.kind is EventKind.FINAL:
            finals.append((e.speaker, e.text))
            utterance[e.speaker] += 1
    captions.finish(last_t)
    documents = apply_units(captions.units)
    latencies: list[float] = []
    start: dict[str, int] = defaultdict(int)
    count: dict[str, int] = defaultdict(int)
    for speaker, text in finals:
        document = documents.get(speaker, [])
        u = count[speaker]
        for i in range(len(text.split())):
            position = start[speaker] + i
            if position < len(document):
                latencies.append(document[position][1] - heard_at[(speaker, u, i)])
        start[speaker] += len(text.split())
        count[speaker] += 1
    return ModeRun(
        captions.units,
        finals,
        documents,
        latencies,
        escalations=sum(c.escalated for t in captions.trackers.values() for c in t.transitions),
        corrected_words=sum(t.corrections for t in captions.trackers.values()),
    )


@dataclass(frozen=True, slots=True)
class CadenceRow:
    fixture: str
    mode: str
    units: int
    """Units that release new words (corrections are counted apart)."""
    x_relaxed: float
    """Units against Relaxed's on the same fixture."""
    x_live: float
    """Units against Live's (the reference) on the same fixture."""
    words: int
    """Words the captions hold at the end: the finals' word count, when all is well."""
    p50_ms: float
    p95_ms: float
    corrections: int
    """Units that replace words already shown (what a final contradicted)."""
    escalations: int
    """Times Balanced escalated (de-escalations are not counted)."""
    released: tuple[ReleaseUnit, ...] = ()
    finals: tuple[tuple[str, str], ...] = ()

    def to_dict(self, *, detail: bool = False) -> dict[str, object]:
        row: dict[str, object] = {
            "fixture": self.fixture, "mode": self.mode, "units": self.units,
            "x_relaxed": self.x_relaxed, "x_live": self.x_live, "words": self.words,
            "p50_ms": self.p50_ms, "p95_ms": self.p95_ms, "corrections": self.corrections,
            "escalations": self.escalations,
        }  # fmt: skip
        if detail:
            row["released"] = [
                {"text": u.text, "speaker": u.speaker, "t_ms": u.t_ms, "reason": str(u.reason),
                 "position": u.position, "replaces": u.replaces}
                for u in self.released
            ]  # fmt: skip
            row["finals"] = [{"speaker": s, "text": t} for s, t in self.finals]
        return row


def cadence_rows(
    fixture: str, events: Sequence[TranscriptEvent], config: ReleaseConfig | None = None
) -> list[CadenceRow]:
    """One row per mode; units are counted against Relaxed and against Live."""
    runs = {m: caption_run(events, m, config) for m in ReleaseMode}
    releases = {m: sum(u.reason is not ReleaseReason.CORRECTION for u in r.units)
                for m, r in runs.items()}  # fmt: skip
    relaxed = max(1, releases[ReleaseMode.RELAXED])
    live = max(1, releases[ReleaseMode.LIVE])
    return [
        CadenceRow(
            fixture=fixture,
            mode=str(mode),
            units=releases[mode],
            x_relaxed=round(releases[mode] / relaxed, 2),
            x_live=round(releases[mode] / live, 2),
            words=sum(len(d) for d in run.documents.values()),
            p50_ms=nearest_rank(run.latencies_ms, 50),
            p95_ms=nearest_rank(run.latencies_ms, 95),
            corrections=len(run.units) - releases[mode],
            escalations=run.escalations,
            released=tuple(run.units),
            finals=tuple(run.finals),
        )
        for mode, run in runs.items()
    ]


def unpunctuated_runs(events: Sequence[TranscriptEvent]) -> list[int]:
    """Stable words heard between punctuation marks, per run, as Balanced's escalation counts
    them (with escalation off, so every run is seen whole)."""
    trackers = _unescalated(events).trackers.values()
    return [n for tracker in trackers for n in tracker.escalation.unpunctuated_runs]


def _unescalated(events: Sequence[TranscriptEvent]) -> Captions:
    """Balanced over ``events`` with every escalation rule off, the timer ticking as live."""
    config = ReleaseConfig(
        escalate_after_ms=None,
        escalate_before_any_mark_ms=None,
        escalate_after_words=10**9,
        bare_final_words=10**9,
    )
    stabilizer = TranscriptStabilizer()
    captions = Captions(ReleaseMode.BALANCED, config)
    last_t = events[0].t_ms if events else 0
    for e in events:
        for t in range(last_t + TICK_MS, e.t_ms, TICK_MS):
            captions.tick(t)
        last_t = e.t_ms
        captions.on_step(stabilizer.on_event(e))
    return captions


def boundary_free_waits(events: Sequence[TranscriptEvent]) -> list[int]:
    """How long settled words waited with no punctuation mark after the last one, each wait as
    it ended (ms), as Balanced's escalation on time measures them, with escalation off."""
    trackers = _unescalated(events).trackers.values()
    return [w for tracker in trackers for w in tracker.escalation.boundary_free_waits]


def first_mark_waits(events: Sequence[TranscriptEvent]) -> list[int | None]:
    """Per speaker, how long settled words had waited when the recognizer wrote its first
    punctuation mark (ms; None if it never did)."""
    trackers = _unescalated(events).trackers.values()
    return [tracker.escalation.first_mark_wait_ms for tracker in trackers]
