"""The meeting timeline: per-participant segments merged into phrases. Pure."""

from heard.timeline.phrases import (
    INTERJECTION_THRESHOLD_S,
    PhraseDraft,
    Track,
    build_phrases,
)

__all__ = [
    "INTERJECTION_THRESHOLD_S",
    "PhraseDraft",
    "Track",
    "build_phrases",
]
