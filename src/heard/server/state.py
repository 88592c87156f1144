"""What a running server holds: its settings and each user's memory.

Shared by the REST app (``heard.server.app``) and the live socket (``heard.server.live``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from heard.asr.transcriber import Transcriber
from heard.memory.evidence import EvidenceIndex
from heard.memory.recall import MemoryRecall
from heard.memory.utterances import as_evidence, load_index
from heard.memory.workspace import load_workspace
from heard.store.database import Database
from heard.store.evidence import StoredUtterance, store_utterances

__all__ = ["Memories", "ServerSettings", "UserMemory"]


@dataclass
class ServerSettings:
    db: Database
    uploads: Path
    """Uploaded audio, one folder per user."""
    transcriber: Transcriber | None = None
    """What transcribes a meeting's tracks when it is run in this process; None: runs are
    accepted but nothing is transcribed here (an API-only server, or ``queue``)."""
    workspaces: Path | None = None
    """Memory pages, one workspace per user (default: beside ``uploads``)."""
    queue: bool = False
    """Send meetings to Celery workers ($HEARD_BROKER_URL) instead of transcribing in-process."""

    def workspace(self, owner: str) -> Path:
        return (self.workspaces or self.uploads.parent / "workspaces") / owner


@dataclass
class UserMemory:
    index: EvidenceIndex
    recall: MemoryRecall
    """Over the user's pages and ``index``; rebuilt when a page changes."""
    lock: threading.Lock = field(default_factory=threading.Lock)


class Memories:
    """Each user's memory, loaded on first use and kept in step with what is stored: one
    evidence index and one recall loop (with its page index) per user, shared by REST
    recalls and live conversations."""

    def __init__(self, db: Database, workspace_of: Callable[[str], Path]) -> None:
        self.db = db
        self.workspace_of = workspace_of
        self._by_owner: dict[str, UserMemory] = {}
        self._lock = threading.Lock()

    def _recall(self, owner: str, index: EvidenceIndex) -> MemoryRecall:
        folder = self.workspace_of(owner)
        workspace = load_workspace(folder) if (folder / "pages").is_dir() else None
        return MemoryRecall(workspace, index)

    def of(self, owner: str) -> UserMemory:
        with self._lock:
            memory = self._by_owner.get(owner)
            if memory is None:
                index = load_index(self.db, owner=owner)
                memory = UserMemory(index, self._recall(owner, index))
                self._by_owner[owner] = memory
            return memory

    def pages_changed(self, owner: str) -> None:
        memory = self.of(owner)
        recall = self._recall(owner, memory.index)
        with memory.lock:
            memory.recall = recall

    def store(self, owner: str, items: list[StoredUtterance]) -> int:
        memory = self.of(owner)
        with memory.lock:
            count = store_utterances(self.db, items, source="utterances", owner=owner)
            memory.index.extend(as_evidence(u) for u in items)
        return count
