"""Fakes of memory's seams: a retriever that answers with the query, an embedder with no
model."""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from heard.live.prepared import Retrieved
from heard.memory.evidence import Evidence, Recalled

__all__ = ["HashingEmbedder", "ScriptedRetriever"]


@dataclass
class ScriptedRetriever:
    """A memory that answers each query with the query itself: one page named after its last
    word and one evidence item holding it. A query containing a word of ``delays`` takes that
    long; one containing ``fail_on`` fails. Queries, cancelled queries and remembered
    evidence are recorded."""

    delays: dict[str, float] = field(default_factory=dict)
    fail_on: str | None = None
    queries: list[str] = field(default_factory=list)
    cancelled: list[str] = field(default_factory=list)
    remembered: list[Evidence] = field(default_factory=list)

    async def retrieve(self, query: str, sticky: tuple[str, ...]) -> Retrieved:
        self.queries.append(query)
        try:
            for word, delay in self.delays.items():
                if word in query:
                    await asyncio.sleep(delay)
        except asyncio.CancelledError:
            self.cancelled.append(query)
            raise
        if self.fail_on and self.fail_on in query:
            raise RuntimeError(f"index unavailable for {query!r}")
        return Retrieved(
            ("page-" + query.split()[-1].lower(),), (Recalled(query, "evidence", 1.0, query),)
        )

    async def remember(self, evidence: Evidence) -> None:
        self.remembered.append(evidence)


class HashingEmbedder:
    """Texts as L2-normalized bags of hashed words: texts sharing words are near, others are
    not, with no model to load. Deterministic across processes."""

    unrelated = 0.0
    weight = 0.9

    def __init__(self, dim: int = 256) -> None:
        self.dim = dim
        self.name = f"hashing-{dim}"
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        rows = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in re.findall(r"\w+", text.casefold()):
                digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
                rows[i, int.from_bytes(digest[:4], "little") % self.dim] += 1.0
            norm = float(np.linalg.norm(rows[i]))
            if norm:
                rows[i] /= norm
        return rows

    def embed_query(self, text: str) -> np.ndarray:
        row: np.ndarray = self.embed([text])[0]
        return row
