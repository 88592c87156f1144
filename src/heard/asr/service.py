"""Who decodes a live stream's buffers: the stream itself, or one service for all of them.

A ``DirectDecoder`` decodes on the calling thread. A ``DecodeService`` is shared by every
live stream of a process (``heard serve``): its workers (one per core, each decoding on one
thread: tiny.en's small matrices keep two threads of one decode from using two cores, two
decodes at once do, 1.5x as many per second here) each take their share of the requests the
streams have queued (what waits, over the number of workers), oldest first, and decode them
in one call (``BufferDecoder`` batches those of one context length), so N streams cost a few
encoder and generate calls per round instead of N calls contending for the same cores. No
stream waits more than one round behind the others: a stream has at most one request
outstanding (its step waits for it), and the rounds take the queued requests (up to
``max_batch`` each) in the order they came.

The service also paces the streams together (``step_ms``). A word is committed at most two
steps after it is spoken (sooner once a decode has heard a second after it), so the step
bounds the latency, and it is as short as the cores allow: one of ``PACE_STEPS_MS`` (500 ms
to 4 s), the shortest at which the last window's load, scaled to that step, keeps the
workers under ``BUSY_ABOVE``. The step widens at once to that rung, and narrows one rung
after two windows that say the shorter step would stay under ``NARROW_BELOW``. Load falls
on all streams alike, not on the first unlucky one, and by small steps: doubling from 1 s
to 2 s and 4 s, 8 streams of a real phone call committed words 8.6 s late (p50; issue 43).
Streams read ``step_ms`` before each step and tell their clients when it moves.
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
    "NARROW_BELOW",
    "PACE_STEPS_MS",
    "DecodeService",
    "Decoder",
    "DirectDecoder",
    "SharedPace",
    "shared_service",
]

PACE_STEPS_MS = (500, 750, 1000, 1250, 1500, 2000, 3000, 4000)
"""The steps a service's streams decode at, from the least loaded up."""

BUSY_ABOVE = 0.85
"""The share of their time the workers may be busy at the step chosen: over it, requests
queue, and a queued request is a word committed later."""

NARROW_BELOW = 0.6
"""The step narrows to the next rung down only if the load there would stay under this, for
two windows in a row: below ``BUSY_ABOVE``, so it does not widen again in the next."""


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
    """The step every stream of a service decodes at, from the share of their time the
    workers were busy in the last window (``load``): at step ``s`` the same streams would keep
    them about ``load * step_ms / s`` busy (a decode's cost hardly depends on the step: the
    buffer is cut in pauses, not by the step)."""

    workers: int = 1
    min_ms: int = PACE_STEPS_MS[0]
    max_ms: int = PACE_STEPS_MS[-1]
    window_s: float = 2.0
    step_ms: int = PACE_STEPS_MS[0]
    light_windows: int = 0
    last_load: float = 0.0
    """The share of the last window the workers were busy."""
    _window_start: float = field(default_factory=time.monotonic)
    _busy_s: float = 0.0

    @property
    def steps(self) -> list[int]:
        rungs = {s for s in PACE_STEPS_MS if self.min_ms <= s <= self.max_ms}
        return sorted(rungs | {self.min_ms, self.max_ms})

    def observe(self, busy_s: float, now: float) -> int | None:
        """A round took ``busy_s`` of one worker; at each window's end, returns the new step
        if it moved."""
        self._busy_s += busy_s
        elapsed = now - self._window_start
        if elapsed < self.window_s:
            return None
        load = self.last_load = self._busy_s / (elapsed * self.workers)
        self._window_start, self._busy_s = now, 0.0
        steps = self.steps
        at = steps.index(self.step_ms) if self.step_ms in steps else 0

        def load_at(step: int) -> float:
            return load * self.step_ms / step

        needed = next((i for i, s in enumerate(steps) if load_at(s) <= BUSY_ABOVE),
                      len(steps) - 1)  # fmt: skip
        if needed > at:
            self.light_windows = 0
            self.step_ms = steps[needed]
            return self.step_ms
        shorter = at - 1
        light = shorter >= 0 and load_at(steps[shorter]) < NARROW_BELOW
        self.light_windows = self.light_windows + 1 if light else 0
        if self.light_windows >= 2:
            self.light_windows = 0
            self.step_ms = steps[shorter]
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
        self,
        model: LoadedModel,
        *,
        workers: int = 1,
        max_batch: int = 16,
        step_ms: int = PACE_STEPS_MS[0],
    ) -> None:
        self.direct = DirectDecoder(model)
        self.max_batch = max_batch
        self.pace = SharedPace(workers=workers, min_ms=step_ms, step_ms=step_ms)
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
                # a share of what waits, the rest for the other workers: each decodes its
                # share as one batch, on its own core
                share = min(self.max_batch, -(-len(self._queue) // len(self._workers)))
                batch, self._queue = self._queue[:share], self._queue[share:]
                if self._queue:
                    self._ready.notify()
            started = time.monotonic()
            self._round(batch)
            now = time.monotonic()
            with self._paced:
                self.pace.observe(now - started, now)

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
