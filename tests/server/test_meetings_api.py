"""The meetings routes: create, upload, run, status and export, on SQLite and PostgreSQL."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from heard.meetings import jobs
from heard.meetings.run import run_pipeline
from heard.server.app import ServerSettings, create_app
from heard.speech import Segment, Transcription
from heard.store.database import Database
from heard.store.holder import this_holder
from heard.store.meetings import TrackSpec, create_meeting
from heard.store.tracks import claim_track
from heard.store.users import add_user
from heard.store.views import get_meeting, track_states
from heard.testing import FakeTranscriber
from tests.conftest import AUDIO


def test_meeting_lifecycle_and_isolation(server, db: Database) -> None:  # type: ignore[no-untyped-def]
    client, alice, bob = server
    created = client.post(
        "/v1/meetings",
        json={
            "title": "stand-up",
            "participants": [{"name": "left"}, {"name": "right", "offset_s": 0}],
        },
        headers=alice,
    )
    assert created.status_code == 201, created.text
    meeting = created.json()
    mid = meeting["id"]
    assert [t["status"] for t in meeting["tracks"]] == ["recording", "recording"]
    wav = (AUDIO / "stereo_diarization.wav").read_bytes()
    for name in ("left", "right"):
        up = client.put(f"/v1/meetings/{mid}/tracks/{name}", content=wav, headers=alice)
        assert up.status_code == 200, up.text
    assert {
        t["status"] for t in client.get(f"/v1/meetings/{mid}", headers=alice).json()["tracks"]
    } == {"pending"}
    assert client.post(f"/v1/meetings/{mid}/run", headers=alice).status_code == 202
    # transcription is off in this app: run the pipeline with canned segments per upload
    canned = {
        t.location: [Segment(0.0, 1.5, f"hello from {t.participant}")]
        for t in track_states(db, mid)
    }
    run_pipeline(mid, db=db, transcriber=FakeTranscriber(canned))
    phrases = client.get(f"/v1/meetings/{mid}/phrases", headers=alice).json()
    assert phrases
    assert {p["participant"] for p in phrases} <= {"left", "right"}
    for fmt, needle in [
        ("srt", " --> "),
        ("vtt", "WEBVTT"),
        ("json", '"participant"'),
        ("md", "stand-up"),
        ("txt", "left"),
    ]:
        export = client.get(f"/v1/meetings/{mid}/export", params={"format": fmt}, headers=alice)
        assert export.status_code == 200
        assert needle in export.text
    assert [m["id"] for m in client.get("/v1/meetings", headers=alice).json()] == [mid]
    # bob sees nothing of it: the same 404 as for a meeting that does not exist
    assert client.get("/v1/meetings", headers=bob).json() == []
    missing = "00000000-0000-0000-0000-000000000000"
    for path in ["", "/phrases", "/export"]:
        theirs = client.get(f"/v1/meetings/{mid}{path}", headers=bob)
        nobodys = client.get(f"/v1/meetings/{missing}{path}", headers=bob)
        assert theirs.status_code == nobodys.status_code == 404
    assert (
        client.put(f"/v1/meetings/{mid}/tracks/left", content=wav, headers=bob).status_code == 404
    )
    assert client.post(f"/v1/meetings/{mid}/run", headers=bob).status_code == 404


def test_bad_input_gets_4xx_and_nothing_half_written(server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    client, alice, _ = server
    assert (
        client.post(
            "/v1/meetings", json={"title": "", "participants": []}, headers=alice
        ).status_code
        == 422
    )
    dup = client.post(
        "/v1/meetings",
        json={"title": "x", "participants": [{"name": "a"}, {"name": "A"}]},
        headers=alice,
    )
    assert dup.status_code == 422
    assert "named twice" in dup.json()["detail"]
    mid = client.post(
        "/v1/meetings", json={"title": "x", "participants": [{"name": "a"}]}, headers=alice
    ).json()["id"]
    corrupt = client.put(
        f"/v1/meetings/{mid}/tracks/a", content=b"RIFF not audio at all", headers=alice
    )
    assert corrupt.status_code == 422
    assert "not decodable audio" in corrupt.json()["detail"]
    assert str(tmp_path) not in corrupt.json()["detail"]  # the server's folders stay its own
    empty = client.put(f"/v1/meetings/{mid}/tracks/a", content=b"", headers=alice)
    assert empty.status_code == 422
    unknown = client.put(f"/v1/meetings/{mid}/tracks/zed", content=b"x", headers=alice)
    assert unknown.status_code == 404
    assert not list((tmp_path / "uploads").rglob("*.audio"))
    assert (
        client.get(f"/v1/meetings/{mid}", headers=alice).json()["tracks"][0]["status"]
        == "recording"
    )
    assert client.get("/v1/meetings/not-a-uuid", headers=alice).status_code == 422


def test_a_participants_language_goes_in_and_comes_out_with_how_it_was_found(  # type: ignore[no-untyped-def]
    server, db: Database
) -> None:
    client, alice, _ = server
    created = client.post(
        "/v1/meetings",
        json={"title": "bilingual", "participants": [{"name": "ana", "language": "es"},
                                                      {"name": "bob"}]},
        headers=alice,
    )  # fmt: skip
    assert created.status_code == 201, created.text
    mid = created.json()["id"]
    asked = {t["participant"]: t["language_asked"] for t in created.json()["tracks"]}
    assert asked == {"ana": "es", "bob": None}
    wav = (AUDIO / "stereo_diarization.wav").read_bytes()
    for name in ("ana", "bob"):
        assert client.put(
            f"/v1/meetings/{mid}/tracks/{name}", content=wav, headers=alice
        ).is_success
    tracks = {t.participant: t.location for t in track_states(db, mid)}
    fake = FakeTranscriber({
        tracks["ana"]: [Segment(0.0, 1.5, "hola a todos")],
        tracks["bob"]: Transcription((Segment(2.0, 3.0, "hello"),), "en", 0.93),
    })  # fmt: skip
    run_pipeline(mid, db=db, transcriber=fake)
    assert fake.languages == [None, "es"] or fake.languages == ["es", None]  # ana's was passed
    out = {
        t["participant"]: t
        for t in client.get(f"/v1/meetings/{mid}", headers=alice).json()["tracks"]
    }
    assert (out["ana"]["language"], out["ana"]["language_probability"]) == ("es", None)
    assert (out["bob"]["language"], out["bob"]["language_probability"]) == ("en", 0.93)
    phrases = client.get(f"/v1/meetings/{mid}/phrases", headers=alice).json()
    assert {(p["participant"], p["language"]) for p in phrases} == {("ana", "es"), ("bob", "en")}
    vtt = client.get(f"/v1/meetings/{mid}/export", params={"format": "vtt"}, headers=alice).text
    assert "NOTE Languages: ana es (given); bob en (detected, 0.93)" in vtt


@pytest.mark.parametrize("language", ["xx", "english", 7, "e\u0000s"])
def test_a_language_whisper_does_not_know_is_a_422_naming_the_field(  # type: ignore[no-untyped-def]
    server, language: object
) -> None:
    client, alice, _ = server
    bad = client.post(
        "/v1/meetings",
        json={"title": "x", "participants": [{"name": "ana", "language": language}]},
        headers=alice,
    )
    assert bad.status_code == 422
    assert "language" in bad.text
    assert client.get("/v1/meetings", headers=alice).json() == []


def dead_holder() -> str:
    """A claim's holder: a process of this host that has ended."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return f"{this_holder().split(':')[0]}:{child.pid}:-"


