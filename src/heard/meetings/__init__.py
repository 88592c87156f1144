"""The meeting pipeline: tracks -> transcripts -> phrases in the store, idempotent."""

from heard.meetings.run import PipelineOutcome, PipelineResult, TrackProgress, run_pipeline
from heard.meetings.steps import PipelineOptions

__all__ = [
    "PipelineOptions",
    "PipelineOutcome",
    "PipelineResult",
    "TrackProgress",
    "run_pipeline",
]
