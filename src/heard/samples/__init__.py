"""Real transcript-event logs bundled with heard (made with tools/record_partials.py).

* ``jfk_partials.jsonl``: faster-whisper tiny.en re-decoding tests/data/audio/jfk.flac
  every 500 ms (11 s, one speaker).
* ``runon_partials.jsonl``: the same over espeak-ng speech of a 60-word run-on sentence
  (16 s, no pauses), where the recognizer keeps changing its mind.
* ``meeting/``: a 20 s three-person meeting synthesized with espeak-ng and sox
  (``tools/make_meeting.py``): one FLAC per participant, ``meeting.json`` with each
  track's offset and the script. Carol says "uh-huh" while Alice holds the floor; Bob
  joins 10 s in and starts talking before Alice has finished.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib.resources import as_file, files
from pathlib import Path

__all__ = ["SAMPLE_LOGS", "SampleMeeting", "sample_meeting", "sample_path"]

SAMPLE_LOGS = ("jfk_partials.jsonl", "runon_partials.jsonl")


def sample_path(name: str) -> Path:
    """Filesystem path of a bundled sample (the package is installed unzipped)."""
    if name not in SAMPLE_LOGS:
        raise KeyError(f"unknown sample {name!r}; choose one of: {', '.join(SAMPLE_LOGS)}")
    with as_file(files(__name__).joinpath(name)) as path:
        return Path(path)


@dataclass(frozen=True, slots=True)
class SampleMeeting:
    title: str
    tracks: tuple[tuple[str, Path, float], ...]
    """(participant, file, offset in seconds) per track."""


def sample_meeting() -> SampleMeeting:
    """The bundled three-person meeting."""
    with as_file(files(__name__).joinpath("meeting")) as folder:
        root = Path(folder)
    manifest = json.loads((root / "meeting.json").read_text(encoding="utf-8"))
    tracks = tuple(
        (t["participant"], root / t["file"], float(t["offset_s"])) for t in manifest["tracks"]
    )
    return SampleMeeting(manifest["title"], tracks)
