"""Test doubles at heard's I/O seams (only here, never in the package)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from heard.timeline.phrases import Segment


class FakeTranscriber:
    """Returns canned segments per track location; an exception value is raised instead."""

    name = "fake"

    def __init__(
        self,
        by_location: Mapping[str, Sequence[Segment] | BaseException],
        before: Callable[[str], None] | None = None,
    ) -> None:
        self.by_location = dict(by_location)
        self.calls: list[str] = []
        self.before = before

    def transcribe(
        self,
        audio: str | Path | Any,
        *,
        channel: int | None = None,
        on_progress: Callable[[float, float], None] | None = None,
    ) -> list[Segment]:
        location = str(audio)
        self.calls.append(location)
        if self.before is not None:
            self.before(location)
        result = self.by_location[location]
        if isinstance(result, BaseException):
            raise result
        if on_progress is not None and result:
            on_progress(result[-1].end, result[-1].end)
        return list(result)
