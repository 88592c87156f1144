"""Real transcript-event logs bundled with heard (made with tools/record_partials.py).

* ``jfk_partials.jsonl``: faster-whisper tiny.en re-decoding ../shared/data/audio/jfk.flac
  every 500 ms (11 s, one speaker).
* ``runon_partials.jsonl``: the same over espeak-ng speech of a 60-word run-on sentence
  (16 s, no pauses), where the recognizer keeps changing its mind.
"""

from __future__ import annotations

from importlib.resources import as_file, files
from pathlib import Path

__all__ = ["SAMPLE_LOGS", "sample_path"]

SAMPLE_LOGS = ("jfk_partials.jsonl", "runon_partials.jsonl")


def sample_path(name: str) -> Path:
    """Filesystem path of a bundled sample (the package is installed unzipped)."""
    if name not in SAMPLE_LOGS:
        raise KeyError(f"unknown sample {name!r}; choose one of: {', '.join(SAMPLE_LOGS)}")
    with as_file(files(__name__).joinpath(name)) as path:
        return Path(path)
