"""Each user's memory as a long-running process holds it: loaded on first use, kept in step
with what the store holds (another process may write it too), and a user's stores of
evidence bounded (one at a time, ``heard.limits.EVIDENCE_BYTES_PER_S`` of text).

The server's REST routes and live conversations share one ``Memories``; so may any other
front end that serves many users from one process.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from heard import limits
from heard.errors import BusyError
from heard.memory.evidence import Evidence, EvidenceIndex
from heard.memory.factory import MemoryParts, build_memory, remember
from heard.memory.recall import MemoryRecall
from heard.memory.utterances import load_evidence
from heard.store.database import Database
from heard.store.evidence import memory_changed, memory_version, stored_ids

__all__ = ["REMAKE_SHARE", "Memories", "UserMemory"]

REMAKE_SHARE = 0.5
"""Once this share of a user's evidence index is forgotten, it is made again (what
is forgotten still weighs in the BM25 statistics of what is not)."""


@dataclass
class UserMemory:
    index: EvidenceIndex
    recall: MemoryRecall
    """Over the user's pages and ``index``; rebuilt when a page changes."""
    lock: threading.Lock = field(default_factory=threading.Lock)
    catching_up: threading.Lock = field(default_factory=threading.Lock)
    """One catch-up at a time: two that compared the store at different moments must not
    apply their answers in the other order (an item deleted in between held again)."""
    version: int = 0
    """The user's change count in the store when this memory last caught up with it."""


class Memories:
    """Each user's memory, loaded on first use and kept in step with what is stored: one
    evidence index and one recall loop (with its page index) per user, shared by REST
    recalls and live conversations."""

    def __init__(
        self,
        db: Database,
        workspace_of: Callable[[str], Path],
        parts: MemoryParts | None = None,
        stopping: threading.Event | None = None,
    ) -> None:
        self.db = db
        self.stopping = stopping
        self.workspace_of = workspace_of
        self.parts = parts or MemoryParts()
        self._by_owner: dict[str, UserMemory] = {}
        self._lock = threading.Lock()
        self._building: dict[str, threading.Lock] = {}
        self._storing = limits.Slots(total=2**31, one="storing evidence")
        """One store per user at a time."""
        self._budget: dict[str, limits.Bucket] = {}
        """Bytes of evidence text the user may still store."""

    def of(self, owner: str) -> UserMemory:
        with self._lock:
            memory = self._by_owner.get(owner)
            building = self._building.setdefault(owner, threading.Lock())
        if memory is not None:
            return memory
        with building:  # one build per user; other users' memories are not held up
            with self._lock:
                memory = self._by_owner.get(owner)
            if memory is None:
                memory = self._build(owner)
                with self._lock:
                    self._by_owner[owner] = memory
            return memory

    def _build(self, owner: str) -> UserMemory:
        """The user's memory as stored now, made from scratch."""
        version = memory_version(self.db, owner)  # read first: later changes show
        recall = build_memory(self.db, self.parts, owner=owner, workspace=self.workspace_of(owner))
        if recall.evidence is None:
            recall.evidence = EvidenceIndex(self.parts.embedder)
        return UserMemory(recall.evidence, recall, version=version)

    def current(self, owner: str) -> UserMemory:
        """The user's memory, caught up with what other processes (a second server on the
        same database) stored or changed: one query when nothing did."""
        memory = self.of(owner)
        if memory_version(self.db, owner) == memory.version:
            return memory
        with memory.catching_up:
            version = memory_version(self.db, owner)  # read first: later changes show
            if version <= memory.version:  # another caller caught up meanwhile
                return memory
            # evidence dropped or replaced (a meeting deleted, rebuilt or renamed) is
            # forgotten by the index, and what is new added: a change costs what it changed
            # (and a read of the ids), not a load of the whole memory: 50,000 of them took a
            # second of the interpreter lock
            stored = stored_ids(self.db, owner)
            held = memory.index.ids()
            gone = held - stored
            fresh = stored - held
            with memory.lock:
                memory.index.forget(gone)
                new, vectors = load_evidence(
                    self.db, memory.index.embedder, owner=owner, only=fresh - memory.index.ids()
                )
                new = [e for e in new if e.id not in memory.index]
                memory.index.extend(new, vectors)
            self._rebuild_pages(owner, memory)
            memory.version = version
        if memory.index.forgotten >= REMAKE_SHARE:
            return self._remade(owner, memory)
        return memory

    def _remade(self, owner: str, memory: UserMemory) -> UserMemory:
        """The user's memory made again from the store, once most of its index is forgotten:
        one remake per user at a time (a caller that finds one under way reads the memory as
        it is), which takes the old one's place once made."""
        with self._lock:
            building = self._building.setdefault(owner, threading.Lock())
        if not building.acquire(blocking=False):
            return memory
        try:
            fresh = self._build(owner)
            with self._lock:
                self._by_owner[owner] = fresh
            return fresh
        finally:
            building.release()

    def pages_changed(self, owner: str) -> None:
        """A page of the user's was written or deleted here."""
        memory = self.of(owner)
        version = memory_changed(self.db, owner)
        self._rebuild_pages(owner, memory)
        self._caught_up(memory, version)

    def _rebuild_pages(self, owner: str, memory: UserMemory) -> None:
        recall = build_memory(
            self.db, self.parts, owner=owner, workspace=self.workspace_of(owner),
            evidence=memory.index,
        )  # fmt: skip
        with memory.lock:
            memory.recall = recall

    @staticmethod
    def _caught_up(memory: UserMemory, version: int) -> None:
        """After a change of this process's own: caught up, unless another came between."""
        if version == memory.version + 1:
            memory.version = version

    def store(self, owner: str, items: list[Evidence]) -> int:
        """Store ``items`` for ``owner`` and add them to their memory. One store per user at a
        time, and ``limits.EVIDENCE_BYTES_PER_S`` of text: beyond either, ``BusyError``
        at once (a 429), so one user's uploads never queue on the request threads."""
        size = sum(len(u.text.encode("utf-8")) for u in items)
        with self._lock:
            budget = self._budget.setdefault(
                owner, limits.Bucket(limits.EVIDENCE_BYTES_PER_S, limits.EVIDENCE_BURST)
            )
        with self._storing.taken(owner):
            if not budget.take(size):
                wait_s = (size - budget.tokens) / budget.per_s
                raise BusyError(
                    f"over {limits.EVIDENCE_BYTES_PER_S * 60 // 2**20} MiB of evidence a minute; "
                    f"wait {wait_s:.0f} s",
                    retry_after_s=wait_s,
                )
            memory = self.of(owner)
            try:
                count = remember(
                    self.db, memory.recall, items, lock=memory.lock, owner=owner,
                    stop=self.stopping,
                )  # fmt: skip
            except BaseException:  # nothing was stored (an id taken, the store down): not spent
                budget.give_back(size)
                raise
            self._caught_up(memory, memory_version(self.db, owner))
            return count
