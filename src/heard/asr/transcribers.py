"""Transcribers chosen by name: the registry behind ``HEARD_TRANSCRIBER``.

``faster-whisper`` is heard's own; any other name of the form ``module:callable`` is imported
and called with no arguments, so a deployment can plug in another recognizer without a patch.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING

from heard.asr.transcriber import Transcriber
from heard.errors import InputError
from heard.registry import Registry

if TYPE_CHECKING:
    from heard.asr.whisper import WhisperOptions

__all__ = ["TRANSCRIBERS", "load_transcriber"]


def _faster_whisper(whisper: WhisperOptions) -> Transcriber:
    from heard.asr.whisper import FasterWhisperTranscriber

    return FasterWhisperTranscriber(whisper)


TRANSCRIBERS: Registry[Callable[[WhisperOptions], Transcriber]] = Registry(
    "transcriber", {"faster-whisper": _faster_whisper}
)
"""Each built-in transcriber's factory, given the model, language, device and threads chosen."""


def _imported(spec: str) -> Transcriber:
    module_name, _, attr = spec.partition(":")
    try:
        factory = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as e:
        raise InputError(f"HEARD_TRANSCRIBER {spec!r}: cannot import it ({e})") from None
    transcriber = factory()
    if not isinstance(transcriber, Transcriber):
        raise InputError(f"HEARD_TRANSCRIBER {spec!r} did not return a Transcriber")
    return transcriber


@cache
def load_transcriber(spec: str, whisper: WhisperOptions | None = None) -> Transcriber:
    """The transcriber named by ``spec`` (a registered name or ``module:callable``), made once
    per process for each choice of ``whisper`` options (default: tiny.en)."""
    if spec in TRANSCRIBERS:
        from heard.asr.whisper import WhisperOptions

        return TRANSCRIBERS[spec](whisper or WhisperOptions())
    if ":" not in spec:
        names = ", ".join(TRANSCRIBERS)
        raise InputError(f"HEARD_TRANSCRIBER {spec!r}: expected {names} or module:callable")
    return _imported(spec)
