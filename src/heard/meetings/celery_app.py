"""The meeting pipeline on Celery workers: one task per track, one per meeting.

``transcribe_track`` claims a track (compare-and-set ``pending -> transcribing``),
transcribes it and records the outcome, then asks for ``build_meeting`` once
every track of the meeting is finished. ``build_meeting`` replaces the meeting's
phrases in one transaction holding the meeting row's lock (``SELECT ... FOR
UPDATE`` on PostgreSQL), so two workers building the same meeting serialize and
the second rewrites the same phrases.

Why the task bodies are safe to run twice or at once:

* tasks are acknowledged late (after they finish) and rejected when their worker
  dies, so a killed worker's task is delivered again;
* a redelivered ``transcribe_track`` finds its track ``done`` (nothing to do), or
  ``transcribing`` under a claim that may still be alive: it recovers the track at once
  when the claim's process is a dead one of this host, else retries until the claim is
  older than ``stuck_after_s`` - the tasks' hard time limit, so no live worker can hold it
  that long - then recovers the track and claims it again;
* the claim is a compare-and-set, so of two deliveries only one transcribes; the
  outcome is written only if the claim is still the current one.

Row locks were chosen over a lease table: the track status already is a lease
(its ``updated_at`` plus the time limit), and the build's one-row lock is held for
milliseconds, so there is nothing to gain from a separate lease protocol.
"""

from __future__ import annotations

import uuid
from functools import cache
from typing import Any

from heard.errors import MissingDependencyError

try:
    from celery import Celery, Task
except ImportError as _e:  # the plain install has no Celery: --queue and `heard worker` say so
    raise MissingDependencyError(
        f"Celery workers need heard[celery]: pip install '.[celery]' in heard's clone ({_e})"
    ) from None

from heard.asr.transcribers import load_transcriber
from heard.asr.whisper import WhisperOptions
from heard.errors import BrokerError, NotFoundError
from heard.meetings.steps import (
    PipelineOptions,
    build_meeting,
    claim_track,
    recover_stuck,
    transcribe_claimed,
)
from heard.settings import Settings, default_database_url, settings
from heard.store.database import Database
from heard.store.models import TrackStatus, utc_now
from heard.store.tracks import meeting_finished, open_track_ids, track_status

__all__ = [
    "app",
    "build_meeting_task",
    "check_broker",
    "configure",
    "enqueue_meeting",
    "transcribe_track_task",
]

MAX_BACKOFF_S = 600.0
"""Longest wait between two looks at a track still recording."""


def configure(chosen: Settings | None = None) -> Celery:
    """Apply ``chosen`` settings (default: the environment's) to heard's Celery app."""
    s = chosen or settings()
    global _settings
    _settings = s
    time_limit_s = _options().stuck_after_s
    app.conf.update(
        broker_url=s.broker_url,
        task_default_queue=s.queue,
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_time_limit=time_limit_s,
        task_soft_time_limit=time_limit_s * 0.9,
        # Redis hands a dead worker's unacknowledged tasks to others once they are older
        # than the visibility timeout; scan for them every few seconds (kombu's default
        # scans every 100 s) so recovery is bounded by the timeout, not by the scan.
        broker_transport_options={
            "visibility_timeout": s.visibility_timeout_s,
            "unacked_restore_interval": max(1.0, min(10.0, s.visibility_timeout_s / 4)),
            "unacked_restore_throttle": 1,
        },
        # SIGTERM is a cold shutdown (heard worker sets REMAP_SIGTERM): tracks in hand get
        # this long to finish, then go back to the queue unacknowledged
        worker_soft_shutdown_timeout=s.worker_stop_s,
        broker_connection_retry_on_startup=True,
        task_ignore_result=True,
        worker_hijack_root_logger=False,
    )
    if _db.cache_info().currsize:
        _db().dispose()
        _db.cache_clear()
    return app


app = Celery("heard")
_settings = Settings()


@cache
def _db() -> Database:
    return Database(_settings.database_url or default_database_url())


def _options() -> PipelineOptions:
    return PipelineOptions.from_settings(_settings)


def _backoff(retries: int, first_s: float) -> float:
    return float(min(first_s * 2**retries, MAX_BACKOFF_S))


@app.task(bind=True, name="heard.transcribe_track", max_retries=None)
def transcribe_track_task(self: Task, track_id: str) -> str:
    db, options = _db(), _options()
    tid = uuid.UUID(track_id)
    try:
        meeting_id, status, updated_at = track_status(db, tid)
    except NotFoundError:
        return "gone"
    if status is TrackStatus.RECORDING:
        raise self.retry(countdown=_backoff(self.request.retries, options.retry_delay_s))
    if status is TrackStatus.TRANSCRIBING:
        now = utc_now()
        recover_stuck(db, meeting_id, now, options)
        status = track_status(db, tid)[1]
        if status is TrackStatus.TRANSCRIBING:
            # Someone holds it, alive or dead: look again when the claim would have expired.
            wait_s = options.stuck_after_s - (now - updated_at).total_seconds() + 1
            raise self.retry(countdown=max(1.0, wait_s))
    if status is TrackStatus.PENDING:
        claim = claim_track(db, tid, utc_now())
        if claim is not None:
            whisper = WhisperOptions.from_settings(_settings)
            # the model is loaded here, in the pool process, once (load_model keeps it), and
            # never in the worker's parent: CTranslate2's threads do not survive the fork
            transcriber = load_transcriber(_settings.transcriber, whisper)
            status = transcribe_claimed(db, claim, transcriber, utc_now, options)
            if status is TrackStatus.PENDING:  # a transient error; attempts remain
                raise self.retry(countdown=_backoff(self.request.retries, 5.0))
    if meeting_finished(db, meeting_id):
        build_meeting_task.delay(str(meeting_id))
    return str(status)


@app.task(name="heard.build_meeting")
def build_meeting_task(meeting_id: str) -> dict[str, Any]:
    result = build_meeting(_db(), uuid.UUID(meeting_id), _options())
    return {"built": result.built, "status": str(result.status), "phrases": result.phrases}


def check_broker(timeout_s: float = 3.0) -> None:
    """Raise ``BrokerError`` unless the broker answers within ``timeout_s``."""
    url = _settings.broker_url
    try:
        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=timeout_s)
    except Exception as e:  # noqa: BLE001 - kombu raises transport-specific errors
        raise BrokerError(f"cannot reach the broker at {url} ({e})") from None


def enqueue_meeting(db: Database, meeting_id: uuid.UUID) -> int:
    """Send a task for every unfinished track (or the build, if none); count the tasks."""
    open_tracks = open_track_ids(db, meeting_id)
    try:
        for track_id in open_tracks:
            transcribe_track_task.delay(str(track_id))
        if not open_tracks:
            build_meeting_task.delay(str(meeting_id))
    except Exception as e:  # noqa: BLE001 - kombu raises transport-specific errors
        raise BrokerError(f"cannot enqueue meeting {meeting_id}: {e}") from None
    return max(len(open_tracks), 1)


configure()
