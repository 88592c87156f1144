"""Who spoke when in one recording of several people (``heard transcribe call.wav``).

``Diarizer`` is the seam: ``OnnxDiarizer`` (ONNX Runtime, no PyTorch) is the real one,
``heard.testing.FakeDiarizer`` answers from a script for tests. ``split_words`` gives each
recognized word to its speaker, so that the speakers become the meeting's participants and
the usual timeline rules build their phrases.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from heard.diarize.turns import Diarization, SpeakerTurn, speaker_words, split_words
from heard.errors import InputError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "AUTO",
    "MAX_SPEAKERS",
    "Diarization",
    "Diarizer",
    "SpeakerTurn",
    "check_speakers",
    "default_diarizer",
    "speaker_count",
    "speaker_labels",
    "speaker_words",
    "split_words",
]

AUTO = "auto"
MAX_SPEAKERS = 16


@runtime_checkable
class Diarizer(Protocol):
    """Anything that says who spoke when in one recording."""

    name: str

    def diarize(
        self,
        audio: str | Path | npt.NDArray[np.float32],
        *,
        channel: int | None = None,
        speakers: int | None = None,
        on_progress: Callable[[float, float], None] | None = None,
    ) -> Diarization:
        """The speaker turns of a file (or one channel of it) or of 16 kHz mono samples:
        ``speakers`` of them, or as many as are heard when None."""
        ...


def check_speakers(value: str | int) -> str:
    """``auto`` or a number of speakers 1-16, as the store keeps it; ``InputError`` naming
    the value otherwise."""
    text = str(value).strip().lower()
    if text == AUTO:
        return AUTO
    if (
        isinstance(value, bool)
        or not (text.isascii() and text.isdigit())
        or not 1 <= int(text) <= MAX_SPEAKERS
    ):
        raise InputError(
            f"--speakers {value!r}: give auto or a number of speakers from 1 to {MAX_SPEAKERS}"
        )
    return str(int(text))


def speaker_count(stored: str) -> int | None:
    """The number of speakers asked for, None for ``auto``."""
    return None if stored == AUTO else int(stored)


def speaker_labels(
    names: tuple[str, ...] | list[str], count: int, fallback: str, taken: set[str] | None = None
) -> list[str]:
    """Names for ``count`` speakers in the order they are first heard: those given, then
    ``<fallback> N``, N moved on past any name given or in ``taken`` (casefolded, and updated
    with the names chosen), so no two participants are one name."""
    used = taken if taken is not None else set()
    given = [n.strip() for n in names]
    used |= {n.casefold() for n in given[:count]}
    out = given[:count]
    number = len(out)
    while len(out) < count:
        number += 1
        label = f"{fallback} {number}"
        if label.casefold() not in used:
            used.add(label.casefold())
            out.append(label)
    return out


@cache
def default_diarizer() -> Diarizer:
    """``OnnxDiarizer`` with its models loaded, one per process (``MissingDependencyError``
    when its models are not installed)."""
    from heard.diarize.onnx import OnnxDiarizer

    diarizer = OnnxDiarizer()
    diarizer.prepare()
    return diarizer
