"""When to release caption text for display and translation: Relaxed, Balanced, Live.

A ``ReleaseTracker`` follows one speaker. It reads the stabilizer's hypotheses (the stable
prefix of the utterance being heard, or its final) and releases units: words for the
speaker's caption, each placed at a position in that speaker's *caption document*, the words
of their finals in order. Units are edits of that document: a plain release appends words; at
a final, words the partials got wrong are *corrected* (a unit that replaces released words),
words never released are inserted where the final has them, and released words the final
does not reach are carried over to the next utterance (the recognizer finalized a shorter
stretch than its partials had covered). Applied in order, the units give exactly the finals'
words, each once: the invariant tests/release/test_invariant.py holds on random streams and
on every fixture.

* **Relaxed** releases once per utterance, at its final: cheapest, slowest.
* **Live** (the measured reference, not a user's choice) releases settled text once it has
  waited ``LIVE_DWELL_MS``; the wait starts when unreleased stable text first appears.
* **Balanced** releases at clause boundaries (sentence punctuation) of at least
  ``MIN_UNIT_WORDS`` words, and at pauses (the recognizer repeated itself for
  ``PAUSE_MS``). On unpunctuated speech (``ESCALATE_AFTER_WORDS`` stable words without a
  punctuation mark, commas included, across finals) it *escalates* to dwell releases of
  ``ESCALATED_DWELL_MS``, and returns only after ``DE_ESCALATE_MARKS`` punctuation marks:
  absence is measured in words heard, presence in marks, so the state cannot flip twice
  inside one stretch, and silence never escalates anything.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from heard.registry import Registry
from heard.release.alignment import align_final
from heard.release.policy import (
    BARE_FINAL_WORDS,
    COMMA_UNIT_WORDS,
    DE_ESCALATE_MARKS,
    ESCALATE_AFTER_WORDS,
    ESCALATED_DWELL_MS,
    LIVE_DWELL_MS,
    MIN_UNIT_WORDS,
    PAUSE_MS,
    ends_clause,
    punctuated,
)
from heard.transcript.accumulator import Hypothesis
from heard.transcript.words import normalized_key

__all__ = [
    "RELEASE_MODES",
    "SELECTABLE_MODES",
    "ModeChange",
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
SELECTABLE_MODES: Registry[ReleaseMode] = Registry(
    "caption mode", {m.value: m for m in (ReleaseMode.RELAXED, ReleaseMode.BALANCED)}
)
"""What a user may choose: Live is the reference the cadence table measures against."""


class ReleaseReason(StrEnum):
    BOUNDARY = "boundary"
    PAUSE = "pause"
    DWELL = "dwell"
    FINALIZE = "finalize"
    CORRECTION = "correction"
    """The final contradicts released words: this unit replaces them (``replaces``)."""


@dataclass(frozen=True, slots=True)
class ReleaseUnit:
    """Caption words released for display and translation: what, where, why and when.

    Apply it to the speaker's caption document: ``document[position:position + replaces] =
    text.split()``. Plain releases replace nothing; a correction replaces the released words
    the final contradicts (``text`` may then be empty: the words are simply dropped).
    """

    text: str
    reason: ReleaseReason
    t_ms: int
    speaker: str
    utterance: int
    """Which utterance (from 0) of the speaker was being heard."""
    position: int
    """Index, in the speaker's caption document, of the unit's first word."""
    words: int
    replaces: int = 0

    def to_dict(self) -> dict[str, object]:
        return {
            "speaker": self.speaker, "text": self.text, "reason": str(self.reason),
            "t_ms": self.t_ms, "utterance": self.utterance, "position": self.position,
            "words": self.words, "replaces": self.replaces,
        }  # fmt: skip


@dataclass(frozen=True, slots=True)
class ReleaseConfig:
    dwell_ms: int = LIVE_DWELL_MS
    escalated_dwell_ms: int = ESCALATED_DWELL_MS
    escalate_after_words: int = ESCALATE_AFTER_WORDS
    bare_final_words: int = BARE_FINAL_WORDS
    de_escalate_marks: int = DE_ESCALATE_MARKS
    min_unit_words: int = MIN_UNIT_WORDS
    comma_unit_words: int = COMMA_UNIT_WORDS
    pause_ms: int | None = PAUSE_MS
    """None turns pause boundaries off (the behaviour of the spec's design)."""


@dataclass(frozen=True, slots=True)
class ModeChange:
    """Balanced switching to timed releases (``escalated``) or back to clauses, at ``t_ms``."""

    t_ms: int
    escalated: bool


def _keys(words: list[str]) -> list[str]:
    return [normalized_key(w) for w in words]


class ReleaseTracker:
    """Release units for one speaker; ``on_hypothesis`` for each step, ``poll`` as time
    passes, ``finish`` when the stream ends."""

    def __init__(
        self,
        mode: ReleaseMode | str = ReleaseMode.BALANCED,
        config: ReleaseConfig | None = None,
        *,
        speaker: str = "speaker",
    ) -> None:
        self.mode = mode if isinstance(mode, ReleaseMode) else RELEASE_MODES[mode]
        self.config = config or ReleaseConfig()
        self.speaker = speaker
        self.escalated = False
        self.transitions: list[ModeChange] = []
        """Each time Balanced escalates or de-escalates."""
        self.unpunctuated_runs: list[int] = []
        """Stable words heard between punctuation marks, each run as it ended: what escalation
        measures (tests/release/test_fixtures.py derives its threshold from them)."""
        self.corrections = 0
        """Released words a final contradicted (replaced or dropped)."""
        self.utterance = 0
        self.confirmed = 0
        """Words of this speaker's finals so far: the caption document's settled length."""
        self._final_run = 0  # words of the finals since their last punctuation mark
        self._marks_while_escalated = 0
        self._released: list[str] = []  # released since the last final (carried words first)
        self._start_utterance()

    def _start_utterance(self) -> None:
        self._stable: list[str] = list(self._released)
        self._wait_since: int | None = None  # when unreleased stable text first appeared
        self._marks: set[int] = set()  # positions of the utterance's counted marks
        self._last_growth_ms: int | None = None

    @property
    def watermark(self) -> int:
        """Words of the current utterance released so far."""
        return len(self._released)

    # -- events ---------------------------------------------------------------------------

    def on_hypothesis(self, hypothesis: Hypothesis, t_ms: int) -> list[ReleaseUnit]:
        """One step of this speaker's transcript: a revised partial, or the utterance's final."""
        words = hypothesis.stable_prefix.split()
        if hypothesis.final:
            return self._finalize(words, t_ms)
        if not hypothesis.repeated or self._last_growth_ms is None:
            self._last_growth_ms = t_ms  # the recognizer heard something new
        released = len(self._released)
        if _keys(words[:released]) == _keys(self._released):
            self._stable = words
        # else: the partials disagree with words already released; the final will settle it
        self._scan(t_ms)
        if len(self._stable) > released and self._wait_since is None:
            self._wait_since = t_ms
        return self._decide(t_ms)

    def poll(self, t_ms: int) -> list[ReleaseUnit]:
        """Let time pass without a new hypothesis (dwell and pauses are timers)."""
        return self._decide(t_ms)

    def finish(self, t_ms: int) -> list[ReleaseUnit]:
        """The stream ended: released words no final confirmed are taken back."""
        if not self._released:
            return []
        unit = self._unit("", ReleaseReason.CORRECTION, t_ms, self.confirmed, len(self._released))
        self.corrections += len(self._released)
        self._released = []
        self._start_utterance()
        return [unit]

    # -- punctuation and escalation ---------------------------------------------------------

    def _scan(self, t_ms: int) -> None:
        """Count the punctuation marks of the stable words not counted yet, each place once:
        while escalated, they are what brings Balanced back."""
        for i, word in enumerate(self._stable):
            if punctuated(word) and i not in self._marks:
                self._marks.add(i)
                self._mark(t_ms)

    def _escalate_on_final(self, words: list[str], t_ms: int) -> None:
        """The finals are what the recognizer settled on: when one of ``bare_final_words`` or
        more holds no punctuation mark at all, or they run on for ``escalate_after_words``
        words without one, the recognizer is not punctuating."""
        for i, word in enumerate(words):
            self._final_run += 1
            if punctuated(word):
                self.unpunctuated_runs.append(self._final_run)
                self._final_run = 0
                if i not in self._marks:
                    self._marks.add(i)
                    self._mark(t_ms)
        bare = len(words) >= self.config.bare_final_words and not any(map(punctuated, words))
        if (
            self.mode is ReleaseMode.BALANCED
            and not self.escalated
            and (bare or self._final_run >= self.config.escalate_after_words)
        ):
            self.escalated = True
            self._marks_while_escalated = 0
            self.transitions.append(ModeChange(t_ms, escalated=True))

    def _mark(self, t_ms: int) -> None:
        if self.escalated:
            self._marks_while_escalated += 1
            if self._marks_while_escalated >= self.config.de_escalate_marks:
                self.escalated = False
                self.transitions.append(ModeChange(t_ms, escalated=False))

    # -- decisions ------------------------------------------------------------------------

    def _decide(self, t_ms: int) -> list[ReleaseUnit]:
        if self.mode is ReleaseMode.RELAXED:
            return []
        if self.mode is ReleaseMode.LIVE:
            return self._dwell(t_ms, self.config.dwell_ms)
        if self.escalated:
            return self._dwell(t_ms, self.config.escalated_dwell_ms)
        return self._boundaries(t_ms)

    def _boundaries(self, t_ms: int) -> list[ReleaseUnit]:
        units: list[ReleaseUnit] = []
        stable = self._stable
        # A stable word may gain its period in a later revision ("planned" -> "planned."),
        # so the scan starts at the watermark every time.
        for i in range(len(self._released), len(stable)):
            waiting = i + 1 - len(self._released)
            if (ends_clause(stable[i]) and waiting >= self.config.min_unit_words) or (
                punctuated(stable[i]) and waiting >= self.config.comma_unit_words
            ):
                units.append(self._release(i + 1, ReleaseReason.BOUNDARY, t_ms))
        pause_ms = self.config.pause_ms
        if (
            pause_ms is not None
            and self._last_growth_ms is not None
            and t_ms - self._last_growth_ms >= pause_ms
            and len(stable) - len(self._released) >= self.config.min_unit_words
        ):
            units.append(self._release(len(stable), ReleaseReason.PAUSE, t_ms))
        return units

    def _dwell(self, t_ms: int, dwell_ms: int) -> list[ReleaseUnit]:
        if self._wait_since is None or len(self._stable) <= len(self._released):
            return []
        if t_ms - self._wait_since < dwell_ms:
            return []
        return [self._release(len(self._stable), ReleaseReason.DWELL, t_ms)]

    def _release(self, end: int, reason: ReleaseReason, t_ms: int) -> ReleaseUnit:
        start = len(self._released)
        chunk = self._stable[start:end]
        self._released += chunk
        self._wait_since = t_ms if len(self._stable) > end else None
        return self._unit(" ".join(chunk), reason, t_ms, self.confirmed + start)

    def _unit(
        self, text: str, reason: ReleaseReason, t_ms: int, position: int, replaces: int = 0
    ) -> ReleaseUnit:
        words = len(text.split())
        return ReleaseUnit(
            text, reason, t_ms, self.speaker, self.utterance, position, words, replaces
        )

    def _finalize(self, words: list[str], t_ms: int) -> list[ReleaseUnit]:
        """Settle the utterance on its final: correct, insert, carry (see the module doc)."""
        self._escalate_on_final(words, t_ms)
        alignment = align_final(self._released, words)
        units, shift = [], 0
        for edit in alignment.edits:
            reason = ReleaseReason.CORRECTION if edit.replaces else ReleaseReason.FINALIZE
            position = self.confirmed + edit.at + shift
            units.append(self._unit(" ".join(edit.words), reason, t_ms, position, edit.replaces))
            shift += len(edit.words) - edit.replaces
        self.corrections += alignment.corrections
        self._released = (
            self._released[len(self._released) - alignment.carried :] if alignment.carried else []
        )
        self.confirmed += len(words)
        self.utterance += 1
        self._start_utterance()
        return units
