"""A bad day for ``heard serve`` (issue 71), as an operator has one: the real tiny.en on real
speech, a real PostgreSQL.

* PostgreSQL restarted under a server with a run in flight and one queued: both complete by
  themselves once it is back (the server's keeper runs again what the outage cut short).
* Two servers on one store, one killed with -9 mid-run: the other takes over its runs once
  the dead one's lease has run out. The dead server is named as one of another host, so that
  nothing but its lease can tell that it is gone.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from itertools import pairwise
from pathlib import Path

import httpx
import pytest
from tools.services import PostgresCluster, Unavailable

from heard.store.database import Database
from heard.store.meetings import TrackSpec, create_meeting
from heard.store.models import MeetingStatus, TrackStatus
from heard.store.users import add_user
from heard.store.views import get_meeting, meeting_phrases, track_states
from tests.conftest import AUDIO, IN_CI
from tests.meetings.workers import jfk_times, migrated
from tests.reading import JFK as JFK_SAID
from tests.reading import assert_hears, assert_reads, normalize
from tests.server.threaded import free_port

pytestmark = [pytest.mark.asr, pytest.mark.services]

JFK = AUDIO / "jfk.flac"
ELSEWHERE = (
    "import runpy, socket, sys; socket.gethostname = lambda: 'elsewhere'; "
    "sys.argv[0] = 'heard'; runpy.run_module('heard', run_name='__main__', alter_sys=True)"
)
"""``heard`` in a process that names itself as one of another host."""


@pytest.fixture
def cluster() -> Iterator[PostgresCluster]:
    """A PostgreSQL of this test's own, to stop and start under a server."""
    workdir = Path(tempfile.mkdtemp(prefix="heard-test-postgres-"))
    workdir.chmod(0o755)  # the postgres user reaches its cluster through here (tmp_path: no)
    try:
        cluster = PostgresCluster(workdir)
        cluster.start()
    except Unavailable as e:
        if IN_CI:
            pytest.fail(f"under CI every services test runs: {e}", pytrace=False)
        pytest.skip(str(e))
    try:
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(workdir, ignore_errors=True)


class Served:
    """``heard serve`` in a process of its own, its log in a file."""

    def __init__(self, tmp_path: Path, name: str, env: dict[str, str], *, elsewhere: bool = False):
        self.port, self.log = free_port(), tmp_path / f"{name}.log"
        entry = ["-c", ELSEWHERE] if elsewhere else ["-m", "heard"]
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, *entry, "serve", "--port", str(self.port),
                 "--uploads", str(tmp_path / "uploads")],
                env=env, cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        deadline = time.monotonic() + 90
        while True:
            try:
                httpx.get(f"{self.url}/", timeout=5)
                return
            except httpx.TransportError:
                assert self.proc.poll() is None, self.tail()
                assert time.monotonic() < deadline, f"heard serve did not start\n{self.tail()}"
                time.sleep(0.3)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def run(self, meeting_id: uuid.UUID, token: str) -> None:
        answer = httpx.post(f"{self.url}/v1/meetings/{meeting_id}/run", timeout=30,
                            headers={"Authorization": f"Bearer {token}"})  # fmt: skip
        assert answer.status_code == 202, answer.text

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:]

    def kill9(self) -> None:
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill9()


def server_env(database_url: str, **values: str) -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if not k.startswith("HEARD_")},
            "HEARD_DATABASE_URL": database_url, **values}  # fmt: skip


def wait_until(check: Callable[[], bool], timeout_s: float, what: str, *servers: Served) -> float:
    """Wait for ``check``; the seconds it took."""
    began = time.monotonic()
    while not check():
        if time.monotonic() - began > timeout_s:
            logs = "\n".join(f"--- {s.log.name}\n{s.tail()}" for s in servers)
            pytest.fail(f"not {what} within {timeout_s:.0f} s\n{logs}")
        time.sleep(0.3)
    return time.monotonic() - began


