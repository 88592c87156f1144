"""Who decodes a live stream's buffers: the stream itself, or one service for all of them.

A ``DirectDecoder`` decodes on the calling thread. A ``DecodeService`` is shared by every
live stream of a process (``heard serve``): its workers (one per core, each decoding on one
thread: tiny.en's small matrices keep two threads of one decode from using two cores, two
decodes at once do, 1.5x as many per second here) each take whatever requests the streams
have queued, oldest first, and decode them in one call (``BufferDecoder`` batches those of
one context length), so N streams cost a few encoder and generate calls per round instead of
N calls contending for the same cores. No stream waits more than one round behind
the others: a stream has at most one request outstanding (its step waits for it), and each
round takes every queued request up to ``max_batch``, in the order they came.

The service also paces the streams together (``step_ms``): when its rounds keep it busy
more than ``BUSY_ABOVE`` of the time, every stream's step doubles (up to 4 s), and when it
is idle enough again they halve back, so load falls on all streams alike, not on the first
unlucky one. Streams read ``step_ms`` before each step and tell their clients when it moves.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from typing import Protocol

from heard.asr.decoder import BufferDecoder, Request
from heard.asr.models import resolve_device
from heard.asr.whisper import LoadedModel, WhisperOptions, load_model
from heard.speech import Segment

__all__ = [
    "BUSY_ABOVE",
    "IDLE_BELOW",
    "DecodeService",
    "Decoder",
    "DirectDecoder",
    "SharedPace",
    "shared_service",
]

BUSY_ABOVE = 0.9
"""A service busy more than this share of a pacing window widens every stream's step."""

IDLE_BELOW = 0.4
"""Busy less than this (under half of BUSY_ABOVE: the halved step about doubles the load and
must still keep up) for two windows in a row narrows it back."""


class Decoder(Protocol):
    def decode(self, language: str, requests: Sequence[Request]) -> list[list[Segment]]:
        """Each request's segments (times from the start of its buffer), in order."""
        ...


class DirectDecoder:
    """Decodes on the calling thread (one stream, ``heard stream``, tests)."""

    def __init__(self, model: LoadedModel) -> None:
        self.model = model
        self._by_language: dict[str, BufferDecoder] = {}

    def decoder(self, language: str) -> BufferDecoder:
        found = self._by_language.get(language)
        if found is None:
            found = self._by_language[language] = BufferDecoder(self.model, language)
        return found

    def decode(self, language: str, requests: Sequence[Request]) -> list[list[Segment]]:
        return self.decoder(language).decode(requests)


@dataclass
class SharedPace:
    """The step every stream of a service decodes at, from how busy the service is."""

    min_ms: int = 1000
    max_ms: int = 4000
    window_s: float = 4.0
    step_ms: int = 1000
    busy_windows: int = 0
    idle_windows: int = 0
    last_load: float = 0.0
    """The share of the last window the service was busy."""
    _window_start: float = field(default_factory=time.monotonic)
    _busy_s: float = 0.0

    def observe(self, busy_s: float, now: float) -> int | None:
        """One round took ``busy_s``; at each window's end, returns the new step if it moved."""
        self._busy_s += busy_s
        elapsed = now - self._window_start
        if elapsed < self.window_s:
            return None
        load = self.last_load = self._busy_s / elapsed
        self._window_start, self._busy_s = now, 0.0
        self.busy_windows = self.busy_windows + 1 if load > BUSY_ABOVE else 0
        self.idle_windows = self.idle_windows + 1 if load < IDLE_BELOW else 0
        if self.busy_windows >= 1 and self.step_ms < self.max_ms:
            self.busy_windows = 0
            self.step_ms = min(self.max_ms, self.step_ms * 2)
            return self.step_ms
        if self.idle_windows >= 2 and self.step_ms > self.min_ms:
            self.idle_windows = 0
            self.step_ms = max(self.min_ms, self.step_ms // 2)
            return self.step_ms
        return None


@dataclass
class _Job:
    language: str
    request: Request
    done: Future[list[Segment]] = field(default_factory=Future)


class DecodeService:
    """One worker decoding every live stream's buffers, in rounds; ``close`` stops it."""

    def __init__(
        self, model: LoadedModel, *, workers: int = 1, max_batch: int = 16, step_ms: int = 1000
    ) -> None:
        self.direct = DirectDecoder(model)
        self.max_batch = max_batch
        self.pace = SharedPace(min_ms=step_ms, step_ms=step_ms)
        self.rounds = 0
        self.decoded = 0
        self._queue: list[_Job] = []
        self._ready = threading.Condition()
        self._paced = threading.Lock()
        self._closed = False
        self._workers = [
            threading.Thread(target=self._run, name=f"heard-decode-{i}", daemon=True)
            for i in range(workers)
        ]
        for worker in self._workers:
            worker.start()

    @property
    def step_ms(self) -> int:
        return self.pace.step_ms

    def decode(self, language: str, requests: Sequence[Request]) -> list[list[Segment]]:
        jobs = [_Job(language, r) for r in requests]
        with self._ready:
            if self._closed:
                raise RuntimeError("the decode service is closed")  # pragma: no cover
            self._queue.extend(jobs)
            self._ready.notify()
        return [job.done.result() for job in jobs]

    def close(self) -> None:
        with self._ready:
            self._closed = True
            self._ready.notify_all()
        for worker in self._workers:
            worker.join()

    def _run(self) -> None:
        while True:
            with self._ready:
                while not self._queue and not self._closed:
                    self._ready.wait()
                if not self._queue:
                    return
                batch, self._queue = self._queue[: self.max_batch], self._queue[self.max_batch :]
            started = time.monotonic()
            self._round(batch)
            now = time.monotonic()
            with self._paced:  # busy time over all workers, as a share of their time
                self.pace.observe((now - started) / len(self._workers), now)

    def _round(self, batch: list[_Job]) -> None:
        """Decode a round; whatever goes wrong reaches the streams it concerns, and a worker
        never dies with a stream waiting on it."""
        try:
            by_language: dict[str, list[_Job]] = {}
            for job in batch:
                by_language.setdefault(job.language, []).append(job)
            for language, jobs in by_language.items():
                self._decode(language, jobs)
        except BaseException as e:
            for job in batch:
                if not job.done.done():
                    job.done.set_exception(e)
            if not isinstance(e, Exception):
                raise
        with self._paced:
            self.rounds += 1
            self.decoded += len(batch)

    def _decode(self, language: str, jobs: list[_Job]) -> None:
        try:
            found = self.direct.decode(language, [j.request for j in jobs])
        except Exception:
            if len(jobs) == 1:
                raise
            for job in jobs:  # alone, each gets its own reading or its own error
                try:
                    self._decode(language, [job])
                except Exception as e:  # noqa: BLE001 - the stream's own error, given to it
                    job.done.set_exception(e)
            return
        for job, segments in zip(jobs, found, strict=True):
            job.done.set_result(segments)


_services: dict[int, DecodeService] = {}
_services_lock = threading.Lock()


def shared_service(options: WhisperOptions) -> DecodeService:
    """The process's decode service for the model ``options`` name, started on first use: on
    the CPU one worker per core, each decoding on one thread; on a GPU one worker, batching."""
    cores = os.cpu_count() or 1
    if resolve_device(options.device) == "cpu":
        options = replace(options, cpu_threads=1, workers=cores)
    model = load_model(options)
    with _services_lock:
        found = _services.get(id(model.whisper))
        if found is None:
            workers = cores if model.device == "cpu" else 1
            found = _services[id(model.whisper)] = DecodeService(model, workers=workers)
        return found