def cut_short(db: Database, owner: str) -> uuid.UUID:
    """A meeting the way a crash leaves it: track a claimed by a process that is gone."""
    tracks = [TrackSpec("a", str(AUDIO / "jfk.flac")), TrackSpec("b", str(AUDIO / "jfk.flac"))]
    meeting_id = create_meeting(db, title="cut short", tracks=tracks, owner=owner)
    first, _ = track_states(db, meeting_id, owner)
    assert claim_track(db, first.id, datetime.now(UTC), holder=dead_holder()) is not None
    return meeting_id


def test_a_meeting_whose_process_died_reads_interrupted(db: Database, tmp_path: Path) -> None:
    """Issue 27: REST says what `heard status` says of a track left `transcribing` by a process
    that is gone (a worker of this host killed while the server runs), and so of its meeting."""
    user, token = add_user(db, "dora")
    headers = {"Authorization": f"Bearer {token}"}
    with TestClient(create_app(ServerSettings(db, tmp_path / "uploads"))) as client:
        meeting_id = cut_short(db, user.owner)
        _, second = track_states(db, meeting_id, user.owner)
        assert claim_track(db, second.id, datetime.now(UTC)) is not None  # this process: alive
        shown = client.get(f"/v1/meetings/{meeting_id}", headers=headers).json()
        listed = client.get("/v1/meetings", headers=headers).json()
    assert shown["status"] == "interrupted"
    assert {t["participant"]: t["status"] for t in shown["tracks"]} == {
        "a": "interrupted",
        "b": "transcribing",
    }
    assert [m["status"] for m in listed] == ["interrupted"]


