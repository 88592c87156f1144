"""Transcribers chosen by name: the registry behind ``HEARD_TRANSCRIBER``.

``faster-whisper`` is heard's own; any other name of the form ``module:callable`` is imported
and called with no arguments, so a deployment can plug in another recognizer without a patch.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from functools import cache

from heard.asr.transcriber import Transcriber
from heard.errors import InputError
from heard.registry import Registry

__all__ = ["TRANSCRIBERS", "load_transcriber"]


def _faster_whisper(cpu_threads: int) -> Transcriber:
    from heard.asr.whisper import FasterWhisperTranscriber, WhisperOptions

    return FasterWhisperTranscriber(WhisperOptions(cpu_threads=cpu_threads))


TRANSCRIBERS: Registry[Callable[[int], Transcriber]] = Registry(
    "transcriber", {"faster-whisper": _faster_whisper}
)
"""Each built-in transcriber's factory, given the CPU threads it may use (0: its choice)."""


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
def load_transcriber(spec: str, cpu_threads: int = 0) -> Transcriber:
    """The transcriber named by ``spec`` (a registered name or ``module:callable``), made once
    per process."""
    if spec in TRANSCRIBERS:
        return TRANSCRIBERS[spec](cpu_threads)
    if ":" not in spec:
        names = ", ".join(TRANSCRIBERS)
        raise InputError(f"HEARD_TRANSCRIBER {spec!r}: expected {names} or module:callable")
    return _imported(spec)
