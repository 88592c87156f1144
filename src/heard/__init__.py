"""heard: conversation audio into stable transcripts, meeting timelines, paced captions
and memory a voice assistant can recall from.

The public API is ``__all__`` below (guarded by tests/test_public_api.py).
"""

from heard.asr import FasterWhisperTranscriber, Transcriber, WhisperOptions
from heard.errors import (
    AudioError,
    EventLogError,
    HeardError,
    InputError,
    MissingDependencyError,
    NotFoundError,
    TurnStateError,
    UnknownNameError,
)
from heard.pipeline import PipelineOptions, PipelineOutcome, PipelineResult, run_pipeline
from heard.store import Database, MeetingStatus, TrackStatus
from heard.store.meetings import TrackSpec, create_meeting, meeting_phrases
from heard.timeline import PhraseDraft, Segment, Track, build_phrases
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
    "AudioError",
    "Database",
    "EventKind",
    "EventLogError",
    "FasterWhisperTranscriber",
    "GateConfig",
    "GateDecision",
    "GenerationGuard",
    "HeardError",
    "Hypothesis",
    "InputError",
    "MeetingStatus",
    "MissingDependencyError",
    "NotFoundError",
    "PhraseDraft",
    "PipelineOptions",
    "PipelineOutcome",
    "PipelineResult",
    "Segment",
    "SignalExtractor",
    "Signals",
    "SpeculationGate",
    "Track",
    "TrackSpec",
    "TrackStatus",
    "Transcriber",
    "TranscriptAccumulator",
    "TranscriptEvent",
    "TranscriptSession",
    "TranscriptStep",
    "TurnId",
    "TurnStateError",
    "TurnTracker",
    "UnknownNameError",
    "WhisperOptions",
    "__version__",
    "build_phrases",
    "create_meeting",
    "meeting_phrases",
    "read_events",
    "run_guarded",
    "run_pipeline",
    "tokenize",
]
