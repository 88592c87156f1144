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
from heard.llm import Provider, ProviderError, provider_from_env
from heard.memory.evidence import Evidence, EvidenceIndex
from heard.memory.recall import MemoryRecall
from heard.memory.workspace import load_workspace
from heard.pipeline import PipelineOptions, PipelineOutcome, PipelineResult, run_pipeline
from heard.release import (
    IdentityTranslator,
    LLMTranslator,
    ReleaseMode,
    ReleaseTracker,
    ReleaseUnit,
    TranslationQueue,
)
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
    "Evidence",
    "EvidenceIndex",
    "FasterWhisperTranscriber",
    "GateConfig",
    "GateDecision",
    "GenerationGuard",
    "HeardError",
    "Hypothesis",
    "IdentityTranslator",
    "InputError",
    "LLMTranslator",
    "MeetingStatus",
    "MemoryRecall",
    "MissingDependencyError",
    "NotFoundError",
    "PhraseDraft",
    "PipelineOptions",
    "PipelineOutcome",
    "PipelineResult",
    "Provider",
    "ProviderError",
    "ReleaseMode",
    "ReleaseTracker",
    "ReleaseUnit",
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
    "TranslationQueue",
    "TurnId",
    "TurnStateError",
    "TurnTracker",
    "UnknownNameError",
    "WhisperOptions",
    "__version__",
    "build_phrases",
    "create_meeting",
    "load_workspace",
    "meeting_phrases",
    "provider_from_env",
    "read_events",
    "run_guarded",
    "run_pipeline",
    "tokenize",
]