def meetings_of(db: Database, tmp_path: Path) -> tuple[str, uuid.UUID, uuid.UUID]:
    """A user's token, a meeting whose track keeps a server busy (JFK four times) and one
    to wait behind it (JFK once)."""
    user, token = add_user(db, "ana")
    long = jfk_times(4, tmp_path / "long.wav")
    busy = create_meeting(db, title="busy", owner=user.owner, tracks=[TrackSpec("jfk", str(long))])
    waits = create_meeting(db, title="waits", owner=user.owner, tracks=[TrackSpec("jfk", str(JFK))])
    return token, busy, waits


def quietly(check: Callable[[], bool]) -> Callable[[], bool]:
    """``check``, False while the store does not answer."""

    def checked() -> bool:
        try:
            return check()
        except Exception:  # noqa: BLE001 - the store is still starting
            return False

    return checked


def complete(db: Database, *meetings: uuid.UUID) -> Callable[[], bool]:
    return quietly(
        lambda: all(get_meeting(db, m).status is MeetingStatus.COMPLETE for m in meetings)
    )


def transcribing(db: Database, meeting_id: uuid.UUID) -> Callable[[], bool]:
    return lambda: [t.status for t in track_states(db, meeting_id)] == [TrackStatus.TRANSCRIBING]


def read_once(db: Database, busy: uuid.UUID, waits: uuid.UUID) -> None:
    """Each meeting's phrases once: JFK four times in the one, once in the other."""
    assert_reads(" ".join(p.text for p in meeting_phrases(db, waits)))
    phrases = meeting_phrases(db, busy)
    said = " ".join(p.text for p in phrases)
    assert_hears(said, " ".join([JFK_SAID] * 4))
    assert normalize(said).split().count("country") <= 8, "a phrase stored twice"
    assert all(a.end_s <= b.start_s for a, b in pairwise(phrases)), "a phrase stored twice"


def test_runs_in_flight_and_queued_complete_by_themselves_after_postgresql_restarts(
    cluster: PostgresCluster, tmp_path: Path
) -> None:
    with migrated(cluster.url) as db:
        token, busy, waits = meetings_of(db, tmp_path)
        server = Served(tmp_path, "server", server_env(cluster.url))
        try:
            server.run(busy, token)
            server.run(waits, token)  # behind the busy one: 2 cores give runs one thread
            wait_until(transcribing(db, busy), 60, "transcribing", server)
            db.dispose()
            cluster.stop()
            away = httpx.get(f"{server.url}/v1/meetings",
                             headers={"Authorization": f"Bearer {token}"}, timeout=30)  # fmt: skip
            assert away.status_code == 503, away.text
            # down until both runs have met it: the track read, but not written
            wait_until(lambda: server.tail().count("the run stopped") == 2, 180,
                       "both runs stopped by the outage", server)  # fmt: skip
            cluster.start()
            took = wait_until(complete(db, busy, waits), 60, "both complete", server)
            read_once(db, busy, waits)
            assert "a track given back after a store outage" in server.tail()
            print(f"both runs complete {took:.1f} s after PostgreSQL answered again")
        finally:
            server.stop()


def test_a_server_takes_over_the_runs_of_a_server_killed_mid_run(
    postgres_schema_url: str, tmp_path: Path
) -> None:
    """Bound: the dead server's lease (5 s here; HEARD_LEASE_S, 30 s by default) and a fifth
    of it for the next look, then the runs themselves; 90 s in all on a busy 2-core machine
    (15 s when it is idle)."""
    env = server_env(postgres_schema_url, HEARD_LEASE_S="5")
    with migrated(postgres_schema_url) as db:
        token, busy, waits = meetings_of(db, tmp_path)
        survivor = Served(tmp_path, "survivor", env)
        doomed = Served(tmp_path, "doomed", env, elsewhere=True)
        try:
            doomed.run(busy, token)
            doomed.run(waits, token)
            wait_until(transcribing(db, busy), 60, "transcribing", doomed)
            [claim] = track_states(db, busy)
            assert (claim.claimed_by or "").startswith("elsewhere:"), claim.claimed_by
            doomed.kill9()
            took = wait_until(complete(db, busy, waits), 90, "both complete", survivor)
            read_once(db, busy, waits)
            assert survivor.tail().count("taking over meeting") == 2, survivor.tail()
            print(f"both runs complete {took:.1f} s after the kill")
        finally:
            doomed.stop()
            survivor.stop()
