"""Blocking work shared fairly between users: ``FairPool``.

A server's blocking calls (a database read, counting an upload's length, a memory rebuild)
cannot run on its event loop, and on one shared pool of threads (asyncio's default: cores + 4)
one user with a dozen long calls in flight holds every thread, and everyone else's small
calls wait behind them. A ``FairPool`` runs each owner's calls on its own threads, at most
``per_owner`` of one owner's at once, and when a thread frees it goes to the owner waiting
whose call last started longest ago (an owner never served counts as served just before the
call that started last when its first call came: a flood of new owners, made-up tokens say,
goes behind those waiting already, ahead only of the owner whose call started last):
another user's call waits for at most one call of each owner ahead of it, never for a heavy
user's queue.

Live decoding comes ahead of bulk work (a file transcribed, a meeting run, a search or a
rename): the thread that does bulk work lowers its own priority (``lower_priority``), so on a
busy machine the system gives the cores to the live decoders first. A fair share of threads
alone does not: a thread waiting for a core is late whatever its share. A pool whose threads
also start live sockets (a ``FairPool``'s) is never lowered: a model loaded on a lowered
thread would lower the threads it starts, the live decoders' among them.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from functools import partial
from typing import Any, TypeVar

__all__ = ["BULK_NICE", "FairPool", "lower_priority", "lowered"]

T = TypeVar("T")

FORGET_AFTER = 4096
"""When more owners than this were served, those with nothing waiting or running are
forgotten (each comes back as if new: in line from when it asks again)."""

_Call = tuple[Future[Any], Callable[[], Any]]

BULK_NICE = 10
"""How far below live decoding bulk work runs (Linux's nice values: 0 to 19, each step about
a quarter less CPU against a busier thread)."""
_lowered = threading.local()


def lower_priority() -> None:
    """This thread does bulk work from now on: its nice value goes to ``BULK_NICE`` (a thread's
    own on Linux; threads it starts inherit it). It cannot be raised again without privilege,
    so it is for threads that only ever do such work. Elsewhere, or where refused, nothing."""
    if getattr(_lowered, "done", False):
        return
    _lowered.done = True
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, max(os.getpriority(os.PRIO_PROCESS, tid), BULK_NICE))
    except (AttributeError, OSError):  # not Linux-like, or a sandbox that refuses it
        pass


def lowered(make: Callable[[], T]) -> T:
    """``make()`` on a thread of its own at bulk priority: what it starts (a model's threads)
    inherits that priority."""
    made: list[T] = []
    failed: list[BaseException] = []

    def run() -> None:
        lower_priority()
        try:
            made.append(make())
        except BaseException as e:  # noqa: BLE001 - raised again in the caller
            failed.append(e)

    thread = threading.Thread(target=run, name="heard-bulk-load")
    thread.start()
    thread.join()
    if failed:
        raise failed[0]
    return made[0]


class FairPool:
    """``threads`` threads (started as calls come, daemons) running owners' blocking calls,
    at most ``per_owner`` of one owner's at once; whose call goes next is the waiting owner
    served longest ago, each owner's own calls in the order they came. An owner is any
    string: a user's id, a token's digest."""

    def __init__(self, threads: int, per_owner: int = 1, name: str = "heard-work") -> None:
        if threads < 1 or per_owner < 1:
            raise ValueError(f"a pool needs a thread and a share: {threads}, {per_owner}")
        self.threads, self.per_owner, self.name = threads, per_owner, name
        self._lock = threading.Condition()
        self._waiting: dict[str, deque[_Call]] = {}
        self._running: dict[str, int] = {}
        self._served: dict[str, float] = {}  # owner -> the turn its last call started in
        self._turns = 0
        self._workers: list[threading.Thread] = []
        self._idle = 0

    def submit(self, owner: str, call: Callable[..., T], *args: Any) -> Future[T]:
        """Run ``call(*args)`` in ``owner``'s turn (with the caller's context variables)."""
        future: Future[T] = Future()
        bound = partial(contextvars.copy_context().run, call, *args)
        with self._lock:
            # a newcomer is in line from now: ahead of it, whoever was served before the
            # last call started (it was not first in line, always, as a light user once was)
            self._served.setdefault(owner, self._turns - 0.5)
            self._waiting.setdefault(owner, deque()).append((future, bound))
            if self._idle == 0 and len(self._workers) < self.threads:
                worker = threading.Thread(
                    target=self._work, name=f"{self.name}-{len(self._workers)}", daemon=True
                )
                self._workers.append(worker)
                worker.start()
            self._lock.notify()
        return future

    async def run(self, owner: str, call: Callable[..., T], *args: Any) -> T:
        """``call(*args)``'s result, awaited; cancelled while it waits, it never runs."""
        return await asyncio.wrap_future(self.submit(owner, call, *args))

    def waiting(self, owner: str) -> int:
        """How many of ``owner``'s calls wait for a thread."""
        with self._lock:
            return len(self._waiting.get(owner, ()))

    def _next(self) -> tuple[str, _Call] | None:
        ready = [o for o, calls in self._waiting.items()
                 if calls and self._running.get(o, 0) < self.per_owner]  # fmt: skip
        if not ready:
            return None
        owner = min(ready, key=lambda o: self._served[o])
        calls = self._waiting[owner]
        call = calls.popleft()
        if not calls:
            del self._waiting[owner]
        self._running[owner] = self._running.get(owner, 0) + 1
        self._turns += 1
        self._served[owner] = self._turns
        return owner, call

    def _work(self) -> None:
        while True:
            with self._lock:
                while (taken := self._next()) is None:
                    self._idle += 1
                    self._lock.wait()
                    self._idle -= 1
            owner, (future, call) = taken
            try:
                if future.set_running_or_notify_cancel():  # False: its caller gave up
                    try:
                        future.set_result(call())
                    except BaseException as e:  # noqa: BLE001 - handed to the caller
                        future.set_exception(e)
            finally:
                with self._lock:
                    self._running[owner] -= 1
                    if not self._running[owner]:
                        del self._running[owner]
                    if len(self._served) > FORGET_AFTER:  # owners long gone
                        busy = self._waiting.keys() | self._running.keys()
                        self._served = {o: t for o, t in self._served.items() if o in busy}
                    self._lock.notify()
