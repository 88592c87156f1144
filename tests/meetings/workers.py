"""Celery workers for the meetings tests: processes of ``heard worker`` and their queue
(the fixtures that hold them are in conftest.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
import wave
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import numpy as np
import pytest
import redis
from tests.conftest import AUDIO, REPO

from heard.asr.audio import SAMPLE_RATE, load_audio
from heard.store.database import Database
from heard.store.models import MeetingStatus
from heard.store.views import get_meeting


@contextmanager
def queued(db_url: str, redis_url: str, **values: str) -> Iterator[dict[str, str]]:
    """What workers and the commands that queue to them read: a queue of their own on the
    broker (emptied afterwards), the store at ``db_url``, and ``values``."""
    queue = f"heard-test-{uuid.uuid4().hex[:10]}"
    try:
        yield {"HEARD_BROKER_URL": redis_url, "HEARD_QUEUE": queue, "HEARD_DATABASE_URL": db_url,
               **values}  # fmt: skip
    finally:
        with redis.Redis.from_url(redis_url) as client:
            for key in client.scan_iter(f"*{queue}*"):
                client.delete(key)


class Workers:
    def __init__(self, env: dict[str, str], logs: Path) -> None:
        self.env, self.logs = env, logs
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self) -> subprocess.Popen[bytes]:
        with (self.logs / f"worker{len(self.procs)}.log").open("wb") as log:
            return self._spawn(log)

    def _spawn(self, log: IO[bytes]) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(
            [sys.executable, "-m", "heard", "worker", "--loglevel", "INFO"],
            env=self.env, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        self.procs.append(proc)
        return proc

    def kill9(self, proc: subprocess.Popen[bytes]) -> None:
        """The machine running this worker dies: every process of it, at once."""
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs:  # a busy worker lets its tasks run HEARD_WORKER_STOP_S (10 s)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()

    def log_tail(self) -> str:
        return "\n".join(
            p.read_text(errors="replace")[-1500:] for p in self.logs.glob("worker*.log")
        )


def wait_for(predicate: Callable[[], bool], timeout_s: float, what: str, workers: Workers) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.3)
    pytest.fail(f"timed out after {timeout_s} s waiting for {what}\n{workers.log_tail()}")


def all_done(db: Database, ids: list[uuid.UUID]) -> Callable[[], bool]:
    return lambda: all(get_meeting(db, m).status is not MeetingStatus.PENDING for m in ids)


@contextmanager
def migrated(url: str) -> Iterator[Database]:
    """The store at ``url``, its tables made, closed at the end."""
    database = Database(url)
    database.migrate()
    try:
        yield database
    finally:
        database.dispose()


def jfk_times(n: int, path: Path) -> Path:
    """JFK said ``n`` times in a row, a second apart: a track that keeps a worker busy."""
    jfk = load_audio(AUDIO / "jfk.flac")
    gap = np.zeros(SAMPLE_RATE, dtype=np.float32)
    samples = np.concatenate([part for _ in range(n) for part in (jfk, gap)])
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(SAMPLE_RATE)
        out.writeframes((np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes())
    return path
