"""The limits more than one part of heard holds a user to, each declared once, and the two
mechanisms that hold them: a token bucket (``Bucket``) and bounded slots for heavy work
(``Slots``).

The server's guard, its routes, the meetings layer and the users' memories read them from
here. What only the live sockets count (events and audio a second) stays with them
(``heard.server.quotas``). Pure but for the clock, which is injected (``time.monotonic`` by
default): tests move it.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator

from heard.errors import BusyError

__all__ = [
    "EVIDENCE_BODY_BYTES",
    "EVIDENCE_BURST",
    "EVIDENCE_BYTES_PER_S",
    "JSON_BODY_BYTES",
    "MAX_TRACK_S",
    "MAX_UPLOAD_BYTES",
    "USER_STORAGE_BYTES",
    "Bucket",
    "Slots",
]

MAX_UPLOAD_BYTES = 512 * 1024 * 1024
"""The largest audio body a request may send: a track, a file to transcribe, a Deepgram
``POST /v1/listen``."""
MAX_TRACK_S = 4 * 3600.0
"""The longest track heard takes by default ($HEARD_MAX_TRACK_S): a small file may hold hours
of low-bitrate audio, and hours take hours to transcribe."""
JSON_BODY_BYTES = 1024 * 1024
"""A JSON body of any route that takes no larger one (a meeting, a recall, a page)."""
EVIDENCE_BODY_BYTES = 32 * 1024 * 1024
"""A body of evidence to remember (``POST /v1/memory/evidence``)."""
EVIDENCE_BYTES_PER_S, EVIDENCE_BURST = 256 * 1024, EVIDENCE_BODY_BYTES
"""Evidence text one user may store: 15 MiB a minute, bursts of 32 MiB (one request at the
body limit); encoding it is the heaviest work a request can ask for."""
USER_STORAGE_BYTES = 10 * 2**30
"""The audio one user may keep by default ($HEARD_USER_STORAGE_MB): 10 GiB, some 300 hours of
meetings at 64 kbit/s."""


class Bucket:
    """A token bucket: ``per_s`` tokens a second, at most ``burst`` saved up."""

    def __init__(
        self, per_s: float, burst: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.per_s, self.burst = per_s, burst
        self.clock = clock
        self.tokens = burst
        self.at = clock()

    def _refill(self) -> None:
        now = self.clock()
        self.tokens = min(self.burst, self.tokens + (now - self.at) * self.per_s)
        self.at = now

    def take(self, n: float) -> bool:
        self._refill()
        if self.tokens < n:
            return False
        self.tokens -= n
        return True

    def wait_s(self, n: float) -> float:
        """How long until ``n`` could be taken (0: now); takes nothing."""
        self._refill()
        return max(0.0, (n - self.tokens) / self.per_s)

    def give_back(self, n: float) -> None:
        """``n`` taken for work that was then not done."""
        self.tokens = min(self.burst, self.tokens + n)


class Slots:
    """Heavy work (a store of evidence, a whole file transcribed) bounded per user and for the
    server: one at a time per user and ``total`` at once; beyond either, ``BusyError`` at once
    (a 429) rather than a request thread waiting. ``one`` and ``many`` (``{total}`` in it: the
    bound) name the work in those errors."""

    def __init__(
        self,
        total: int,
        one: str = "transcribing a file",
        many: str = "transcribing {total} files",
    ) -> None:
        self.total = total
        self.one, self.many = one, many
        self._lock = threading.Lock()
        self._busy: set[str] = set()

    @contextlib.contextmanager
    def taken(self, owner: str) -> Iterator[None]:
        with self._lock:
            if owner in self._busy:
                raise BusyError(f"this user is {self.one} already; send the next after it")
            if len(self._busy) >= self.total:
                many = self.many.format(total=self.total)
                raise BusyError(f"the server is {many}; try again soon")
            self._busy.add(owner)
        try:
            yield
        finally:
            with self._lock:
                self._busy.discard(owner)
