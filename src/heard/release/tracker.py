"""When to release caption text for display and translation: Relaxed, Balanced, Live.

A ``ReleaseTracker`` follows one speaker's utterances. It releases only words of
the stable prefix (``heard.transcript``), behind a watermark, so no word is ever
released twice and nothing released is ever taken back: normalized erasure is 0
by construction (and asserted on every release).

* **Relaxed** releases once per utterance, at finalize: cheapest, slowest.
* **Live** releases settled text once it has waited ``LIVE_DWELL_MS``; the wait
  starts when unreleased stable text first appears, not when it last changed.
* **Balanced** releases at clause boundaries (punctuation) of at least
  ``MIN_UNIT_WORDS`` words, and at pauses (the partial has not changed for
  ``PAUSE_MS``: a soft boundary the audio gives even when the recognizer does not
  punctuate). After
  ``ESCALATE_AFTER_MS`` of waiting without any boundary it *escalates* to Live's
  dwell releases, and returns only after ``DE_ESCALATE_BOUNDARIES`` punctuation
  boundaries: absence is measured in time, presence in events, so the state
  cannot flip twice inside one window. Boundaries count whether or not they
  release.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from heard.registry import Registry
from heard.release.policy import (
    DE_ESCALATE_BOUNDARIES,
    ESCALATE_AFTER_MS,
    LIVE_DWELL_MS,
    MIN_UNIT_WORDS,
    PAUSE_MS,
    ends_clause,
)
from heard.transcript.accumulator import TranscriptAccumulator
from heard.transcript.words import normalized_key

__all__ = [
    "RELEASE_MODES",
    "ReleaseConfig",
    "ReleaseMode",
    "ReleaseReason",
    "ReleaseTracker",
    "ReleaseUnit",
]


class ReleaseMode(StrEnum):
    RELAXED = "relaxed"
    BALANCED = "balanced"
    LIVE = "live"


RELEASE_MODES: Registry[ReleaseMode] = Registry("release mode", {m.value: m for m in ReleaseMode})


class ReleaseReason(StrEnum):
    BOUNDARY = "boundary"
    PAUSE = "pause"
    DWELL = "dwell"
    FINALIZE = "finalize"


@dataclass(frozen=True, slots=True)
class ReleaseUnit:
    """Text released for display and translation, with why and when."""

    text: str
    reason: ReleaseReason
    t_ms: int
    utterance: int
    """Which utterance (from 0) of this tracker the words belong to."""
    first_word: int
    """Index of the unit's first word within its utterance."""
    words: int


@dataclass(frozen=True, slots=True)
class ReleaseConfig:
    dwell_ms: int = LIVE_DWELL_MS
    escalate_after_ms: int = ESCALATE_AFTER_MS
    de_escalate_boundaries: int = DE_ESCALATE_BOUNDARIES
    min_unit_words: int = MIN_UNIT_WORDS
    pause_ms: int | None = PAUSE_MS
    """None turns pause boundaries off (the behaviour of the spec's design)."""


@dataclass(frozen=True, slots=True)
class ModeChange:
    """Balanced switching to timed releases (``escalated``) or back to clauses, at ``t_ms``."""

    t_ms: int
    escalated: bool


