"""The meeting pipeline: tracks -> transcripts -> phrases in the store, idempotent."""

from heard.pipeline.run import PipelineOutcome, PipelineResult, TrackProgress, run_pipeline
from heard.pipeline.steps import PipelineOptions

__all__ = [
    "PipelineOptions",
    "PipelineOutcome",
    "PipelineResult",
    "TrackProgress",
    "run_pipeline",
]
