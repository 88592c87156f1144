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
from heard.transcript.signals import NO_SIGNALS, Match, SignalExtractor, Signals, resume_point
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
    query_tokens: tuple[str, ...] | None = None
    """The stable prefix's content tokens (English stopwords dropped), kept incrementally:
    what a speculation keys on, so nobody downstream tokenizes the prefix again (None, in a
    step built by hand: ``query`` reads them from the prefix)."""

    @property
    def query(self) -> tuple[str, ...]:
        """``query_tokens``, or the stable prefix's content tokens when the step has none."""
        if self.query_tokens is not None:
            return self.query_tokens
        return tuple(content_tokens(self.hypothesis.stable_prefix))

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
    signals: Signals = NO_SIGNALS
    stable_words: int = 0
    tokens: list[str] = field(default_factory=list)
    query: tuple[str, ...] = ()
    """Rebuilt only when the stable prefix grows: every step hands it on as it is."""
    entities: list[Match] = field(default_factory=list)
    phrases: list[Match] = field(default_factory=list)

    def reset(self) -> None:
        self.signals = NO_SIGNALS
        self.stable_words = 0
        self.tokens, self.query = [], ()
        self.entities, self.phrases = [], []


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
            hypothesis = state.accumulator.finalize(event.text)
            self._turns.turn_completed(speaker)
            summary.finals += 1
            summary.finals_contradicting_stable += state.accumulator.final_contradicted
        else:
            hypothesis = state.accumulator.push_partial(event.text)
            summary.contradictions += hypothesis.contradiction
        if hypothesis.final or hypothesis.revised:
            state.reset()
        if hypothesis.stable_word_count != state.stable_words:
            self._grow_stable(state, hypothesis)
        decision = state.gate.consider(hypothesis, t_ms, state.signals, state.query)
        summary.events += 1
        summary.revisions += 1
        summary.decisions[decision] += 1
        summary.speculations += decision.fires
        return TranscriptStep(
            t_ms, speaker, turn, event.kind, hypothesis, decision, state.signals, state.query
        )

    def _grow_stable(self, state: _Speaker, hypothesis: Hypothesis) -> None:
        """Tokenize only the newly stable words and rescan only the tail where a signal may
        have changed: from the last place a full scan would visit before any new match."""
        new_words = hypothesis.stable_words[state.stable_words :]
        state.stable_words = hypothesis.stable_word_count
        new_tokens = tokenize(" ".join(new_words))
        if not new_tokens:
            return
        limit = len(state.tokens) - self._extractor.longest_phrase + 1
        state.tokens.extend(new_tokens)
        state.query += tuple(t for t in new_tokens if t not in ENGLISH_STOPWORDS)
        # resume where both scans would stand, and replace what they found from there on
        start = resume_point([*state.entities, *state.phrases], limit)
        entities, phrases = self._extractor.matches(state.tokens, start)
        state.entities = [m for m in state.entities if m.start < start] + entities
        state.phrases = [m for m in state.phrases if m.start < start] + phrases
        state.signals = Signals(
            tuple(dict.fromkeys(m.label for m in state.entities)),
            tuple(dict.fromkeys(m.label for m in state.phrases)),
        )

    def replay(self, events: Iterable[TranscriptEvent]) -> Iterator[TranscriptStep]:
        for event in events:
            yield self.on_event(event)
