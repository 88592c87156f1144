"""heard: conversation audio into stable transcripts, meeting timelines, paced captions
and memory a voice assistant can recall from.

The public API is ``__all__`` below (guarded by tests/test_public_api.py).
"""

from heard.errors import (
    EventLogError,
    HeardError,
    InputError,
    MissingDependencyError,
    TurnStateError,
    UnknownNameError,
)
from heard.transcript import (
    EventKind,
    GateConfig,
    GateDecision,
    GenerationGuard,
    Hypothesis,
    SignalExtractor,
    Signals,
    SpeculationGate,
    TranscriptAccumulator,
    TranscriptEvent,
    TranscriptSession,
    TranscriptStep,
    TurnId,
    TurnTracker,
    read_events,
    run_guarded,
    tokenize,
)

__version__ = "0.1.0"

__all__ = [
    "EventKind",
    "EventLogError",
    "GateConfig",
    "GateDecision",
    "GenerationGuard",
    "HeardError",
    "Hypothesis",
    "InputError",
    "MissingDependencyError",
    "SignalExtractor",
    "Signals",
    "SpeculationGate",
    "TranscriptAccumulator",
    "TranscriptEvent",
    "TranscriptSession",
    "TranscriptStep",
    "TurnId",
    "TurnStateError",
    "TurnTracker",
    "UnknownNameError",
    "__version__",
    "read_events",
    "run_guarded",
    "tokenize",
]
