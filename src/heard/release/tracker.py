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
  ``MIN_UNIT_WORDS`` words, and at pauses (the recognizer repeated itself for ``PAUSE_MS``).
  When the recognizer stops punctuating it *escalates*: it then also releases settled text
  that has waited ``ESCALATED_DWELL_MS``, or at once when its first word was heard
  ``ESCALATED_OVERDUE_MS`` ago (the recognizer was slow to settle it).
  ``heard.release.escalation`` decides when, on time inside the utterance (late finals are not
  needed), and when to come back.

When a confirmed new reading of the recognizer (``Hypothesis.revised``) changes words already
released, correction units replace just the released words that differ, at once, as a
final's would.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from heard.registry import Registry
from heard.release.alignment import Edit, align_final, align_reading
from heard.release.escalation import Escalation, ModeChange
from heard.release.policy import ReleaseConfig, ends_clause, punctuated
from heard.transcript.accumulator import Hypothesis

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
    """A final, or a confirmed new reading, contradicts released words: this unit replaces
    them (``replaces``)."""


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
        self.escalation = Escalation(self.config, enabled=self.mode is ReleaseMode.BALANCED)
        self.corrections = 0
        """Released words a final or a new reading contradicted (replaced or dropped)."""
        self.utterance = 0
        self.confirmed = 0
        """Words of this speaker's finals so far: the caption document's settled length."""
        self._released: list[str] = []  # released since the last final (carried words first)
        self._start_utterance(None, [])

    def _start_utterance(self, t_ms: int | None, keys: list[str]) -> None:
        """A new utterance, holding the released words carried into it (``keys``: theirs)."""
        self._stable: list[str] = list(self._released)
        self._stable_keys = keys
        self._settled_at: list[int | None] = [t_ms] * len(self._stable)
        self._wait_since: int | None = None  # when unreleased stable text first appeared
        self._heard_at: list[int] = []  # per word of the utterance: when a partial first held it
        self._last_growth_ms: int | None = None

    @property
    def escalated(self) -> bool:
        return self.escalation.escalated

    @property
    def transitions(self) -> list[ModeChange]:
        """Each time Balanced escalated or de-escalated."""
        return self.escalation.transitions

    @property
    def watermark(self) -> int:
        """Words of the current utterance released so far."""
        return len(self._released)

    # -- events ---------------------------------------------------------------------------

    def on_hypothesis(self, hypothesis: Hypothesis, t_ms: int) -> list[ReleaseUnit]:
        """One step of this speaker's transcript: a revised partial, or the utterance's final."""
        words, keys = list(hypothesis.stable_words), list(hypothesis.keys)
        heard = len(words) + len(hypothesis.unstable_words)
        self._heard_at += [t_ms] * (heard - len(self._heard_at))
        final = words if hypothesis.final else None
        if final is not None:
            units, changed = self._finalize(final, t_ms), None
        else:
            if not hypothesis.repeated or self._last_growth_ms is None:
                self._last_growth_ms = t_ms  # the recognizer heard something new
            units, changed = self._follow(words, keys, t_ms)
            if len(self._stable) > len(self._released) and self._wait_since is None:
                self._wait_since = t_ms
        return units + self._decide(t_ms, stable=final is None, changed=changed, final=final)

    def poll(self, t_ms: int) -> list[ReleaseUnit]:
        """Let time pass without a new hypothesis (dwell, pauses and escalation are timers)."""
        return self._decide(t_ms)

    def finish(self, t_ms: int) -> list[ReleaseUnit]:
        """The stream ended: released words no final confirmed are taken back."""
        if not self._released:
            return []
        unit = self._unit("", ReleaseReason.CORRECTION, t_ms, self.confirmed, len(self._released))
        self.corrections += len(self._released)
        self._released = []
        self._start_utterance(t_ms, [])
        self.escalation.start_utterance()
        return [unit]

    def _follow(
        self, words: list[str], keys: list[str], t_ms: int
    ) -> tuple[list[ReleaseUnit], int | None]:
        """Take the new stable prefix (``keys``: its words' keys, by the turn's word rule);
        where it now reads differently from released words (the recognizer confirmed a new
        reading, or an utterance's words differ from those carried into it), corrections replace
        just the words that differ, as at a final. Also returns where the settled words first
        read otherwise (None: nowhere)."""
        released, old = self._released, self._stable_keys  # released: a prefix of the old
        n = min(len(words), len(released))
        units: list[ReleaseUnit] = []
        if keys[:n] != old[:n]:
            edits, end = align_reading(released, words)
            units = self._edit_units(edits, t_ms, final=False)
            self._released = list(words[:end])
        if len(words) < len(self._released):
            # a shorter reading: nothing new to take
            words, keys = list(self._released), old[: len(self._released)]
        settled = self._settled_at
        self._settled_at = [
            settled[i] if i < len(old) and old[i] == keys[i] else t_ms for i in range(len(words))
        ]
        changed = next((i for i in range(min(len(old), len(keys))) if old[i] != keys[i]), None)
        self._stable, self._stable_keys = words, keys
        return units, changed

    # -- decisions ------------------------------------------------------------------------

    def _decide(
        self,
        t_ms: int,
        *,
        stable: bool = False,
        changed: int | None = None,
        final: list[str] | None = None,
    ) -> list[ReleaseUnit]:
        """The releases due at ``t_ms`` (none at a final); the escalation is told what
        settled (``stable``: the stable words moved, ``changed``: where they first read
        otherwise; ``final``: the final's words) and decides whether the timed ones go out."""
        plan = self._plan(t_ms) if final is None else []
        escalated = self.escalation.track(
            t_ms,
            self._last_growth_ms,
            self._stable if stable else None,
            self._settled_at,
            len(self._released),
            changed,
            final,
        )
        units: list[ReleaseUnit] = []
        for end, reason, timed in plan:
            if timed and not escalated:
                continue
            start = len(self._released)
            chunk = self._stable[start:end]
            self._released += chunk
            self._wait_since = t_ms if len(self._stable) > end else None
            units.append(ReleaseUnit(" ".join(chunk), reason, t_ms, self.speaker, self.utterance,
                                     self.confirmed + start, len(chunk)))  # fmt: skip
        return units

    def _plan(self, t_ms: int) -> list[tuple[int, ReleaseReason, bool]]:
        """What would be released at ``t_ms``, in order: (end, reason, timed), ``end`` the
        stable words released through. Balanced's ``timed`` release (the dwell, or text
        overdue) goes out only when it is escalated. Pure."""
        stable, config = self._stable, self.config
        mark, since = len(self._released), self._wait_since
        if self.mode is ReleaseMode.RELAXED:
            return []
        if self.mode is ReleaseMode.LIVE:
            due = since is not None and len(stable) > mark and t_ms - since >= config.dwell_ms
            return [(len(stable), ReleaseReason.DWELL, False)] if due else []
        plan: list[tuple[int, ReleaseReason, bool]] = []
        # A stable word may gain its period in a later revision ("planned" -> "planned."),
        # so the scan starts at the watermark every time.
        for i in range(mark, len(stable)):
            waiting = i + 1 - mark
            if (ends_clause(stable[i]) and waiting >= config.min_unit_words) or (
                punctuated(stable[i]) and waiting >= config.comma_unit_words
            ):
                plan.append((i + 1, ReleaseReason.BOUNDARY, False))
                mark, since = i + 1, (t_ms if len(stable) > i + 1 else None)
        pause_ms, growth = config.pause_ms, self._last_growth_ms
        if (
            pause_ms is not None
            and growth is not None
            and t_ms - growth >= pause_ms
            and len(stable) - mark >= config.min_unit_words
        ):
            plan.append((len(stable), ReleaseReason.PAUSE, False))
            mark, since = len(stable), None
        if len(stable) > mark:
            # escalated: settled text that waited out the dwell, or whose first word was heard
            # ``escalated_overdue_ms`` ago (the recognizer was slow to settle it)
            dwell = since is not None and t_ms - since >= config.escalated_dwell_ms
            overdue_ms = config.escalated_overdue_ms
            overdue = (
                overdue_ms is not None
                and mark < len(self._heard_at)
                and t_ms - self._heard_at[mark] >= overdue_ms
            )
            if dwell or overdue:
                plan.append((len(stable), ReleaseReason.DWELL, True))
        return plan

    def _unit(
        self, text: str, reason: ReleaseReason, t_ms: int, position: int, replaces: int = 0
    ) -> ReleaseUnit:
        words = len(text.split())
        return ReleaseUnit(
            text, reason, t_ms, self.speaker, self.utterance, position, words, replaces
        )

    def _edit_units(self, edits: Sequence[Edit], t_ms: int, *, final: bool) -> list[ReleaseUnit]:
        """The edits of the released words, in order, as units of the caption document: each
        replacing edit is a correction; at a final, words never released are inserted."""
        units, shift = [], 0
        for edit in edits:
            reason = (
                ReleaseReason.CORRECTION if edit.replaces or not final else ReleaseReason.FINALIZE
            )
            position = self.confirmed + edit.at + shift
            units.append(self._unit(" ".join(edit.words), reason, t_ms, position, edit.replaces))
            shift += len(edit.words) - edit.replaces
        self.corrections += sum(e.replaces for e in edits)
        return units

    def _finalize(self, words: list[str], t_ms: int) -> list[ReleaseUnit]:
        """Settle the utterance on its final: correct, insert, carry (see the module doc)."""
        alignment = align_final(self._released, words)
        units = self._edit_units(alignment.edits, t_ms, final=True)
        carried, released = alignment.carried, len(self._released)
        self._released = self._released[released - carried :] if carried else []
        keys = self._stable_keys[released - carried : released] if carried else []
        self.confirmed += len(words)
        self.utterance += 1
        self._start_utterance(t_ms, keys)
        return units
