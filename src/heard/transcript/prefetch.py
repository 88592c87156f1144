"""When to prefetch memory for a turn, and whether the final may use what was prefetched.

A pure policy over plain data: transcript steps in (``TranscriptStep``, whose ``t_ms`` is
the clock), decisions out (``on_transcript``: one per step). ``heard.live.prefetcher`` runs the
retrievals it decides on.

* **Speculate** when the gate fires on a partial: on the stable prefix, which keeps a
  partial's last word out (seed 000), so that retrieval is not re-run each time the
  recognizer changes its mind about that word. A new strong signal fires at once; a plain
  firing waits out the debounce window of the turn's last speculation
  (``GateConfig.debounce_ms``), which the gate keeps for its own firings and this policy
  keeps across them and the pauses' too.
* **Pause**: when the recognizer repeats a partial word for word, it did not change its
  mind: the repeat is the later revision that confirms the last word. The pause speculates
  on the whole partial, before the gate's new-content minimum is met, if it says something
  the last speculation did not, and never within the debounce window.
* **Reuse or retrieve again** at the final: reuse the speculation if the final says what
  was speculated on (the Jaccard overlap of the content-token sets is at least
  ``REUSE_JACCARD``); otherwise retrieve on the final's text.
* **Interrupt**: whatever the turn speculated on is dropped; the turn goes on.
* **A new turn** of a speaker (a step of another turn) starts a new plan: whatever their
  previous turn speculated on is of no use any more.

Each turn's ``TurnPlan`` counts its retrievals and the ones whose results went unused.
"""

from __future__ import annotations

from dataclasses import dataclass

from heard.transcript.events import EventKind
from heard.transcript.speculation import GateConfig, GateDecision
from heard.transcript.stabilizer import TranscriptStep
from heard.transcript.turns import TurnId

__all__ = ["REUSE_JACCARD", "Decision", "PrefetchPolicy", "Speculation", "TurnPlan", "reusable"]

REUSE_JACCARD = 0.6
"""Reuse a speculation when |S & F| / |S | F| >= this, S and F being the content tokens of the
speculated stable prefix and of the final (bench/prefetch.py: the choice and its cost)."""


def reusable(speculated: frozenset[str], final: frozenset[str], threshold: float) -> bool:
    """The reuse rule: enough of the final's content words were speculated on, and few more."""
    if not final:
        return False
    union = speculated | final
    return len(speculated & final) / len(union) >= threshold


@dataclass(frozen=True, slots=True)
class Speculation:
    """A retrieval to start now."""

    query: str
    pause: bool
    """A pause started it (a repeated partial) where the gate would not have."""


@dataclass(slots=True)
class TurnPlan:
    """What one open turn has speculated on."""

    turn: TurnId | None = None
    pending: bool = False
    """A speculation was started and not yet given up: its result may still be used."""
    tokens: frozenset[str] = frozenset()
    query: str = ""
    speculated_ms: int | None = None
    """Stream time (``t_ms``) of the turn's last speculation: the debounce window's start."""
    retrievals: int = 0
    wasted: int = 0


@dataclass(frozen=True, slots=True)
class Decision:
    """What to do after one step of ``plan``'s turn."""

    plan: TurnPlan
    speculation: Speculation | None = None
    """A partial: retrieve on this now (it supersedes the pending speculation)."""
    reuse: bool = False
    """A final: the pending speculation answers it (else: retrieve on the final's text). One
    that somebody else cancelled cannot: whoever runs it then retrieves again and counts the
    speculation as wasted, as here."""


class PrefetchPolicy:
    """The decisions of a live conversation's prefetching: ``on_transcript`` on every step (it keeps
    each speaker's open ``TurnPlan``), ``interrupt`` when the reply is no longer wanted.
    ``speculate``: partials may start retrievals (else only finals retrieve)."""

    def __init__(
        self,
        gate: GateConfig | None = None,
        reuse_jaccard: float = REUSE_JACCARD,
        *,
        speculate: bool = True,
    ) -> None:
        self.gate = gate or GateConfig()
        self.reuse_jaccard = reuse_jaccard
        self.speculates = speculate
        self._plans: dict[str, TurnPlan] = {}

    def on_transcript(self, step: TranscriptStep) -> Decision:
        """The decision for ``step``: a final closes its turn's plan."""
        plan = self._plans.get(step.speaker)
        if plan is None or plan.turn != step.turn_id:
            plan = self._plans[step.speaker] = TurnPlan(step.turn_id)
        if step.kind is EventKind.FINAL:
            del self._plans[step.speaker]
            return Decision(plan, reuse=self.reuse(plan, step))
        return Decision(plan, self.speculate(plan, step) if self.speculates else None)

    def interrupt(self, speaker: str, running: bool) -> None:
        """The reply is no longer wanted: ``speaker``'s open turn drops what it speculated on
        (``running``: that retrieval was still going, and is wasted)."""
        plan = self._plans.get(speaker)
        if plan is not None:
            self.drop(plan, running)

    # -- one turn's plan ------------------------------------------------------------------

    def speculate(self, plan: TurnPlan, step: TranscriptStep) -> Speculation | None:
        """What to speculate on after this partial, if anything; records it in ``plan``
        (the speculation it supersedes, if still pending, is counted as wasted)."""
        hypothesis = step.hypothesis
        decision = step.decision
        if decision is GateDecision.FIRE_SIGNAL or (
            decision is GateDecision.FIRE and not self.debounced(plan, step.t_ms)
        ):
            return self._start(plan, hypothesis.stable_prefix, step.query_tokens, step, False)
        if hypothesis.repeated and not hypothesis.contradiction:
            tokens = (*step.query_tokens, *step.pause_tokens)
            if not self.debounced(plan, step.t_ms) and frozenset(tokens) - plan.tokens:
                return self._start(plan, hypothesis.text, tokens, step, True)
        return None

    def debounced(self, plan: TurnPlan, t_ms: int) -> bool:
        """The turn speculated less than ``debounce_ms`` before ``t_ms``."""
        last = plan.speculated_ms
        return last is not None and t_ms - last < self.gate.debounce_ms

    def reuse(self, plan: TurnPlan, final: TranscriptStep) -> bool:
        """Reuse the pending speculation for this final (True), or retrieve again (False)."""
        reuse = plan.pending and reusable(
            plan.tokens, frozenset(final.query_tokens), self.reuse_jaccard
        )
        if plan.pending and not reuse:
            plan.wasted += 1
        plan.pending = False
        if not reuse:
            plan.retrievals += 1
        return reuse

    @staticmethod
    def drop(plan: TurnPlan, running: bool) -> None:
        """Drop what the turn speculated on (``running``: its retrieval was still going)."""
        if plan.pending and running:
            plan.wasted += 1
        plan.pending, plan.tokens, plan.query = False, frozenset(), ""

    @staticmethod
    def _start(
        plan: TurnPlan, query: str, tokens: tuple[str, ...], step: TranscriptStep, pause: bool
    ) -> Speculation:
        if plan.pending:
            plan.wasted += 1  # still running, or finished and now superseded
        plan.pending = True
        plan.tokens = frozenset(tokens)
        plan.query = query
        plan.speculated_ms = step.t_ms
        plan.retrievals += 1
        return Speculation(query, pause)
