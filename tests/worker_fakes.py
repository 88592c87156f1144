"""Transcribers for Celery worker processes in tests (``HEARD_TRANSCRIBER=tests.worker_fakes:...``).

``fake://NAME/N?sleep=S`` gives N deterministic segments after sleeping S seconds; any
other location is a real file for faster-whisper, so one meeting can use the real model.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

from heard.speech import Segment, Transcription


def fake_segments(location: str) -> list[Segment]:
    url = urlparse(location)
    count = int(url.path.strip("/") or 1)
    return [Segment(i * 4.0, i * 4.0 + 3.0, f"{url.netloc} says {i}") for i in range(count)]


class RoutingTranscriber:
    name = "fake-or-real"

    def __init__(self) -> None:
        self._real: Any = None

    def transcribe(
        self,
        audio: str | Path | Any,
        *,
        channel: int | None = None,
        language: str | None = None,
        on_progress: Callable[[float, float], None] | None = None,
    ) -> Transcription:
        location = str(audio)
        if location.startswith("fake://"):
            sleep_s = float(parse_qs(urlparse(location).query).get("sleep", ["0"])[0])
            time.sleep(sleep_s)
            return Transcription(tuple(fake_segments(location)), language)
        if self._real is None:
            from heard.asr.transcribers import load_transcriber
            from heard.asr.whisper import WhisperOptions
            from heard.settings import settings

            self._real = load_transcriber(
                "faster-whisper", WhisperOptions.from_settings(settings())
            )
        return self._real.transcribe(  # type: ignore[no-any-return]
            audio, channel=channel, language=language, on_progress=on_progress
        )


def routing() -> RoutingTranscriber:
    return RoutingTranscriber()
