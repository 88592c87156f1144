"""What one token may send over all its live connections (``/v1/live``): token buckets for
transcript events and for audio, and a bar on new connections after going over either; the
turns of whole files waiting to be transcribed (``FairQueue``); and a request's answer in time
when the server stops (``until_stopped``). The limits shared with the rest of heard (bodies,
evidence, storage) and the bucket itself are ``heard.limits``.

Pure but for the clock, which is injected (``time.monotonic`` by default): tests move it.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from starlette.requests import Request

from heard.errors import BusyError, StoppingError
from heard.limits import Bucket

__all__ = [
    "ADDRESSES_KEPT",
    "AUDIO_BURST",
    "AUDIO_BYTES_PER_S",
    "AUTH_FAILURES_PER_S",
    "AUTH_FAILURE_BURST",
    "BARRED_S",
    "EVENTS_PER_S",
    "EVENT_BURST",
    "LIVE_AUDIO_X",
    "REFUSAL_DELAY_S",
    "SOCKETS_PER_TOKEN",
    "STOP_ANSWER_S",
    "AuthFailures",
    "FairQueue",
    "Quota",
    "limit_text",
    "until_stopped",
]

T = TypeVar("T")

EVENTS_PER_S, EVENT_BURST = 100, 400
"""Transcript events a connection may send: 100 a second, bursts of 400 (a recognizer sends
a partial every 100-500 ms per speaker)."""
AUDIO_BYTES_PER_S, AUDIO_BURST = 32_000, 160_000
"""One channel of 16 kHz PCM16 at real time (32,000 bytes a second), and 5 s of it. A token's
live sockets together may send ``audio_x`` times this (2 by default: a stereo call, or one
stream at twice real time), bursts as many times 5 s. Each channel of a stream counts: the
CPU decodes each channel as one stream, so 8 channels cost what 8 sockets do."""
LIVE_AUDIO_X = 2.0
"""The default allowance of a token's live audio, in channels at real time."""
SOCKETS_PER_TOKEN = 16
"""The live sockets one token may hold open at once (more: a 429 at the handshake)."""
AUTH_FAILURES_PER_S, AUTH_FAILURE_BURST = 1.0, 20
"""Bad tokens one client address may send: 20 at once, then one a second. Past that, its
requests and handshakes that carry a token are a 429 with Retry-After, before the token is
looked up (a valid token too: the address is guessing)."""
ADDRESSES_KEPT = 10_000
"""Client addresses whose bad tokens are remembered; the one heard from longest ago goes."""
BARRED_S = 10.0
"""How long a token closed for going over a rate limit may open no live connection."""
REFUSAL_DELAY_S = 1.0
"""How long a barred token's connection waits before it is refused."""


class Quota:
    """What one token may still send over all its live connections, and until when it may
    open none."""

    def __init__(
        self, clock: Callable[[], float] = time.monotonic, audio_x: float = LIVE_AUDIO_X
    ) -> None:
        self.clock = clock
        self.audio_x = audio_x
        self.events = Bucket(EVENTS_PER_S, EVENT_BURST, clock)
        self.pcm = Bucket(AUDIO_BYTES_PER_S * audio_x, AUDIO_BURST * audio_x, clock)
        self.barred_until = 0.0
        self.sockets = 0
        """The token's live sockets open now."""

    def bar(self) -> None:
        self.barred_until = self.clock() + BARRED_S

    def barred_for(self) -> float:
        return self.barred_until - self.clock()


def limit_text(what: str, audio_x: float = LIVE_AUDIO_X) -> str:
    """The limit a client went over, ``events`` or ``audio``, as its error message says it."""
    if what == "events":
        return f"{EVENTS_PER_S} events/s (bursts of {EVENT_BURST})"
    return f"{audio_x:g} channels of audio at real time (each channel of a stream counts)"


