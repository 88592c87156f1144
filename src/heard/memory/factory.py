"""One user's memory, built in one place for every entry point, and its one write path.

``build_memory`` assembles what a recall needs - the user's stored evidence, their page
workspace, the embedder and the LLM provider the settings name, the recall options - the
same way for ``heard memory``, ``heard live``, the server (REST and the live socket) and
the benchmarks, so a question ranks the same wherever it is asked. ``remember`` is the one
way evidence is added: stored in one transaction, then added to the live index under the
lock every reader of that index holds.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from heard.errors import StoppingError
from heard.llm.provider import Provider
from heard.memory.dense import Embedder, cached_vectors
from heard.memory.evidence import EvidenceIndex, embedded_text
from heard.memory.recall import MemoryRecall, RecallOptions, page_texts
from heard.memory.utterances import load_index, store_evidence
from heard.memory.workspace import Workspace, load_workspace
from heard.settings import Settings
from heard.store.database import Database
from heard.utterance import Evidence

__all__ = ["MemoryParts", "build_memory", "remember", "workspace_at"]


class MemoryParts:
    """What a user's memory is made with, beside their data: chosen once per process."""

    def __init__(
        self,
        *,
        embedder: Embedder | None = None,
        provider: Provider | None = None,
        options: RecallOptions | None = None,
    ) -> None:
        self.embedder = embedder
        self.provider = provider
        self.options = options or RecallOptions()

    @classmethod
    def from_settings(cls, chosen: Settings, *, dense: bool | None = None) -> MemoryParts:
        """The embedder and provider ``chosen`` names (``HEARD_DENSE``, ``HEARD_EMBEDDER``,
        ``HEARD_LANGUAGE``, ``HEARD_LLM_*``); ``dense`` overrides the first."""
        from heard.llm.providers import provider_from_env
        from heard.memory.dense import default_embedder

        enabled = chosen.dense if dense is None else dense
        embedder = default_embedder(enabled, chosen.embedder, chosen.language)
        return cls(embedder=embedder, provider=provider_from_env(chosen))


def workspace_at(folder: Path | None) -> Workspace | None:
    """The page workspace in ``folder``, or None when it holds no pages folder."""
    if folder is None or not (folder / "pages").is_dir():
        return None
    return load_workspace(folder)


def build_memory(
    db: Database | None,
    parts: MemoryParts,
    *,
    owner: str = "",
    workspace: Workspace | Path | None = None,
    evidence: EvidenceIndex | None = None,
) -> MemoryRecall:
    """``owner``'s memory: their evidence in ``db`` (none without a store; or ``evidence``,
    an index already loaded) and ``workspace`` (a folder, or one loaded already), recalled
    with ``parts``."""
    pages = workspace_at(workspace) if isinstance(workspace, Path) else workspace
    if evidence is None and db is not None and db.has_schema():
        evidence = load_index(db, parts.embedder, owner=owner)
    embedder, vectors = parts.embedder, None
    if embedder is not None and pages is not None and (texts := page_texts(pages)):
        # encoded once per page text and kept beside the workspace
        folder = pages.root / ".vectors" if pages.root is not None else None
        vectors = cached_vectors(embedder, texts, folder)
    return MemoryRecall(
        pages, evidence, provider=parts.provider, options=parts.options, embedder=embedder,
        page_vectors=vectors,
    )  # fmt: skip


def remember(
    db: Database | None,
    memory: MemoryRecall,
    items: Sequence[Evidence],
    *,
    lock: threading.Lock,
    owner: str = "",
    source: str = "utterances",
    stop: threading.Event | None = None,
) -> int:
    """Store ``items`` (all or none, with their vectors when the memory has an embedder) and
    add them to ``memory``'s evidence. Once ``stop`` is set (the process is shutting down)
    the encoding ends after its current batch with ``StoppingError``, nothing stored.

    The encoding (seconds, for long texts) and the store's transaction run outside ``lock``:
    only adding to the index holds it, so recalls of the same memory go on meanwhile. Items
    another reader caught up with in between (from the store) are not added twice."""
    embedder = memory.embedder
    vectors = None
    if embedder and items:
        vectors = embed_unless_stopped(embedder, [embedded_text(u) for u in items], stop)
    if db is not None:
        store_evidence(db, items, embedder, source=source, owner=owner, vectors=vectors)
    index = memory.evidence
    if index is None:
        return len(items)
    with lock:
        fresh = [i for i, u in enumerate(items) if u.id not in index]
        rows = vectors[fresh] if vectors is not None and index.embedder is not None else None
        index.extend((items[i] for i in fresh), rows)
    return len(items)


STOP_CHECK_TEXTS = 32
"""How many texts are encoded between two looks at ``stop`` (the dense embedder's batch)."""


def embed_unless_stopped(
    embedder: Embedder, texts: list[str], stop: threading.Event | None
) -> np.ndarray:
    """``embedder.embed(texts)``, a batch at a time while ``stop`` is not set."""
    if stop is None:
        return embedder.embed(texts)
    parts = []
    for start in range(0, len(texts), STOP_CHECK_TEXTS):
        if stop.is_set():
            raise StoppingError("the server is shutting down: nothing was stored, send it again")
        parts.append(embedder.embed(texts[start : start + STOP_CHECK_TEXTS]))
    return np.concatenate(parts)
