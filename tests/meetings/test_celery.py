"""The meeting pipeline on real Celery workers, Redis and PostgreSQL at 127.0.0.1.

Worker processes run ``heard worker`` with ``HEARD_TRANSCRIBER`` pointing at
``tests.worker_fakes`` (fake tracks are ``fake://`` locations; real files go to
faster-whisper). Each test has its own queue and its own PostgreSQL schema. Their real twin,
workers as users start them with the real model, is tests/meetings/test_worker_real.py.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from sqlalchemy import func, select, text, update
from tests.conftest import AUDIO, REPO
from tests.meetings.workers import Workers, all_done, migrated, queued, wait_for
from tests.reading import assert_reads
from tests.worker_fakes import fake_segments

from heard.meetings import celery_app
from heard.settings import settings
from heard.store.database import Database
from heard.store.evidence import load_utterances
from heard.store.meetings import TrackSpec, create_meeting
from heard.store.models import AudioTrack, MeetingStatus, Phrase, TrackStatus
from heard.store.views import get_meeting, list_meetings, meeting_phrases, track_states
from heard.timeline.phrases import Track, build_phrases

STUCK_AFTER_S = 6.0
VISIBILITY_S = 8.0


@pytest.fixture
def pg_url(postgres_schema_url: str) -> str:
    return postgres_schema_url


@pytest.fixture
def env(pg_url: str, redis_url: str) -> Iterator[dict[str, str]]:
    fakes = {
        "HEARD_TRANSCRIBER": "tests.worker_fakes:routing",
        "HEARD_STUCK_AFTER_S": str(STUCK_AFTER_S),
        "HEARD_VISIBILITY_TIMEOUT_S": str(VISIBILITY_S),
        "HEARD_RETRY_DELAY_S": "0.5",
        "PYTHONPATH": str(REPO),
    }
    with queued(pg_url, redis_url, **fakes) as values:
        celery_app.configure(settings(values))  # this process as the workers see it
        yield {**os.environ, **values}
        celery_app.configure()


def fake_meeting(db: Database, n: int, sleep_s: float = 0.3) -> uuid.UUID:
    tracks = [
        TrackSpec("alice", f"fake://alice{n}/{2 + n % 3}?sleep={sleep_s}"),
        TrackSpec("bob", f"fake://bob{n}/2?sleep={sleep_s}", offset_s=1.5),
        TrackSpec("carol", f"fake://carol{n}/1?sleep={sleep_s}", offset_s=9.0),
    ]
    return create_meeting(db, title=f"fake {n}", tracks=tracks)


def expected(db: Database, meeting_id: uuid.UUID) -> list[tuple[str, float, float, str]]:
    tracks = {
        t.participant: Track(fake_segments(t.location), t.offset_s)
        for t in track_states(db, meeting_id)
    }
    return [(d.participant, d.start, d.end, d.text) for d in build_phrases(tracks)]


def stored(db: Database, meeting_id: uuid.UUID) -> list[tuple[str, float, float, str]]:
    return [
        (p.participant, round(p.start_s, 3), round(p.end_s, 3), p.text)
        for p in meeting_phrases(db, meeting_id)
    ]


def phrase_rows(db: Database, meeting_id: uuid.UUID) -> int:
    with db.session() as s:
        return (
            s.scalar(
                select(func.count()).select_from(Phrase).where(Phrase.meeting_id == meeting_id)
            )
            or 0
        )


@pytest.fixture
def db(env: dict[str, str]) -> Iterator[Database]:
    with migrated(env["HEARD_DATABASE_URL"]) as database:
        yield database


def test_two_workers_complete_every_meeting(
    env: dict[str, str], db: Database, workers: Workers
) -> None:
    workers.start()
    workers.start()
    ids = [fake_meeting(db, n) for n in range(5)]
    jfk = AUDIO / "jfk.flac"
    real = create_meeting(
        db,
        title="real",
        tracks=[TrackSpec("jfk", str(jfk)), TrackSpec("echo", str(jfk), offset_s=20)],
    )
    for mid in [*ids, real]:
        celery_app.enqueue_meeting(db, mid)
    wait_for(all_done(db, [*ids, real]), 180, "every meeting to complete", workers)
    for mid in ids:
        assert get_meeting(db, mid).status is MeetingStatus.COMPLETE
        assert stored(db, mid) == expected(db, mid)
    phrases = meeting_phrases(db, real)
    assert [p.participant for p in phrases] == ["jfk", "echo"]
    for phrase in phrases:
        assert_reads(phrase.text)
    assert phrases[1].start_s >= 20


def test_a_worker_killed_mid_task_loses_nothing_and_doubles_nothing(
    env: dict[str, str], db: Database, workers: Workers
) -> None:
    victim = workers.start()
    workers.start()
    ids = [fake_meeting(db, n, sleep_s=2.0) for n in range(4)]
    for mid in ids:
        celery_app.enqueue_meeting(db, mid)

    def transcribing() -> bool:
        return sum(t.status == "transcribing" for m in ids for t in track_states(db, m)) >= 2

    wait_for(transcribing, 60, "both workers to be transcribing", workers)
    workers.kill9(victim)  # both workers were busy, so the victim dies mid-task
    workers.start()  # its supervisor (systemd, k8s) starts a new one
    wait_for(all_done(db, ids), 240, "every meeting to complete after the kill", workers)
    attempts = [t.attempts for m in ids for t in track_states(db, m)]
    assert max(attempts) == 2  # the victim's track was recovered and transcribed again
    for mid in ids:
        assert get_meeting(db, mid).status is MeetingStatus.COMPLETE
        assert stored(db, mid) == expected(db, mid)
        assert phrase_rows(db, mid) == len(expected(db, mid))


def test_redelivered_tasks_and_racing_builds_give_one_clean_result(
    env: dict[str, str], db: Database, workers: Workers
) -> None:
    workers.start()
    workers.start()
    ids = [fake_meeting(db, n, sleep_s=0.2) for n in range(3)]
    for mid in ids:
        for _ in range(3):  # every track task delivered three times, to two workers
            for t in track_states(db, mid):
                celery_app.transcribe_track_task.delay(str(t.id))
    wait_for(all_done(db, ids), 120, "every meeting to complete", workers)
    # and then builds racing on the same meetings, on both workers and in two threads here
    for mid in ids:
        for _ in range(4):
            celery_app.build_meeting_task.delay(str(mid))
    threads = [
        threading.Thread(target=celery_app.build_meeting_task, args=(str(m),))
        for m in ids
        for _ in range(2)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    time.sleep(2)
    with redis.Redis.from_url(env["HEARD_BROKER_URL"]) as client:
        wait_for(lambda: client.llen(env["HEARD_QUEUE"]) == 0, 60, "the queue to drain", workers)
    for mid in ids:
        assert stored(db, mid) == expected(db, mid)
        assert phrase_rows(db, mid) == len(expected(db, mid))
        assert all(t.attempts == 1 for t in track_states(db, mid))  # transcribed exactly once
        # remembered once: racing builds replace the meeting's evidence in turn
        said = [e for e in load_utterances(db) if e.conversation == f"meeting:{mid}"]
        assert len(said) == len(expected(db, mid))


def test_broker_down_at_enqueue_is_a_clear_error_and_stores_nothing(tmp_path: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'down.db'}"
    env = {**os.environ, "HEARD_BROKER_URL": "redis://127.0.0.1:9/0", "HEARD_DATABASE_URL": db_url}
    jfk = AUDIO / "jfk.flac"
    result = subprocess.run(
        [sys.executable, "-m", "heard", "transcribe", f"jfk={jfk}", "--queue"],
        capture_output=True, text=True, env=env, check=False, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert "cannot reach the broker at redis://127.0.0.1:9/0" in result.stderr
    assert "Traceback" not in result.stderr
    db = Database(db_url)
    assert (
        not db.has_schema() or not db.engine.connect().execute(text("select 1 from meetings")).all()
    )


def test_cli_enqueues_and_a_worker_finishes_the_meeting(
    env: dict[str, str], db: Database, workers: Workers
) -> None:
    workers.start()
    jfk = AUDIO / "jfk.flac"

    def heard(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "heard", *args], capture_output=True,
                              text=True, env=env, check=False, timeout=120)  # fmt: skip

    queued = heard("transcribe", f"jfk={jfk}", "--queue", "--title", "queued")
    assert queued.returncode == 0, queued.stderr
    meeting_id = queued.stdout.strip()
    assert str(uuid.UUID(meeting_id)) == meeting_id
    wait_for(all_done(db, [uuid.UUID(meeting_id)]), 120, "the queued meeting", workers)
    status = heard("status", meeting_id[:8])
    assert "complete" in status.stdout
    assert "done" in status.stdout
    export = heard("export", meeting_id, "--format", "srt")
    cues = [line.removeprefix("jfk: ") for line in export.stdout.splitlines() if "jfk: " in line]
    assert_reads(" ".join(cues))


def test_a_worker_diarizes_a_queued_recording_of_two_people(
    env: dict[str, str], db: Database, workers: Workers, tmp_path: Path
) -> None:
    import numpy as np
    import soundfile as sf  # type: ignore[import-untyped]

    from heard.asr.audio import load_audio

    pair = [load_audio(AUDIO / "stereo_diarization.wav", c) for c in (0, 1)]
    sf.write(tmp_path / "call.wav", np.mean(pair, axis=0), 16000)  # one mixed track
    workers.start()
    queued = subprocess.run(
        [sys.executable, "-m", "heard", "transcribe", str(tmp_path / "call.wav"), "--speakers",
         "2", "--names", "ana,bob", "--queue"],
        capture_output=True, text=True, env=env, check=False, timeout=120,
    )  # fmt: skip
    assert queued.returncode == 0, queued.stderr
    meeting_id = uuid.UUID(queued.stdout.strip())
    wait_for(all_done(db, [meeting_id]), 180, "the diarized meeting", workers)
    states = track_states(db, meeting_id)
    assert [(t.speakers, t.speakers_found, t.status) for t in states] == [
        ("2", 2, TrackStatus.DONE)
    ]
    # the two talk at once; Whisper hears the louder (ana) through it, so bob may get no words
    who = {p.participant for p in meeting_phrases(db, meeting_id)}
    assert "ana" in who, workers.log_tail()
    assert who <= {"ana", "bob"}


def test_queue_with_a_database_the_workers_do_not_open_is_refused(
    env: dict[str, str], db: Database, workers: Workers, tmp_path: Path
) -> None:
    """Issue 27: the workers open $HEARD_DATABASE_URL; a meeting stored in --db X would stay
    pending forever (each task finds nothing). One line, nothing stored anywhere."""
    workers.start()
    other = f"sqlite:///{tmp_path / 'other.db'}"
    before = len(list_meetings(db))
    refused = subprocess.run(
        [sys.executable, "-m", "heard", "transcribe", f"jfk={AUDIO / 'jfk.flac'}", "--queue",
         "--db", other],
        capture_output=True, text=True, env=env, check=False, timeout=120,
    )  # fmt: skip
    assert refused.returncode == 2
    assert refused.stderr.count("\n") == 1, refused.stderr
    assert "--queue with --db sqlite:///" in refused.stderr
    assert "the workers open" in refused.stderr
    assert not (tmp_path / "other.db").exists()
    assert len(list_meetings(db)) == before
    # the database the workers open, named with --db, is the same one: accepted
    same = subprocess.run(
        [sys.executable, "-m", "heard", "transcribe", f"jfk={AUDIO / 'jfk.flac'}", "--queue",
         "--db", env["HEARD_DATABASE_URL"]],
        capture_output=True, text=True, env=env, check=False, timeout=120,
    )  # fmt: skip
    assert same.returncode == 0, same.stderr
    meeting_id = uuid.UUID(same.stdout.strip())
    wait_for(all_done(db, [meeting_id]), 120, "the queued meeting", workers)


def test_a_track_still_recording_is_retried_with_backoff_until_it_is_done(
    env: dict[str, str], db: Database, workers: Workers
) -> None:
    workers.start()
    mid = create_meeting(
        db,
        title="live",
        tracks=[
            TrackSpec("alice", "fake://alice/2", language="de"),
            TrackSpec("bob", "fake://bob/1", offset_s=1.0, status=TrackStatus.RECORDING),
        ],
    )
    celery_app.enqueue_meeting(db, mid)
    states = lambda: {t.participant: t.status for t in track_states(db, mid)}  # noqa: E731
    wait_for(lambda: states()["alice"] is TrackStatus.DONE, 60, "alice's track", workers)
    time.sleep(2)  # bob's task keeps coming back while his track records
    assert states()["bob"] is TrackStatus.RECORDING
    assert get_meeting(db, mid).status is MeetingStatus.PENDING
    with db.session() as s:
        s.execute(
            update(AudioTrack)
            .where(AudioTrack.meeting_id == mid, AudioTrack.status == TrackStatus.RECORDING)
            .values(status=TrackStatus.PENDING)
        )
    wait_for(all_done(db, [mid]), 60, "the meeting once recording stopped", workers)
    assert stored(db, mid) == expected(db, mid)
    assert "Retry in" in workers.log_tail()
    # the language given for a track reached the worker's transcriber and came back stored
    languages = {t.participant: t.language for t in track_states(db, mid)}
    assert languages == {"alice": "de", "bob": None}


@pytest.mark.asr
def test_heard_serve_with_queue_runs_uploads_on_a_worker(
    env: dict[str, str], workers: Workers, pg_url: str, tmp_path: Path
) -> None:
    """The server takes the uploads, a real worker (real model) transcribes them."""
    from fastapi.testclient import TestClient

    from heard.server.app import ServerSettings, create_app
    from heard.store.users import add_user

    db = Database(pg_url)
    app = create_app(ServerSettings(db, tmp_path / "uploads", queue=True))
    _, token = add_user(db, "ana")
    auth = {"Authorization": f"Bearer {token}"}
    workers.start()
    wav = (AUDIO / "stereo_diarization.wav").read_bytes()
    with TestClient(app) as client:
        mid = client.post(
            "/v1/meetings",
            json={"title": "queued", "participants": [{"name": "left"}, {"name": "right"}]},
            headers=auth,
        ).json()["id"]
        for name in ("left", "right"):
            assert client.put(
                f"/v1/meetings/{mid}/tracks/{name}", content=wav, headers=auth
            ).is_success
        run = client.post(f"/v1/meetings/{mid}/run", headers=auth)
        assert run.status_code == 202
        assert run.json()["queued_tasks"] == 2

        def done() -> bool:
            return client.get(f"/v1/meetings/{mid}", headers=auth).json()["status"] != "pending"

        wait_for(done, 120, "the worker to transcribe the uploads", workers)
        meeting = client.get(f"/v1/meetings/{mid}", headers=auth).json()
        assert meeting["status"] == "complete", meeting
        assert {t["status"] for t in meeting["tracks"]} == {"done"}
        assert client.get(f"/v1/meetings/{mid}/phrases", headers=auth).json()
    db.dispose()


def test_a_run_a_killed_server_had_accepted_goes_to_the_workers_from_the_next_start(
    env: dict[str, str], workers: Workers, pg_url: str, tmp_path: Path
) -> None:
    """Issue 57: a run waiting in a server that transcribes in-process is not lost when that
    server is killed: the next server, started with --queue, sends it to the workers, and the
    meeting is never left reading interrupted once they have it."""
    from fastapi.testclient import TestClient

    from heard.server.app import ServerSettings, create_app
    from heard.store.runs import accept_run

    db = Database(pg_url)
    db.migrate()
    meeting_id = fake_meeting(db, 1)
    killed = subprocess.Popen([sys.executable, "-c", "pass"])
    killed.wait()
    accept_run(db, meeting_id, f"{socket.gethostname()}:{killed.pid}:-")
    workers.start()
    with TestClient(create_app(ServerSettings(db, tmp_path / "uploads", queue=True))):
        wait_for(all_done(db, [meeting_id]), 60, "the workers to run the lost run", workers)
    meeting = get_meeting(db, meeting_id)
    assert (meeting.status, meeting.run_by) == (MeetingStatus.COMPLETE, None)
    assert stored(db, meeting_id) == expected(db, meeting_id)
    db.dispose()
