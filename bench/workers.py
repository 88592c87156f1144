"""Meetings per minute on Celery workers against the in-process pipeline, same input, same run.

Needs Redis and PostgreSQL at the test URLs (``HEARD_TEST_DATABASE_URL``,
``HEARD_TEST_REDIS_URL``); ``python tools/services.py -- python bench/workers.py`` provides
both, as the test command does. Each round uses its own PostgreSQL schema and Redis queue.

* Throughput: ``--meetings`` copies of the bundled three-person meeting (about 32 s
  of audio each) transcribed with faster-whisper tiny.en: in-process
  (``run_pipeline`` one meeting after another), then with 1 and 2 workers
  (``heard worker`` as a user starts it: the real faster-whisper transcriber, which each pool
  process loads after Celery forks it; one process each, started and warmed up before the
  clock starts).
* Task overhead per track: 40 meetings x 3 tracks whose transcriber returns at once
  (``tests.worker_fakes``), one worker, against ``run_pipeline`` on the same.

Usage: python tools/services.py -- python bench/workers.py [--meetings 4] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import create_engine, text

from heard.asr.whisper import FasterWhisperTranscriber
from heard.meetings import celery_app, run_pipeline
from heard.samples import sample_meeting
from heard.settings import Settings
from heard.store.database import Database
from heard.store.meetings import TrackSpec, create_meeting
from heard.store.models import MeetingStatus
from heard.store.views import get_meeting

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tools")]
from tests.worker_fakes import RoutingTranscriber  # noqa: E402

from services import database_url, redis_url  # noqa: E402

POSTGRES = database_url()
REDIS = redis_url()


@contextmanager
def fresh_store() -> Iterator[tuple[str, Database]]:
    schema = f"heard_bench_{uuid.uuid4().hex[:10]}"
    admin = create_engine(POSTGRES, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    url = f"{POSTGRES}?options=-csearch_path%3D{schema}"
    db = Database(url)
    db.migrate()
    try:
        yield url, db
    finally:
        db.dispose()
        with admin.connect() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


def real_meetings(db: Database, n: int) -> list[uuid.UUID]:
    m = sample_meeting()
    specs = [TrackSpec(who, str(path), offset) for who, path, offset in m.tracks]
    return [create_meeting(db, title=f"{m.title} {i}", tracks=specs) for i in range(n)]


def fake_meetings(db: Database, n: int) -> list[uuid.UUID]:
    return [
        create_meeting(
            db,
            title=f"fake {i}",
            tracks=[
                TrackSpec("a", f"fake://a{i}/3"),
                TrackSpec("b", f"fake://b{i}/2", 1.0),
                TrackSpec("c", f"fake://c{i}/1", 5.0),
            ],
        )
        for i in range(n)
    ]


def wait_done(db: Database, ids: list[uuid.UUID], timeout_s: float = 900) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if all(get_meeting(db, m).status is not MeetingStatus.PENDING for m in ids):
            return
        time.sleep(0.1)
    raise SystemExit("workers did not finish in time")


@contextmanager
def workers(count: int, db_url: str, queue: str, logs: Path, *, fake: bool) -> Iterator[None]:
    """``count`` ``heard worker`` processes; with ``fake``, transcribing through
    ``tests.worker_fakes`` (tracks that return at once), else as users run them."""
    env = {
        **os.environ,
        "HEARD_BROKER_URL": REDIS,
        "HEARD_QUEUE": queue,
        "HEARD_DATABASE_URL": db_url,
        "HEARD_ASR_THREADS": str(max(1, (os.cpu_count() or 2) // count)),
    }
    if fake:
        env |= {"HEARD_TRANSCRIBER": "tests.worker_fakes:routing", "PYTHONPATH": str(REPO)}
    procs = []
    for i in range(count):
        log = logs / f"{queue}-{i}.log"
        with log.open("wb") as f:
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-m", "heard", "worker", "--loglevel", "INFO"],
                    env=env,
                    cwd=REPO,
                    stdout=f,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )
    deadline = time.monotonic() + 60
    while not all("ready" in (logs / f"{queue}-{i}.log").read_text() for i in range(count)):
        if time.monotonic() > deadline:
            raise SystemExit("workers did not start")
        time.sleep(0.2)
    try:
        yield
    finally:
        for p in procs:
            os.killpg(p.pid, signal.SIGTERM)
        for p in procs:
            p.wait(timeout=30)


def on_workers(count: int, make: str, n: int, logs: Path) -> float:
    with fresh_store() as (url, db):
        ids = real_meetings(db, n) if make == "real" else fake_meetings(db, n)
        queue = f"heard-bench-{uuid.uuid4().hex[:8]}"
        celery_app.configure(Settings(database_url=url, broker_url=REDIS, queue=queue))
        with workers(count, url, queue, logs, fake=make != "real"):
            if make == "real":  # each worker loads its model before the clock starts
                warm = [
                    create_meeting(
                        db,
                        title="warm-up",
                        tracks=[TrackSpec("w", str(sample_meeting().tracks[2][1]))],
                    )
                    for _ in range(count)
                ]
                for mid in warm:
                    celery_app.enqueue_meeting(db, mid)
                wait_done(db, warm)
            started = time.perf_counter()
            for mid in ids:
                celery_app.enqueue_meeting(db, mid)
            wait_done(db, ids)
            return time.perf_counter() - started


def in_process(make: str, n: int) -> float:
    transcriber = FasterWhisperTranscriber() if make == "real" else RoutingTranscriber()
    with fresh_store() as (_, db):
        ids = real_meetings(db, n) if make == "real" else fake_meetings(db, n)
        if make == "real":
            transcriber.transcribe(sample_meeting().tracks[0][1])  # model loaded before timing
        started = time.perf_counter()
        for mid in ids:
            run_pipeline(mid, db=db, transcriber=transcriber)
        return time.perf_counter() - started


def main(argv: list[str] | None = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--meetings", type=int, default=4)
    parser.add_argument("--overhead-meetings", type=int, default=40)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    n = args.meetings
    with tempfile.TemporaryDirectory() as tmp:
        logs = Path(tmp)
        t_in = in_process("real", n)
        t_1 = on_workers(1, "real", n, logs)
        t_2 = on_workers(2, "real", n, logs)
        k = args.overhead_meetings
        f_in = in_process("fake", k)
        f_1 = on_workers(1, "fake", k, logs)
    per_min = {
        name: round(n / t * 60, 2)
        for name, t in (("in_process", t_in), ("1_worker", t_1), ("2_workers", t_2))
    }
    result: dict[str, object] = {
        "meetings": n,
        "seconds": {
            "in_process": round(t_in, 2),
            "1_worker": round(t_1, 2),
            "2_workers": round(t_2, 2),
        },
        "meetings_per_minute": per_min,
        "speedup_2_workers_vs_in_process": round(t_in / t_2, 2),
        "overhead_per_track_ms": round((f_1 - f_in) / (3 * k) * 1000, 1),
        "overhead_run": {
            "meetings": k,
            "tracks": 3 * k,
            "in_process_s": round(f_in, 2),
            "1_worker_s": round(f_1, 2),
        },
    }
    celery_app.configure()
    if args.json:
        print(json.dumps(result, indent=1))
        return result
    print(f"{n} sample meetings (3 tracks, ~32 s audio each), faster-whisper tiny.en on 2 cores:")
    for name, t in (("in-process", t_in), ("1 worker", t_1), ("2 workers", t_2)):
        print(f"  {name:<11} {t:7.1f} s  {n / t * 60:6.2f} meetings/min")
    print(f"  2 workers vs in-process: {t_in / t_2:.2f}x")
    print(
        f"task overhead per track: {result['overhead_per_track_ms']} ms "
        f"({3 * k} instant tracks: {f_1:.2f} s on 1 worker vs {f_in:.2f} s in-process)"
    )
    return result


if __name__ == "__main__":
    main()