class ReleaseTracker:
    """Release units for one speaker; ``on_partial`` / ``on_finalize`` / ``poll``."""

    def __init__(
        self, mode: ReleaseMode | str = ReleaseMode.BALANCED, config: ReleaseConfig | None = None
    ):
        self.mode = mode if isinstance(mode, ReleaseMode) else RELEASE_MODES[mode]
        self.config = config or ReleaseConfig()
        self.escalated = False
        self._boundaries_while_escalated = 0  # kept across utterances, like the state itself
        self.transitions: list[ModeChange] = []
        """Each time Balanced escalates or de-escalates."""
        self.boundaries_seen = 0
        """Clause boundaries counted so far, released or not."""
        self.boundary_waits: list[int] = []
        """For each boundary, how long text had waited for it: what escalation measures."""
        self.utterance = -1
        self._start_utterance()

    def _start_utterance(self) -> None:
        self.utterance += 1
        self._acc = TranscriptAccumulator()
        self._watermark = 0
        self._released_keys: list[str] = []
        self._stable: list[str] = []
        self._wait_since: int | None = None  # when unreleased stable text first appeared
        self._boundary_free_since: int | None = None
        self._next_boundary = 0  # clause boundaries before this word index are counted
        self._last_keys: list[str] = []
        self._last_growth_ms: int | None = None

    # -- events ---------------------------------------------------------------------------

    def on_partial(self, text: str, t_ms: int) -> list[ReleaseUnit]:
        hypothesis = self._acc.push_partial(text)
        keys = [normalized_key(w) for w in text.split()]
        if keys != self._last_keys or self._last_growth_ms is None:
            # the recognizer heard something new (or revised); an identical re-decode
            # means no new speech arrived
            self._last_keys = keys
            self._last_growth_ms = t_ms
        self._stable = hypothesis.stable_prefix.split()
        self._note_waiting(t_ms)
        return self._decide(t_ms)

    def poll(self, t_ms: int) -> list[ReleaseUnit]:
        """Let time pass without a new partial (dwell, escalation and pauses are timers)."""
        return self._decide(t_ms)

    def on_finalize(self, text: str, t_ms: int) -> list[ReleaseUnit]:
        """Release the final's words past the watermark; the next event starts a new utterance."""
        words = text.split()
        # Punctuation in the final is the recognizer punctuating: it counts toward
        # de-escalation like any boundary (heard's streaming ASR commits Whisper's
        # sentence-like segments as finals, so many boundaries arrive this way).
        for word in words[self._next_boundary :]:
            if ends_clause(word):
                self._count_boundary(t_ms)
        units = []
        if len(words) > self._watermark:
            units.append(
                self._release(words, len(words), ReleaseReason.FINALIZE, t_ms, check=False)
            )
        self._start_utterance()
        return units

    # -- decisions ------------------------------------------------------------------------

    def _note_waiting(self, t_ms: int) -> None:
        if len(self._stable) > self._watermark and self._wait_since is None:
            self._wait_since = t_ms
        if self._boundary_free_since is None:
            self._boundary_free_since = t_ms

    def _decide(self, t_ms: int) -> list[ReleaseUnit]:
        if self.mode is ReleaseMode.RELAXED:
            return []
        if self.mode is ReleaseMode.LIVE:
            return self._dwell(t_ms)
        units = self._boundaries(t_ms)
        if (
            not self.escalated
            and self._boundary_free_since is not None
            and self._wait_since is not None
        ):
            waited = t_ms - max(self._boundary_free_since, self._wait_since)
            if waited >= self.config.escalate_after_ms:
                self.escalated = True
                self._boundaries_while_escalated = 0
                self.transitions.append(ModeChange(t_ms, escalated=True))
        if self.escalated:
            units += self._dwell(t_ms)
        return units

    def _boundaries(self, t_ms: int) -> list[ReleaseUnit]:
        units: list[ReleaseUnit] = []
        stable = self._stable
        # Scan from the watermark each time: a stable word may gain its period in a later
        # revision ("planned" -> "planned."). Each boundary is counted once, by position.
        for i in range(self._watermark, len(stable)):
            if not ends_clause(stable[i]):
                continue
            if i >= self._next_boundary:
                self._next_boundary = i + 1
                self._count_boundary(t_ms)
            if i + 1 - self._watermark >= self.config.min_unit_words:
                units.append(self._release(stable, i + 1, ReleaseReason.BOUNDARY, t_ms))
        pause_ms = self.config.pause_ms
        if (
            pause_ms is not None
            and self._last_growth_ms is not None
            and t_ms - self._last_growth_ms >= pause_ms
            and len(stable) - self._watermark >= self.config.min_unit_words
        ):
            self._boundary_free_since = t_ms
            units.append(self._release(stable, len(stable), ReleaseReason.PAUSE, t_ms))
        return units

    def _count_boundary(self, t_ms: int) -> None:
        self.boundaries_seen += 1
        self.boundary_waits.append(self._waited(t_ms))
        self._boundary_free_since = t_ms
        if self.escalated:
            self._boundaries_while_escalated += 1
            if self._boundaries_while_escalated >= self.config.de_escalate_boundaries:
                self.escalated = False
                self.transitions.append(ModeChange(t_ms, escalated=False))

    def _waited(self, t_ms: int) -> int:
        """How long unreleased stable text has waited without a boundary (0: none waits)."""
        if self._boundary_free_since is None or self._wait_since is None:
            return 0
        return t_ms - max(self._boundary_free_since, self._wait_since)

    def _dwell(self, t_ms: int) -> list[ReleaseUnit]:
        if self._wait_since is None or len(self._stable) <= self._watermark:
            return []
        if t_ms - self._wait_since < self.config.dwell_ms:
            return []
        return [self._release(self._stable, len(self._stable), ReleaseReason.DWELL, t_ms)]

    def _release(
        self, words: list[str], end: int, reason: ReleaseReason, t_ms: int, *, check: bool = True
    ) -> ReleaseUnit:
        start = self._watermark
        chunk = words[start:end]
        if check:
            # Erasure is impossible by construction: released words are a prefix of the
            # stable prefix, which never retracts. Assert it on every release.
            keys = [normalized_key(w) for w in words[: len(self._released_keys)]]
            assert keys == self._released_keys, "released text would be erased"
            self._released_keys += [normalized_key(w) for w in chunk]
        self._watermark = end
        self._wait_since = None
        if len(self._stable) > end:
            self._wait_since = t_ms
        return ReleaseUnit(" ".join(chunk), reason, t_ms, self.utterance, start, len(chunk))

    @property
    def watermark(self) -> int:
        """Words of the current utterance released so far."""
        return self._watermark
