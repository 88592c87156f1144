"""Transcript stabilization: stable prefixes of revising partials, turns, the speculation
gate and the generation guard. Pure: no models, no I/O beyond reading event logs."""

from heard.transcript.accumulator import Hypothesis, TranscriptAccumulator
from heard.transcript.events import EventKind, TranscriptEvent, read_events
from heard.transcript.guard import GenerationGuard, GuardedResult, run_guarded
from heard.transcript.signals import DEFAULT_RECALL_PHRASES, SignalExtractor, Signals
from heard.transcript.speculation import GateConfig, GateDecision, SpeculationGate
from heard.transcript.stabilizer import StabilizerSummary, TranscriptStabilizer, TranscriptStep
from heard.transcript.tokenize import ENGLISH_STOPWORDS, content_tokens, tokenize
from heard.transcript.turns import TurnId, TurnTracker
from heard.transcript.words import WORD_MATCHERS, exact_key, normalized_key

__all__ = [
    "DEFAULT_RECALL_PHRASES",
    "ENGLISH_STOPWORDS",
    "WORD_MATCHERS",
    "EventKind",
    "GateConfig",
    "GateDecision",
    "GenerationGuard",
    "GuardedResult",
    "Hypothesis",
    "SignalExtractor",
    "Signals",
    "SpeculationGate",
    "StabilizerSummary",
    "TranscriptAccumulator",
    "TranscriptEvent",
    "TranscriptStabilizer",
    "TranscriptStep",
    "TurnId",
    "TurnTracker",
    "content_tokens",
    "exact_key",
    "normalized_key",
    "read_events",
    "run_guarded",
    "tokenize",
]
