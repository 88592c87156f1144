"""The ``Transcriber`` seam: one track's audio in; its segments (track-relative times) and
their language out."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from heard.speech import Transcription

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["ProgressCallback", "Transcriber"]

ProgressCallback = Callable[[float, float], None]


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
