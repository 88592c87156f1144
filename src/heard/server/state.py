"""What a running server holds: its settings, each user's memory, and the meetings it
transcribes.

Shared by the REST app (``heard.server.app``) and the live socket (``heard.server.live``).
"""

from __future__ import annotations

import logging
import os
import secrets
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from heard.asr.audio import MAX_TRACK_S
from heard.asr.microphone import Recognizers, shared_whisper
from heard.asr.transcriber import Transcriber
from heard.asr.whisper import WhisperOptions
from heard.errors import BusyError
from heard.memory.evidence import Evidence, EvidenceIndex
from heard.memory.factory import MemoryParts, build_memory, remember
from heard.memory.recall import MemoryRecall
from heard.memory.utterances import load_evidence
from heard.pipeline.run import TrackProgress, run_pipeline
from heard.pipeline.steps import ClaimedTrack
from heard.server import quotas
from heard.store.database import Database
from heard.store.evidence import (
    memory_changed,
    memory_version,
    stored_ids,
)
from heard.store.models import TrackStatus

__all__ = ["Memories", "Runs", "ServerSettings", "UserMemory", "Watched"]

log = logging.getLogger("heard.server")


LOCAL_FOLDER = "local"
"""The folder of the local user (``--local``; owner "") among the users' (named by their ids)."""
USER_STORAGE_BYTES = 10 * 2**30
"""The audio one user may keep by default ($HEARD_USER_STORAGE_MB): 10 GiB, some 300 hours of
meetings at 64 kbit/s."""


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
    memory: MemoryParts = field(default_factory=MemoryParts)
    """The embedder, LLM provider and recall options every user's memory is built with
    (default: lexical, no LLM; ``heard serve`` passes the environment's)."""
    queue: bool = False
    """Send meetings to Celery workers ($HEARD_BROKER_URL) instead of transcribing in-process."""
    cors_origins: tuple[str, ...] = ()
    """Other web origins whose pages may call the API from a browser (none by default)."""
    whisper: WhisperOptions = field(default_factory=WhisperOptions)
    """The model, language and device the live socket recognizes audio with."""
    recognizers: Recognizers = shared_whisper
    """Makes the live sockets' streaming recognizers (default: faster-whisper on the process's
    shared decode service; ``heard.testing.ScriptedRecognizer`` for tests without a model)."""
    max_track_s: float = MAX_TRACK_S
    """The longest upload a track takes (longer: a 413 before it is decoded)."""
    user_storage_bytes: int = USER_STORAGE_BYTES
    """The audio one user may keep in uploaded tracks (0: no limit): past it, a 507."""
    resume: bool = True
    """At start-up, resume the meetings whose transcription a process that is gone left off
    (in this process with a ``transcriber``, or on the workers with ``queue``); either way
    their tracks are taken back from the dead process and accept uploads again."""
    link_secret: bytes = field(default_factory=lambda: secrets.token_bytes(32))
    """Signs the audio links of the meetings page (``heard.server.tickets``); servers behind
    one address need the same."""
    local: bool = False
    """A laptop's server (``heard serve --local``): a request from this machine without a
    token acts as the local user, whose meetings ``heard transcribe`` makes on the same
    database."""
    stopping: threading.Event = field(default_factory=threading.Event)
    """Set when the server begins to shut down: heavy work in flight (encoding evidence,
    transcribing a track) stops at its next batch or segment and gives its work back."""

    def workspace(self, owner: str) -> Path:
        return (self.workspaces or self.uploads.parent / "workspaces") / (owner or LOCAL_FOLDER)

    def folder(self, owner: str) -> Path:
        """Where ``owner``'s uploads are kept."""
        return self.uploads / (owner or LOCAL_FOLDER)


