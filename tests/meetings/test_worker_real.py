"""``heard worker`` as a user runs it (issue 71): the real tiny.en on real speech, no fake
transcriber, the default prefork pool, queued from ``heard transcribe --queue`` and from
``heard serve --queue``, read back from the store; and SIGTERM stops a busy worker in bounded
time, its track going to the next worker. tests/meetings/test_celery.py keeps the fakes for
kills, redelivery and races; this is their real twin.

A model loaded before Celery forks its pool hangs the first track a pool process transcribes
(CTranslate2's threads do not survive a fork): every test here then times out.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path

import httpx
import pytest
from tests.conftest import AUDIO, REPO
from tests.meetings.workers import Workers, all_done, jfk_times, migrated, queued, wait_for
from tests.reading import JFK as JFK_SAID
from tests.reading import assert_hears, assert_reads, normalize
from tests.server.threaded import free_port

from heard.store.database import Database
from heard.store.models import MeetingStatus, TrackStatus
from heard.store.views import get_meeting, meeting_phrases, track_states

pytestmark = pytest.mark.asr

JFK = AUDIO / "jfk.flac"


@pytest.fixture
def env(postgres_schema_url: str, redis_url: str) -> Iterator[dict[str, str]]:
    """What an operator sets for workers and the commands that queue to them; nothing else."""
    with queued(postgres_schema_url, redis_url) as values:
        yield {**{k: v for k, v in os.environ.items() if not k.startswith("HEARD_")}, **values}


@pytest.fixture
def db(env: dict[str, str]) -> Iterator[Database]:
    """The store the workers write to, read here as it is written."""
    with migrated(env["HEARD_DATABASE_URL"]) as database:
        yield database


def worker(workers: Workers, *args: str) -> subprocess.Popen[bytes]:
    """``heard worker ARGS`` as a user starts it, in a process group of its own."""
    with (workers.logs / f"worker{len(workers.procs)}.log").open("wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "heard", "worker", *args],
            env=workers.env, cwd=workers.logs, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    workers.procs.append(proc)
    return proc


def heard(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "heard", *args], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=120, check=False)  # fmt: skip


def read_jfk(db: Database, meeting_id: uuid.UUID, participant: str) -> None:
    """The participant's phrases, in the store, read as JFK said them."""
    said = [p.text for p in meeting_phrases(db, meeting_id) if p.participant == participant]
    assert said, f"no phrase of {participant}"
    assert_reads(" ".join(said))


@pytest.mark.parametrize("concurrency", [1, 2])
def test_a_worker_transcribes_what_heard_transcribe_queues(
    env: dict[str, str], db: Database, workers: Workers, concurrency: int, tmp_path: Path
) -> None:
    proc = worker(workers, "--concurrency", str(concurrency))
    stereo = AUDIO / "stereo_diarization.wav"
    queued = heard(env, "transcribe", f"ana={JFK}", f"bob={JFK}@2", f"cy={stereo}", "--queue")
    assert queued.returncode == 0, queued.stderr
    meeting_id = uuid.UUID(queued.stdout.strip())
    wait_for(all_done(db, [meeting_id]), 240, "the worker to transcribe three tracks", workers)
    assert proc.poll() is None, "the worker is still running"
    assert get_meeting(db, meeting_id).status is MeetingStatus.COMPLETE
    assert {t.status for t in track_states(db, meeting_id)} == {TrackStatus.DONE}
    read_jfk(db, meeting_id, "ana")
    read_jfk(db, meeting_id, "bob")
    assert [p for p in meeting_phrases(db, meeting_id) if p.participant == "cy"]


def test_heard_serve_queue_hands_uploads_to_a_real_worker(
    env: dict[str, str], db: Database, workers: Workers, tmp_path: Path
) -> None:
    token = heard(env, "users", "add", "ana").stdout.strip()
    assert token.startswith("heard_")
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "heard", "serve", "--queue", "--port", str(port),
         "--uploads", str(tmp_path / "uploads")],
        env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    worker(workers)
    auth = {"Authorization": f"Bearer {token}"}
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=auth, timeout=60) as api:
            deadline = time.monotonic() + 60
            while True:
                try:
                    api.get("/v1/me").raise_for_status()
                    break
                except httpx.TransportError:
                    assert server.poll() is None, server.stderr.read() if server.stderr else ""
                    assert time.monotonic() < deadline, "heard serve did not start"
                    time.sleep(0.3)
            made = api.post("/v1/meetings", json={"title": "served",
                                                  "participants": [{"name": "jfk"}]})  # fmt: skip
            meeting = made.json()["id"]
            put = api.put(f"/v1/meetings/{meeting}/tracks/jfk", content=JFK.read_bytes())
            assert put.is_success, put.text
            run = api.post(f"/v1/meetings/{meeting}/run")
            assert run.status_code == 202, run.text
            wait_for(all_done(db, [uuid.UUID(meeting)]), 180, "the worker", workers)
            phrases = api.get(f"/v1/meetings/{meeting}/phrases").json()
        assert_reads(" ".join(p["text"] for p in phrases))
        read_jfk(db, uuid.UUID(meeting), "jfk")
    finally:
        server.terminate()
        server.communicate(timeout=20)


def test_sigterm_stops_a_busy_worker_and_the_next_one_finishes_its_track(
    env: dict[str, str], db: Database, workers: Workers, tmp_path: Path
) -> None:
    """A worker stopped the way systemd, Docker and Kubernetes stop one (SIGTERM) while it
    transcribes: it is gone within 30 s, its track goes back to the queue, and the next worker
    transcribes it once."""
    busy = worker(workers)
    long = jfk_times(12, tmp_path / "long.wav")
    queued = heard(env, "transcribe", f"jfk={long}", "--queue")
    assert queued.returncode == 0, queued.stderr
    meeting_id = uuid.UUID(queued.stdout.strip())

    def transcribing() -> bool:
        return [t.status for t in track_states(db, meeting_id)] == [TrackStatus.TRANSCRIBING]

    wait_for(transcribing, 120, "the worker to take the track", workers)
    time.sleep(2)  # well into the track, whose 132 s take longer than the 10 s it is given
    os.kill(busy.pid, signal.SIGTERM)
    stopped_at = time.monotonic()
    try:
        busy.wait(timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail(f"SIGTERM left a busy worker running for 30 s\n{workers.log_tail()}")
    took = time.monotonic() - stopped_at
    assert get_meeting(db, meeting_id).status is not MeetingStatus.COMPLETE, "not done yet"
    worker(workers)
    wait_for(all_done(db, [meeting_id]), 300, "the next worker to finish the track", workers)
    assert get_meeting(db, meeting_id).status is MeetingStatus.COMPLETE, f"stopped in {took} s"
    # once: JFK's twelve sentences, not 24, on a timeline that never goes back
    phrases = meeting_phrases(db, meeting_id)
    said = " ".join(p.text for p in phrases)
    assert_hears(said, JFK_SAID)
    assert normalize(said).split().count("country") <= 24, "said twice each time: not stored twice"
    assert all(a.end_s <= b.start_s for a, b in pairwise(phrases))
