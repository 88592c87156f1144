"""The ``Transcriber`` seam: one track's audio in; its segments (track-relative times) and
their language out."""

from __future__ import annotations

from collections.abc import Callable, Generator
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar, runtime_checkable

from heard.speech import Segment, Transcription

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["ProgressCallback", "SegmentCallback", "Transcriber", "drained", "transcribe_each"]

ProgressCallback = Callable[[float, float], None]
SegmentCallback = Callable[[Segment], None]


@runtime_checkable
class Transcriber(Protocol):
    """Anything that turns one track's audio into segments."""

    name: str
    """Identifies the model, for provenance in the store."""

    def transcribe(
        self,
        audio: str | Path | npt.NDArray[np.float32],
        *,
        channel: int | None = None,
        language: str | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> Transcription:
        """Transcribe a file (optionally one of its channels) or 16 kHz mono samples.

        ``language`` is the speaker's (an ISO 639-1 code), None to let the recognizer decide;
        ``on_progress(done_s, total_s)`` is called as audio is consumed.
        """
        ...


def transcribe_each(
    transcriber: Transcriber,
    audio: str | Path | npt.NDArray[np.float32],
    on_segment: SegmentCallback,
    *,
    language: str | None = None,
    on_progress: ProgressCallback | None = None,
) -> Transcription:
    """``transcriber.transcribe(audio)``, with ``on_segment`` called on each segment as soon
    as there is one: as it is decoded where the transcriber has a ``segments`` generator
    (``FasterWhisperTranscriber``, ``heard.testing.FakeTranscriber``) whose return value is
    the whole transcription; all at the end for any other."""
    stream = getattr(transcriber, "segments", None)
    if stream is None:
        heard = transcriber.transcribe(audio, language=language, on_progress=on_progress)
        for segment in heard.segments:
            on_segment(segment)
        return heard
    streamed: Transcription = drained(
        stream(audio, language=language, on_progress=on_progress), on_segment
    )
    return streamed


T = TypeVar("T")


def drained(segments: Generator[Segment, None, T], on_segment: SegmentCallback | None = None) -> T:
    """What a ``segments`` generator returns once run to its end (``on_segment`` told of each
    segment it gives on the way)."""
    while True:
        try:
            segment = next(segments)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        if on_segment is not None:
            on_segment(segment)
