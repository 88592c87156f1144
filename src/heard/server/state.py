"""What a running server holds: its settings (``ServerSettings``, what ``heard serve`` was
told) and the parts every request shares (``ServerState``: the users' memories, the meeting
runner, the uploads, the queue of files to transcribe, each user's share of the threads and
the live sockets' quotas).

``create_app`` makes one ``ServerState`` and keeps it on the app; routes take it with
``heard.server.deps.State``, the live sockets with ``state_of``.
"""

from __future__ import annotations

import secrets
import threading
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path

from fastapi import FastAPI

from heard.asr.microphone import RecognizerFactory, Recognizers, shared_whisper
from heard.asr.streaming import SpareRule, StreamOptions
from heard.asr.transcriber import Transcriber
from heard.asr.whisper import WhisperOptions
from heard.limits import MAX_TRACK_S, USER_STORAGE_BYTES
from heard.meetings.runner import MeetingRunner
from heard.meetings.uploads import LOCAL_FOLDER, Uploads
from heard.memory.factory import MemoryParts
from heard.memory.users import Memories
from heard.server.quotas import LIVE_AUDIO_X, AuthFailures, FairQueue, Quota
from heard.server.shares import TokenChecks, UserShares
from heard.store.database import Database
from heard.work import FairPool

__all__ = ["ServerSettings", "ServerState", "state_of"]


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
    spare: SpareRule = field(default_factory=SpareRule)
    """What each live stream spends on its reading while decoding has CPU to spare (off by
    default; ``heard serve --spare-cpu wide``)."""
    max_track_s: float = MAX_TRACK_S
    """The longest upload a track takes (longer: a 413 before it is decoded)."""
    user_storage_bytes: int = USER_STORAGE_BYTES
    """The audio one user may keep in uploaded tracks (0: no limit): past it, a 507."""
    live_audio_x: float = LIVE_AUDIO_X
    """The audio one token's live sockets may send together, in channels at real time (each
    channel of a stream counts; ``heard.server.quotas``)."""
    resume: bool = True
    """Resume the meetings whose transcription a process that is gone left off, at start-up
    and whenever another server's lease runs out (in this process with a ``transcriber``, or
    on the workers with ``queue``); either way their tracks are taken back from the dead
    process and accept uploads again."""
    lease_s: float = 30.0
    """The lease this server keeps on its runs in the store (``heard.store.leases``): another
    server takes over the runs of one silent this long; this one takes over theirs."""
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

    def live_recognizers(
        self, whisper: WhisperOptions, stream: StreamOptions | None = None
    ) -> RecognizerFactory:
        """The recognizers of one live socket's streams, with this server's spare rule."""
        return self.recognizers(whisper, replace(stream or StreamOptions(), spare=self.spare))

    def workspace(self, owner: str) -> Path:
        return (self.workspaces or self.uploads.parent / "workspaces") / (owner or LOCAL_FOLDER)


class LiveCaptions:
    """What live calls' participants are saying, per meeting, for its events stream: the last
    ``KEPT`` captions of each of the last ``MEETINGS`` meetings with any (in memory only; the
    stored phrases are the record)."""

    KEPT = 2000
    MEETINGS = 64

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_meeting: dict[uuid.UUID, tuple[int, list[dict[str, object]]]] = {}

    def add(self, meeting_id: uuid.UUID, caption: dict[str, object]) -> None:
        with self._lock:
            dropped, kept = self._by_meeting.pop(meeting_id, (0, []))
            kept.append(caption)
            if len(kept) > self.KEPT:
                dropped, kept = dropped + len(kept) - self.KEPT, kept[-self.KEPT :]
            self._by_meeting[meeting_id] = (dropped, kept)  # the newest last
            while len(self._by_meeting) > self.MEETINGS:
                del self._by_meeting[next(iter(self._by_meeting))]

    def since(self, meeting_id: uuid.UUID, seen: int) -> tuple[list[dict[str, object]], int]:
        """The captions after the first ``seen`` of the meeting, and how many there are now."""
        with self._lock:
            dropped, kept = self._by_meeting.get(meeting_id, (0, []))
            return kept[max(0, seen - dropped) :], dropped + len(kept)


@dataclass
class ServerState:
    """The parts every request of one running server shares."""

    settings: ServerSettings
    memories: Memories
    """Each user's memory, shared by REST recalls, searches and live conversations."""
    runs: MeetingRunner
    """The meetings this server transcribes (or sends to the workers)."""
    uploads: Uploads
    """The users' uploaded audio and their storage."""
    transcribing: FairQueue
    """Whole files waiting to be transcribed (the OpenAI and Deepgram routes)."""
    work: FairPool
    """The blocking calls of asynchronous routes and live sockets, a few of each user's at
    once (``heard.server.shares``)."""
    tokens: TokenChecks
    """Every token check: requests, live finals, event streams."""
    shares: UserShares = field(default_factory=UserShares)
    """Each user's share of the request threads synchronous routes run on."""
    event_streams: dict[str, int] = field(default_factory=dict)
    """How many progress streams each user holds open (``heard.server.progress``)."""
    live_quotas: dict[str, Quota] = field(default_factory=dict)
    """What each token may still send over its live connections."""
    failures: AuthFailures = field(default_factory=AuthFailures)
    """The bad tokens each client address sent, over requests and sockets."""
    captions: LiveCaptions = field(default_factory=LiveCaptions)
    """Live calls' captions, for their meetings' events streams."""


def state_of(app: FastAPI) -> ServerState:
    """The state ``create_app`` kept on ``app``."""
    state = app.state.heard
    assert isinstance(state, ServerState)
    return state