class AuthFailures:
    """The bad tokens each client address sent (``AUTH_FAILURES_PER_S``): an address that
    sent too many waits before its next token is even looked up."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._by_address: OrderedDict[str, Bucket] = OrderedDict()

    def wait_s(self, address: str) -> int:
        """Whole seconds ``address`` must wait before it may try a token again (0: now)."""
        bucket = self._by_address.get(address)
        return 0 if bucket is None else math.ceil(bucket.wait_s(1))

    def failed(self, address: str) -> None:
        """``address`` sent a token that is not one."""
        bucket = self._by_address.pop(address, None)
        if bucket is None:
            bucket = Bucket(AUTH_FAILURES_PER_S, AUTH_FAILURE_BURST, self.clock)
            while len(self._by_address) >= ADDRESSES_KEPT:
                self._by_address.popitem(last=False)
        self._by_address[address] = bucket
        bucket.take(1)


class FairQueue:
    """Whole files to transcribe: ``total`` at once; the rest wait their turn, at most
    ``per_user`` of one user and ``waiting`` in all (past that, ``BusyError``: a 429 with
    Retry-After). When a place frees, the waiting user served longest ago goes first (one
    user re-posting cannot keep the place from another), each user's own files in the order
    they came. ``stopping`` set: the waiting give up with ``StoppingError`` (a 503). A waiting
    request holds a request thread (40 in all), so ``waiting`` stays well under that."""

    def __init__(
        self,
        total: int,
        *,
        per_user: int = 4,
        waiting: int = 16,
        stopping: threading.Event | None = None,
        typical_s: float = 10.0,
    ) -> None:
        self.total, self.per_user, self.waiting = total, per_user, waiting
        self.stopping = stopping or threading.Event()
        self.typical_s = typical_s
        """About how long one file takes: Retry-After is this times the files ahead."""
        self._lock = threading.Condition()
        self._running = 0
        self._queue: list[tuple[int, str]] = []  # (ticket, owner), in arrival order
        self._served: dict[str, int] = {}  # owner -> the turn it was last served in
        self._turns = 0  # files started so far
        self._counter = 0

    def _next(self) -> int | None:
        """The ticket whose turn it is: its user served longest ago, then the oldest."""
        if not self._queue:
            return None
        firsts: dict[str, int] = {}
        for ticket, owner in self._queue:
            firsts.setdefault(owner, ticket)
        owner = min(firsts, key=lambda o: (self._served.get(o, -1), firsts[o]))
        return firsts[owner]

    @contextlib.contextmanager
    def taken(self, owner: str, hung_up: threading.Event | None = None) -> Iterator[None]:
        """Wait for ``owner``'s turn (``hung_up`` set: the client left, and so does the
        request, with ``StoppingError``)."""
        with self._lock:
            mine = sum(1 for _, o in self._queue if o == owner)
            if mine >= self.per_user or len(self._queue) >= self.waiting:
                ahead = len(self._queue) + self._running
                if mine >= self.per_user:
                    detail = f"this user has {mine} files waiting to be transcribed"
                else:
                    detail = f"the server has {len(self._queue)} files waiting to be transcribed"
                raise BusyError(f"{detail}; send this one later",
                                retry_after_s=self.typical_s * ahead / self.total)  # fmt: skip
            self._counter += 1
            ticket = self._counter
            self._queue.append((ticket, owner))
            try:
                while not (self._running < self.total and self._next() == ticket):
                    if self.stopping.is_set():
                        raise StoppingError("the server is shutting down: send the file again")
                    if hung_up is not None and hung_up.is_set():
                        raise StoppingError(HUNG_UP)
                    self._lock.wait(timeout=_POLL_S)
            finally:
                self._queue.remove((ticket, owner))
                self._lock.notify_all()
            self._running += 1
            self._turns += 1
            self._served[owner] = self._turns
        try:
            yield
        finally:
            with self._lock:
                self._running -= 1
                self._lock.notify_all()


HUNG_UP = "the client hung up: the work was given up"
STOP_ANSWER_S = 15.0
"""Once the server is told to stop, a request's work has this long to finish before its caller
is answered 503 anyway: well inside uvicorn's grace (``transport.GRACE_S``, 30 s), after which
what still runs is cancelled and its caller gets no answer at all."""
_POLL_S = 0.25


async def until_stopped(
    stopping: threading.Event,
    work: Callable[[], T],
    answer_s: float | None = None,
    *,
    client: Request | None = None,
    hung_up: threading.Event | None = None,
) -> T:
    """``work()`` on a request thread, its result; or, once ``stopping`` is set and
    ``answer_s`` (``STOP_ANSWER_S``) more have passed without it, a ``StoppingError`` (a 503)
    while there is still time to send one. With ``client``, its request: once the client has
    hung up, ``hung_up`` is set (the work's own check stops it) and nobody waits for the work
    (a ``StoppingError``, answered to no one). Work left behind ends at its next check of
    ``stopping`` (or ``hung_up``) and removes its own files (those of a process killed first
    are cleared when the next one starts)."""
    from starlette.concurrency import run_in_threadpool

    task = asyncio.ensure_future(run_in_threadpool(work))
    try:
        while not stopping.is_set():
            done, _ = await asyncio.wait({task}, timeout=_POLL_S)
            if done:
                return task.result()
            if client is not None and await client.is_disconnected():
                if hung_up is not None:
                    hung_up.set()
                task.add_done_callback(_forgotten)
                raise StoppingError(HUNG_UP)
        done, _ = await asyncio.wait(
            {task}, timeout=STOP_ANSWER_S if answer_s is None else answer_s
        )
    except BaseException:  # the request itself cancelled: the work still ends on its own
        task.add_done_callback(_forgotten)
        raise
    if done:
        return task.result()
    task.add_done_callback(_forgotten)
    raise StoppingError("the server is shutting down: send the file again")


def _forgotten(task: asyncio.Future[Any]) -> None:
    """Collect what work nobody waits for any more ended with (nothing to log)."""
    if not task.cancelled():
        task.exception()
