"""One conversation's transcript state: turns, stable prefixes and gate decisions.

``TranscriptStabilizer`` keeps an accumulator and a speculation gate per speaker,
opens a turn on a speaker's first partial and closes it on their final. It is
what ``heard replay`` and the demo drive, and what a live conversation builds
on. Time comes from the events (``t_ms``), never from a wall clock.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from heard.transcript.accumulator import Hypothesis, TranscriptAccumulator
from heard.transcript.events import EventKind, TranscriptEvent
from heard.transcript.signals import PrefixSignals, SignalExtractor, Signals
from heard.transcript.speculation import GateConfig, GateDecision, SpeculationGate
from heard.transcript.tokenize import ENGLISH_STOPWORDS, content_tokens, tokenize
from heard.transcript.turns import TurnId, TurnTracker

__all__ = ["StabilizerSummary", "TranscriptStabilizer", "TranscriptStep"]


@dataclass(frozen=True, slots=True)
class TranscriptStep:
    """What one event did: the hypothesis it produced and the gate's decision."""

    t_ms: int
    speaker: str
    turn_id: TurnId
    kind: EventKind
    hypothesis: Hypothesis
    decision: GateDecision
    signals: Signals
    query_tokens: tuple[str, ...]
    """The stable prefix's content tokens (English stopwords dropped), kept incrementally:
    what a speculation keys on, so nobody downstream tokenizes the prefix again."""
    pause_tokens: tuple[str, ...] = ()
    """When the partial repeats the previous one without contradicting the stable prefix (a
    pause may speculate on all of it): the unstable suffix's content tokens; else empty."""

    def to_dict(self) -> dict[str, object]:
        return {
            "t_ms": self.t_ms,
            "speaker": self.speaker,
            "turn": str(self.turn_id),
            "type": str(self.kind),
            "stable": self.hypothesis.stable_prefix,
            "unstable": self.hypothesis.unstable_suffix,
            "revision": self.hypothesis.revision,
            "contradiction": self.hypothesis.contradiction,
            "decision": str(self.decision),
            "entities": list(self.signals.entities),
            "recall_phrases": list(self.signals.recall_phrases),
        }


@dataclass(slots=True)
class StabilizerSummary:
    events: int = 0
    turns: int = 0
    finals: int = 0
    revisions: int = 0
    """Partials and finals folded into some turn."""
    speculations: int = 0
    """Gate decisions that fired, finals included."""
    contradictions: int = 0
    finals_contradicting_stable: int = 0
    """Finals that disagreed with the stable prefix committed before them."""
    decisions: Counter[str] = field(default_factory=Counter)

    def to_dict(self) -> dict[str, object]:
        return {
            "events": self.events,
            "turns": self.turns,
            "finals": self.finals,
            "revisions": self.revisions,
            "speculations": self.speculations,
            "contradictions": self.contradictions,
            "finals_contradicting_stable": self.finals_contradicting_stable,
            "decisions": {str(k): v for k, v in sorted(self.decisions.items())},
        }


@dataclass(slots=True)
class _Speaker:
    """Per-speaker state; tokens and signals of the stable prefix are kept incrementally,
    which is sound because the stable prefix only grows within a turn, except when a final or
    a confirmed new reading (``Hypothesis.revised``) replaces it: then they start over."""

    accumulator: TranscriptAccumulator
    gate: SpeculationGate
    signals: PrefixSignals
    stable_words: int = 0
    query: tuple[str, ...] = ()
    """Rebuilt only when the stable prefix grows: every step hands it on as it is."""

    def reset(self) -> None:
        self.signals.reset()
        self.stable_words = 0
        self.query = ()


class TranscriptStabilizer:
    """Fold transcript events of any number of speakers into steps."""

    def __init__(
        self,
        *,
        gate: GateConfig | None = None,
        word_match: str = "normalized",
        signals: SignalExtractor | None = None,
    ) -> None:
        self._gate_config = gate or GateConfig()
        self._word_match = word_match
        self._extractor = signals or SignalExtractor()
        self._turns = TurnTracker()
        self._speakers: dict[str, _Speaker] = {}
        self.summary = StabilizerSummary()

    def _speaker(self, name: str) -> _Speaker:
        state = self._speakers.get(name)
        if state is None:
            state = self._speakers[name] = _Speaker(
                TranscriptAccumulator(word_match=self._word_match),
                SpeculationGate(self._gate_config),
                PrefixSignals(self._extractor),
            )
        return state

    def _open_turn(self, speaker: str, state: _Speaker) -> TurnId:
        turn = self._turns.current(speaker)
        if turn is None:
            turn = self._turns.speech_started(speaker)
            state.accumulator.begin_turn(turn)
            state.gate.reset()
            state.reset()
            self.summary.turns += 1
        return turn

    def on_partial(self, speaker: str, text: str, t_ms: int) -> TranscriptStep:
        return self.on_event(TranscriptEvent(t_ms, EventKind.PARTIAL, text, speaker))

    def on_final(self, speaker: str, text: str, t_ms: int) -> TranscriptStep:
        return self.on_event(TranscriptEvent(t_ms, EventKind.FINAL, text, speaker))

    def on_event(self, event: TranscriptEvent) -> TranscriptStep:
        """Fold one event into its speaker's turn (opened by its first event, closed by its
        final); the step says what the turn reads now and what the gate decided."""
        speaker, t_ms = event.speaker, event.t_ms
        state = self._speaker(speaker)
        turn = self._open_turn(speaker, state)
        summary = self.summary
        if event.kind is EventKind.FINAL:
            self._turns.turn_completed(speaker)
            hypothesis = state.accumulator.finalize(event.text)
            summary.finals += 1
            summary.finals_contradicting_stable += state.accumulator.final_contradicted
        else:
            hypothesis = state.accumulator.push_partial(event.text)
            summary.contradictions += hypothesis.contradiction
        if hypothesis.final or hypothesis.revised:
            state.reset()
        # only the newly stable words are tokenized, and only the tail where a signal may
        # have changed is scanned again
        grown = hypothesis.stable_words[state.stable_words :]
        new_tokens = tokenize(" ".join(grown)) if grown else []
        pause = hypothesis.repeated and not hypothesis.contradiction
        pause_tokens = tuple(content_tokens(hypothesis.unstable_suffix)) if pause else ()
        state.stable_words = hypothesis.stable_word_count
        if new_tokens:
            state.query += tuple(t for t in new_tokens if t not in ENGLISH_STOPWORDS)
            state.signals.grow(new_tokens)
        signals = state.signals.signals
        decision = state.gate.consider(hypothesis, t_ms, state.query, signals)
        summary.events += 1
        summary.revisions += 1
        summary.decisions[decision] += 1
        summary.speculations += decision.fires
        return TranscriptStep(
            t_ms, speaker, turn, event.kind, hypothesis, decision, signals, state.query,
            pause_tokens,
        )  # fmt: skip

    def replay(self, events: Iterable[TranscriptEvent]) -> Iterator[TranscriptStep]:
        for event in events:
            yield self.on_event(event)