@dataclass
class UserMemory:
    index: EvidenceIndex
    recall: MemoryRecall
    """Over the user's pages and ``index``; rebuilt when a page changes."""
    lock: threading.Lock = field(default_factory=threading.Lock)
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
        self._storing = quotas.Slots(total=2**31, one="storing evidence")
        """One store per user at a time."""
        self._budget: dict[str, quotas.Bucket] = {}
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
        version = memory_version(self.db, owner)
        if version != memory.version and not memory.index.ids() <= stored_ids(self.db, owner):
            # evidence was forgotten or replaced (a meeting deleted or rebuilt): an index
            # only grows, so the user's memory is made again from the store, and takes the
            # old one's place once made (recalls meanwhile read the old one)
            fresh = self._build(owner)
            with self._lock:
                self._by_owner[owner] = fresh
            return fresh
        if version != memory.version:
            with memory.lock:
                new, vectors = load_evidence(
                    self.db, memory.index.embedder, owner=owner, skip=memory.index
                )
                memory.index.extend(new, vectors)
            self._rebuild_pages(owner, memory)
            memory.version = version
        return memory

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
        time, and ``quotas.EVIDENCE_BYTES_PER_S`` of text: beyond either, ``BusyError``
        at once (a 429), so one user's uploads never queue on the request threads."""
        size = sum(len(u.text.encode("utf-8")) for u in items)
        with self._lock:
            budget = self._budget.setdefault(
                owner, quotas.Bucket(quotas.EVIDENCE_BYTES_PER_S, quotas.EVIDENCE_BURST)
            )
        with self._storing.taken(owner):
            if not budget.take(size):
                wait_s = (size - budget.tokens) / budget.per_s
                raise BusyError(
                    f"over {quotas.EVIDENCE_BYTES_PER_S * 60 // 2**20} MiB of evidence a minute; "
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


class Watched(TrackProgress):
    """How far each track this process transcribes has come, for the pages' progress bars.
    A recording of several people goes through two passes (who spoke when, then the words);
    each pass counts for its share."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tracks: dict[uuid.UUID, tuple[int, int, float]] = {}
        """track id -> (passes in all, passes done, fraction of this pass)."""

    def started(self, track: ClaimedTrack) -> None:
        passes = 1 if track.speakers is None or track.diarization is not None else 2
        with self._lock:
            self._tracks[track.id] = (passes, 0, 0.0)

    def advanced(self, track: ClaimedTrack, done_s: float, total_s: float) -> None:
        fraction = min(1.0, done_s / total_s) if total_s > 0 else 0.0
        with self._lock:
            passes, done, before = self._tracks.get(track.id, (1, 0, 0.0))
            if fraction < before and done + 1 < passes:  # went back: the next pass began
                done += 1
            self._tracks[track.id] = (passes, done, fraction)

    def finished(self, track: ClaimedTrack, status: TrackStatus) -> None:
        with self._lock:
            self._tracks.pop(track.id, None)

    def fraction(self, track_id: uuid.UUID) -> float | None:
        """How much of the track is transcribed (None: this process is not on it)."""
        with self._lock:
            found = self._tracks.get(track_id)
        if found is None:
            return None
        passes, done, fraction = found
        return (done + fraction) / passes


class Runs:
    """The meetings this process transcribes (a server without ``--queue``): on threads of
    their own, ``workers`` of them (cores but one), never on the request threads, so a user
    who runs many meetings stalls no one's requests; each user has at most ``per_user``
    waiting or running (``BusyError``, a 429, beyond). A stop gives each track back."""

    def __init__(self, settings: ServerSettings, workers: int = 0, per_user: int = 4) -> None:
        self.settings = settings
        self.per_user = per_user
        self._threads = ThreadPoolExecutor(
            max_workers=workers or max(1, (os.cpu_count() or 2) - 1),
            thread_name_prefix="heard-run",
        )
        self._lock = threading.Lock()
        self._waiting: dict[str, set[uuid.UUID]] = {}
        self.progress = Watched()
        """How far the tracks being transcribed here have come."""

    def start(self, owner: str, meeting_id: uuid.UUID) -> None:
        """Transcribe the meeting soon; nothing new if it is waiting or running already."""
        with self._lock:
            mine = self._waiting.setdefault(owner, set())
            if meeting_id in mine:
                return
            if len(mine) >= self.per_user:
                raise BusyError(
                    f"this user has {self.per_user} meetings waiting or transcribing; run this "
                    "one when one of them is done"
                )
            mine.add(meeting_id)
        self._threads.submit(self._run, owner, meeting_id)

    def resume(self, meeting_id: uuid.UUID) -> None:
        """Finish a meeting a process that is gone left off (at start-up: no per-user bound)."""
        self._threads.submit(self._run, None, meeting_id)

    def _run(self, owner: str | None, meeting_id: uuid.UUID) -> None:
        try:
            if self.settings.transcriber is not None:
                run_pipeline(meeting_id, db=self.settings.db,
                             transcriber=self.settings.transcriber,
                             stop=self.settings.stopping, progress=self.progress)  # fmt: skip
        except Exception:  # a bug or the database: logged; the track's claim says the rest
            log.exception("meeting %s: the run stopped", meeting_id)
        finally:
            if owner is not None:
                with self._lock:
                    self._waiting[owner].discard(meeting_id)

    def close(self) -> None:
        """No more runs: those waiting are dropped (their tracks stay pending), those running
        are waited for; with ``stopping`` set, each gives its track back at its next segment."""
        self._threads.shutdown(wait=True, cancel_futures=True)