def test_a_server_that_starts_after_a_crash_resumes_what_it_left(
    db: Database, tmp_path: Path
) -> None:
    """Issue 28: nothing waits for someone to call /run after a crash."""
    user, token = add_user(db, "dora")
    meeting_id = cut_short(db, user.owner)
    jfk = [Segment(0.0, 2.0, "and so my fellow americans")]
    fake = FakeTranscriber({str(AUDIO / "jfk.flac"): jfk})
    settings = ServerSettings(db, tmp_path / "uploads", transcriber=fake)
    with TestClient(create_app(settings)) as client:
        deadline = time.monotonic() + 60
        while (shown := client.get(f"/v1/meetings/{meeting_id}", headers={
            "Authorization": f"Bearer {token}"}).json())["status"] != "complete":  # fmt: skip
            assert time.monotonic() < deadline, shown
            time.sleep(0.05)
    assert [t["status"] for t in shown["tracks"]] == ["done", "done"]
    assert shown["phrases"] >= 1


def test_without_resume_a_crashed_meetings_tracks_take_uploads_again(
    db: Database, tmp_path: Path
) -> None:
    user, token = add_user(db, "dora")
    headers = {"Authorization": f"Bearer {token}"}
    meeting_id = cut_short(db, user.owner)
    fake = FakeTranscriber({})
    settings = ServerSettings(db, tmp_path / "uploads", transcriber=fake, resume=False)
    with TestClient(create_app(settings)) as client:
        shown = client.get(f"/v1/meetings/{meeting_id}", headers=headers).json()
        assert [t["status"] for t in shown["tracks"]] == ["pending", "pending"]
        assert "its process" in shown["tracks"][0]["last_error"]
        body = (AUDIO / "jfk.flac").read_bytes()
        put = client.put(f"/v1/meetings/{meeting_id}/tracks/a", content=body, headers=headers)
        assert put.status_code == 200, put.text
    assert fake.calls == []


JFK = AUDIO / "jfk.flac"
SAID = [Segment(0.0, 2.0, "and so my fellow americans")]

FIRST_SERVER = """
import sys, threading
from pathlib import Path
from fastapi.testclient import TestClient
from heard.meetings import runner
from heard.server.app import ServerSettings, create_app
from heard.store.database import Database
from heard.testing import FakeTranscriber

url, uploads, meeting, token = sys.argv[1:]
held = threading.Event()
runner.run_pipeline = lambda *args, **kwargs: held.wait()  # the run waits its turn for good
app = create_app(ServerSettings(Database(url), Path(uploads), transcriber=FakeTranscriber({})))
answer = TestClient(app).post(f"/v1/meetings/{meeting}/run",
                              headers={"Authorization": f"Bearer {token}"})
print(answer.status_code, flush=True)
held.wait()
"""
"""A server (its own process) that accepts a meeting's run, which then waits behind others."""


@pytest.fixture
def file_db(tmp_path: Path) -> Iterator[Database]:
    """A SQLite store in a file, which a server of another process opens too."""
    db = Database(f"sqlite:///{tmp_path / 'heard.db'}")
    db.migrate()
    yield db
    db.dispose()


