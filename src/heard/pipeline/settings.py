"""Settings of the scale-out pipeline, read from the environment.

* ``HEARD_BROKER_URL``: Celery broker, default ``redis://127.0.0.1:6379/0``
  (``amqp://guest:guest@127.0.0.1:5672//`` for RabbitMQ).
* ``HEARD_QUEUE``: the queue heard's tasks go to, default ``heard``.
* ``HEARD_STUCK_AFTER_S``: a track ``transcribing`` longer than this was abandoned
  by a dead worker, default 1800. It is also the tasks' hard time limit, so no live
  worker can still be holding a track older than that.
* ``HEARD_VISIBILITY_TIMEOUT_S``: how long Redis keeps an unacknowledged task
  before handing it to another worker, default 3600 (must exceed the time limit).
* ``HEARD_RETRY_DELAY_S``: first wait before looking again at a track still
  recording, default 30; it doubles on each retry, up to 10 minutes.
* ``HEARD_TRANSCRIBER``: ``faster-whisper`` (default) or ``module:callable``
  returning a ``Transcriber``, for plugging in another recognizer.
* ``HEARD_ASR_THREADS``: CPU threads per faster-whisper process, default 0
  (CTranslate2 decides). With several workers on one machine, give each
  cores / workers, or they fight over the cores (BENCHMARKS.md, workers).
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from functools import cache

from heard.asr.transcriber import Transcriber
from heard.errors import InputError

__all__ = ["WorkerSettings", "load_transcriber", "worker_settings"]


@dataclass(frozen=True, slots=True)
class WorkerSettings:
    broker_url: str = "redis://127.0.0.1:6379/0"
    queue: str = "heard"
    stuck_after_s: float = 1800.0
    visibility_timeout_s: float = 3600.0
    transcriber: str = "faster-whisper"
    database_url: str | None = None
    """None: ``$HEARD_DATABASE_URL`` or the SQLite default (``heard.config``)."""
    retry_delay_s: float = 30.0


def _float(name: str, default: float, *, allow_zero: bool = False) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise InputError(f"${name} must be a number of seconds, got {raw!r}") from None
    if value < 0 or (value == 0 and not allow_zero):
        raise InputError(f"${name} must be > 0, got {raw!r}")
    return value


def worker_settings() -> WorkerSettings:
    d = WorkerSettings()
    return WorkerSettings(
        broker_url=os.environ.get("HEARD_BROKER_URL") or d.broker_url,
        queue=os.environ.get("HEARD_QUEUE") or d.queue,
        stuck_after_s=_float("HEARD_STUCK_AFTER_S", d.stuck_after_s),
        visibility_timeout_s=_float("HEARD_VISIBILITY_TIMEOUT_S", d.visibility_timeout_s),
        transcriber=os.environ.get("HEARD_TRANSCRIBER") or d.transcriber,
        database_url=os.environ.get("HEARD_DATABASE_URL") or None,
        retry_delay_s=_float("HEARD_RETRY_DELAY_S", d.retry_delay_s),
    )


@cache
def load_transcriber(spec: str) -> Transcriber:
    """The transcriber named by ``spec``, made once per process."""
    if spec == "faster-whisper":
        from heard.asr.whisper import FasterWhisperTranscriber, WhisperOptions

        threads = int(_float("HEARD_ASR_THREADS", 0.0, allow_zero=True))
        return FasterWhisperTranscriber(WhisperOptions(cpu_threads=threads))
    module_name, _, attr = spec.partition(":")
    if not attr:
        raise InputError(f"HEARD_TRANSCRIBER {spec!r}: expected faster-whisper or module:callable")
    try:
        factory = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as e:
        raise InputError(f"HEARD_TRANSCRIBER {spec!r}: cannot import it ({e})") from None
    transcriber = factory()
    if not isinstance(transcriber, Transcriber):
        raise InputError(f"HEARD_TRANSCRIBER {spec!r} did not return a Transcriber")
    return transcriber
