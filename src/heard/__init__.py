"""heard: conversation audio into stable transcripts, meeting timelines, paced captions
and memory a voice assistant can recall from.

The public API is ``__all__`` below (guarded by tests/test_public_api.py). Each name is
imported from its module on first use, so ``import heard`` (and every CLI start) pays only for
what it touches: no SQLAlchemy, numpy or model until a name that needs one is used
(tests/test_startup.py).
"""

import importlib as _importlib
import typing as _typing

__version__ = "0.1.0"

_EXPORTS = {
    "AudioError": "heard.errors",
    "Captions": "heard.release",
    "Database": "heard.store",
    "EventKind": "heard.transcript",
    "EventLogError": "heard.errors",
    "Evidence": "heard.utterance",
    "EvidenceIndex": "heard.memory.evidence",
    "FasterWhisperTranscriber": "heard.asr",
    "GateConfig": "heard.transcript",
    "GateDecision": "heard.transcript",
    "GenerationGuard": "heard.transcript",
    "HeardError": "heard.errors",
    "Hypothesis": "heard.transcript",
    "IdentityTranslator": "heard.release",
    "InputError": "heard.errors",
    "LLMTranslator": "heard.release",
    "MeetingStatus": "heard.store",
    "MemoryRecall": "heard.memory.recall",
    "MissingDependencyError": "heard.errors",
    "ModelError": "heard.errors",
    "NotFoundError": "heard.errors",
    "PhraseDraft": "heard.timeline",
    "PipelineOptions": "heard.meetings",
    "PipelineOutcome": "heard.meetings",
    "PipelineResult": "heard.meetings",
    "Provider": "heard.llm",
    "ProviderError": "heard.errors",
    "ReleaseMode": "heard.release",
    "ReleaseTracker": "heard.release",
    "ReleaseUnit": "heard.release",
    "Segment": "heard.speech",
    "SignalExtractor": "heard.transcript",
    "Signals": "heard.transcript",
    "SpeculationGate": "heard.transcript",
    "Track": "heard.timeline",
    "TrackSpec": "heard.store.meetings",
    "TrackStatus": "heard.store",
    "Transcriber": "heard.asr",
    "Transcription": "heard.speech",
    "TranscriptAccumulator": "heard.transcript",
    "TranscriptEvent": "heard.transcript",
    "TranscriptStabilizer": "heard.transcript",
    "TranscriptStep": "heard.transcript",
    "TranslationQueue": "heard.release",
    "TurnId": "heard.transcript",
    "TurnStateError": "heard.errors",
    "TurnTracker": "heard.transcript",
    "UnknownNameError": "heard.errors",
    "WhisperOptions": "heard.asr",
    "build_phrases": "heard.timeline",
    "create_meeting": "heard.store.meetings",
    "load_workspace": "heard.memory.workspace",
    "meeting_phrases": "heard.store.views",
    "provider_from_env": "heard.llm.providers",
    "read_events": "heard.transcript",
    "run_guarded": "heard.transcript",
    "run_pipeline": "heard.meetings",
    "tokenize": "heard.transcript",
}
"""Each public name and the module that defines it."""

__all__ = [
    "AudioError",
    "Captions",
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
    "ModelError",
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
    "TranscriptStabilizer",
    "TranscriptStep",
    "Transcription",
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

if _typing.TYPE_CHECKING:
    from heard.asr import FasterWhisperTranscriber, Transcriber, WhisperOptions
    from heard.errors import (
        AudioError,
        EventLogError,
        HeardError,
        InputError,
        MissingDependencyError,
        ModelError,
        NotFoundError,
        ProviderError,
        TurnStateError,
        UnknownNameError,
    )
    from heard.llm import Provider
    from heard.llm.providers import provider_from_env
    from heard.meetings import PipelineOptions, PipelineOutcome, PipelineResult, run_pipeline
    from heard.memory.evidence import EvidenceIndex
    from heard.memory.recall import MemoryRecall
    from heard.memory.workspace import load_workspace
    from heard.release import (
        Captions,
        IdentityTranslator,
        LLMTranslator,
        ReleaseMode,
        ReleaseTracker,
        ReleaseUnit,
        TranslationQueue,
    )
    from heard.speech import Segment, Transcription
    from heard.store import Database, MeetingStatus, TrackStatus
    from heard.store.meetings import TrackSpec, create_meeting
    from heard.store.views import meeting_phrases
    from heard.timeline import PhraseDraft, Track, build_phrases
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
        TranscriptStabilizer,
        TranscriptStep,
        TurnId,
        TurnTracker,
        read_events,
        run_guarded,
        tokenize,
    )
    from heard.utterance import Evidence


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'heard' has no attribute {name!r}")
    value = getattr(_importlib.import_module(module), name)
    globals()[name] = value  # the next lookup is an ordinary attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