def accepted_then_killed(db: Database, uploads: Path) -> tuple[uuid.UUID, dict[str, str]]:
    """A meeting whose run a server answered with 202 and, while the run waited, was killed
    (kill -9: no shutdown of any kind); the meeting and its owner's headers."""
    user, token = add_user(db, "dora")
    meeting_id = create_meeting(db, title="waited", tracks=[TrackSpec("a", str(JFK))],
                                owner=user.owner)  # fmt: skip
    server = subprocess.Popen(
        [sys.executable, "-c", FIRST_SERVER, db.url, str(uploads), str(meeting_id), token],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        answered = server.stdout.readline().strip() if server.stdout else ""
    finally:
        server.kill()
        _, errors = server.communicate()
    assert answered == "202", errors
    return meeting_id, {"Authorization": f"Bearer {token}"}


def finished(client: TestClient, meeting_id: uuid.UUID, headers: dict[str, str]) -> dict[str, Any]:
    """The meeting once it is no longer pending (or interrupted)."""
    deadline = time.monotonic() + 60
    while True:
        shown: dict[str, Any] = client.get(f"/v1/meetings/{meeting_id}", headers=headers).json()
        if shown["status"] not in ("pending", "interrupted"):
            return shown
        assert time.monotonic() < deadline, shown
        time.sleep(0.05)


def test_a_run_accepted_before_its_server_was_killed_is_run_by_the_next_start(
    file_db: Database, tmp_path: Path
) -> None:
    """Issue 57: a 202 is a promise; the run waiting in the queue of a server that is killed
    reads interrupted, and the next server to start on the database runs it."""
    meeting_id, headers = accepted_then_killed(file_db, tmp_path / "uploads")
    assert jobs.view(file_db, meeting_id).status == "interrupted"  # what `heard status` says
    fake = FakeTranscriber({str(JFK): SAID})
    settings = ServerSettings(file_db, tmp_path / "uploads", transcriber=fake)
    with TestClient(create_app(settings)) as client:
        shown = finished(client, meeting_id, headers)
    assert (shown["status"], shown["phrases"]) == ("complete", 1)
    assert fake.calls == [str(JFK)]
    assert get_meeting(file_db, meeting_id).run_by is None  # no run left to take back


def test_without_resume_a_lost_run_reads_interrupted_and_runs_when_asked_again(
    file_db: Database, tmp_path: Path
) -> None:
    """A server started with its resume off (or one that transcribes nothing) leaves a lost
    run as it is: interrupted, until its owner runs the meeting again."""
    meeting_id, headers = accepted_then_killed(file_db, tmp_path / "uploads")
    fake = FakeTranscriber({str(JFK): SAID})
    settings = ServerSettings(file_db, tmp_path / "uploads", transcriber=fake, resume=False)
    with TestClient(create_app(settings)) as client:
        shown = client.get(f"/v1/meetings/{meeting_id}", headers=headers).json()
        listed = client.get("/v1/meetings", headers=headers).json()
        assert (shown["status"], [m["status"] for m in listed]) == ("interrupted", ["interrupted"])
        assert fake.calls == []
        again = client.post(f"/v1/meetings/{meeting_id}/run", headers=headers)
        assert again.status_code == 202, again.text
        assert finished(client, meeting_id, headers)["status"] == "complete"
    assert fake.calls == [str(JFK)]


def test_a_mixed_recording_uploaded_becomes_its_speakers(  # type: ignore[no-untyped-def]
    server, db: Database
) -> None:
    from heard.testing import FakeDiarizer

    client, alice, _ = server
    created = client.post(
        "/v1/meetings",
        json={"title": "call", "participants": [{"name": "call", "speakers": "auto",
                                                 "names": ["ana", "bob"]}]},
        headers=alice,
    )  # fmt: skip
    assert created.status_code == 201, created.text
    mid = created.json()["id"]
    assert created.json()["tracks"][0]["speakers"] == "auto"
    wav = (AUDIO / "stereo_diarization.wav").read_bytes()
    assert client.put(f"/v1/meetings/{mid}/tracks/call", content=wav, headers=alice).is_success
    location = track_states(db, mid)[0].location
    fake = FakeTranscriber({location: [Segment(0.0, 1.0, "hello"), Segment(2.0, 3.0, "hi")]})
    run_pipeline(mid, db=db, transcriber=fake,
                 diarizer=FakeDiarizer({location: [(0.0, 1.2, 0), (1.9, 3.2, 1)]}))  # fmt: skip
    track = client.get(f"/v1/meetings/{mid}", headers=alice).json()["tracks"][0]
    assert (track["speakers"], track["speakers_found"]) == ("auto", 2)
    phrases = client.get(f"/v1/meetings/{mid}/phrases", headers=alice).json()
    assert [(p["participant"], p["text"]) for p in phrases] == [("ana", "hello"), ("bob", "hi")]


@pytest.mark.parametrize("speakers", [0, 17, "many", True, -2, 2.0, "\u00b2"])
def test_a_bad_speaker_count_is_a_422(server, speakers: object) -> None:  # type: ignore[no-untyped-def]
    client, alice, _ = server
    answer = client.post(
        "/v1/meetings",
        json={"title": "call", "participants": [{"name": "call", "speakers": speakers}]},
        headers=alice,
    )
    assert answer.status_code == 422, answer.text
    assert "speakers" in answer.text


def test_a_server_that_cannot_diarize_refuses_a_mixed_recording_at_once(
    db: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from heard.errors import MissingDependencyError

    def missing(package: str) -> Path:
        raise MissingDependencyError(f"diarization needs the package {package!r}, which comes "
                                     "with heard: reinstall heard")  # fmt: skip

    monkeypatch.setattr("heard.diarize.onnx._package_dir", missing)
    app = create_app(ServerSettings(db, tmp_path / "uploads", transcriber=FakeTranscriber({})))
    _, token = add_user(db, "ana")
    with TestClient(app) as client:
        answer = client.post(
            "/v1/meetings",
            json={"title": "call", "participants": [{"name": "call", "speakers": "auto"}]},
            headers={"Authorization": f"Bearer {token}"},
        )
        assert answer.status_code == 503, answer.text
        assert "reinstall heard" in answer.text
        listed = client.get("/v1/meetings", headers={"Authorization": f"Bearer {token}"})
        assert listed.json() == []
