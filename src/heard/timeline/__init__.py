"""The meeting timeline: per-participant segments merged into phrases. Pure."""

from heard.timeline.phrases import (
    INTERJECTION_THRESHOLD_S,
    PhraseDraft,
    Segment,
    Track,
    Word,
    build_phrases,
)

__all__ = [
    "INTERJECTION_THRESHOLD_S",
    "PhraseDraft",
    "Segment",
    "Track",
    "Word",
    "build_phrases",
]
