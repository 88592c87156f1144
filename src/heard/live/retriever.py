"""The retriever a live conversation uses: heard.memory's recall loop and evidence index."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import replace

from heard.live.prepared import Retrieved
from heard.memory.evidence import Evidence, EvidenceIndex
from heard.memory.factory import remember
from heard.memory.recall import MemoryRecall
from heard.store.database import Database

__all__ = ["MemoryRetriever"]


class MemoryRetriever:
    """Recall pages and evidence; remember finals in the index (and in SQL when given a db).

    Lexical recall takes well under a millisecond and runs on the event loop; with an LLM
    provider or an embedder it runs in a worker thread (``in_thread``), so the loop keeps
    taking events. One lock keeps recall and remember from overlapping.
    """

    def __init__(
        self,
        recall: MemoryRecall,
        *,
        database: Database | None = None,
        session: str = "live",
        owner: str = "",
        in_thread: bool | None = None,
        lock: threading.Lock | None = None,
    ) -> None:
        if recall.evidence is None:
            recall.evidence = EvidenceIndex(recall.embedder)
        self.recall = recall
        self.evidence: EvidenceIndex = recall.evidence
        self.database = database
        self.session = session
        self.owner = owner
        slow = recall.provider is not None or self.evidence.embedder is not None
        self.in_thread = slow if in_thread is None else in_thread
        self._lock = lock or threading.Lock()
        """Shared with whoever else reads or writes the same index (the server's users)."""

    async def retrieve(self, query: str, sticky: tuple[str, ...]) -> Retrieved:
        if self.in_thread:
            return await asyncio.to_thread(self._retrieve, query, sticky)
        return self._retrieve(query, sticky)

    def _retrieve(self, query: str, sticky: tuple[str, ...]) -> Retrieved:
        with self._lock:
            result = self.recall.recall(query, sticky=sticky)
        return Retrieved(tuple(result.pages), tuple(result.evidence))

    async def remember(self, evidence: Evidence) -> None:
        if self.in_thread or self.database is not None:
            await asyncio.to_thread(self._remember, evidence)
        else:
            self._remember(evidence)

    def _remember(self, evidence: Evidence) -> None:
        utterance = replace(evidence, session=self.session)
        remember(self.database, self.recall, [utterance], lock=self._lock, owner=self.owner,
                 source=f"conversation {self.session}")  # fmt: skip
