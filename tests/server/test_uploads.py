"""Uploads of one track that race: the track ends up with exactly one complete upload; what
is left of uploads cut short, and of those in flight when a server starts beside them."""

from __future__ import annotations

import errno
import hashlib
import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import update

from heard.errors import StoreError
from heard.leftovers import maker_prefix
from heard.meetings import uploads as kept_uploads
from heard.server.app import ServerSettings, create_app
from heard.server.routes import meetings as meetings_routes
from heard.store.database import Database
from heard.store.models import AudioTrack
from heard.store.tracks import claim_track
from heard.store.users import add_user
from heard.store.views import track_states
from tests.conftest import AUDIO
from tests.server.threaded import served_for_a_user


def start(db: Database, uploads: Path) -> tuple[TestClient, dict[str, str], str]:
    _, token = add_user(db, "alice")
    client = TestClient(create_app(ServerSettings(db, uploads)))
    headers = {"Authorization": f"Bearer {token}"}
    created = client.post(
        "/v1/meetings", json={"title": "race", "participants": [{"name": "a"}]}, headers=headers
    )
    assert created.status_code == 201, created.text
    return client, headers, created.json()["id"]


def test_racing_uploads_leave_one_whole_upload_and_no_debris(db: Database, tmp_path: Path) -> None:
    uploads = tmp_path / "uploads"
    client, headers, mid = start(db, uploads)
    bodies = [(AUDIO / "jfk.flac").read_bytes(), (AUDIO / "stereo_diarization.wav").read_bytes()]
    sent = {hashlib.sha256(b).hexdigest() for b in bodies}

    def put(i: int) -> int:
        body = bodies[i % 2]
        return client.put(f"/v1/meetings/{mid}/tracks/a", content=body, headers=headers).status_code

    with client, ThreadPoolExecutor(8) as pool:
        codes = list(pool.map(put, range(16)))
    assert codes == [200] * 16
    stored = [p for p in uploads.rglob("*") if p.is_file()]
    assert len(stored) == 1, stored  # the winner; every replaced upload is gone, no .part left
    (track,) = track_states(db, mid)
    assert track.location == str(stored[0])
    assert track.status.value == "pending"
    assert hashlib.sha256(stored[0].read_bytes()).hexdigest() in sent  # byte for byte one upload


def test_a_track_being_transcribed_refuses_new_audio(db: Database, tmp_path: Path) -> None:
    uploads = tmp_path / "uploads"
    client, headers, mid = start(db, uploads)
    wav = (AUDIO / "stereo_diarization.wav").read_bytes()
    with client:
        assert client.put(f"/v1/meetings/{mid}/tracks/a", content=wav, headers=headers).is_success
        (track,) = track_states(db, mid)
        assert claim_track(db, track.id, datetime.now(UTC)) is not None
        refused = client.put(f"/v1/meetings/{mid}/tracks/a", content=wav, headers=headers)
    assert refused.status_code == 409
    assert "being transcribed" in refused.json()["detail"]
    (after,) = track_states(db, mid)
    assert after.location == track.location  # the audio being read is the audio it keeps
    assert [p for p in uploads.rglob("*") if p.is_file()] == [Path(track.location)]


def dead_pid() -> int:
    """The number of a process of this host that has ended."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_restart_removes_the_partial_uploads_of_processes_that_are_gone_only(
    db: Database, tmp_path: Path, another_process: int
) -> None:
    """Issue 57: a crashed upload leaves nothing after a restart, and a server starting never
    removes an upload that a server beside it on the same folder is receiving."""
    uploads = tmp_path / "uploads"
    folder = uploads / "someone" / str(uuid.uuid4())
    folder.mkdir(parents=True)
    host = maker_prefix().split(".")[0]
    track, upload = uuid.uuid4(), uuid.uuid4().hex
    names = {
        "killed mid-upload": f".{host}.{dead_pid()}.{track}.{upload}.part",
        "being received beside it": f".{host}.{another_process}.{track}.{upload}.part",
        "another machine's, now": f".elsewhere.12.{track}.{upload}.part",
        "another machine's, two days old": f".elsewhere.13.{track}.{upload}.part",
        "a dead process's number, now another's": f".{host}.{another_process}.{track}.0.part",
        "an older heard's, naming no process": f".{track}.{upload}.part",
    }
    for name in names.values():
        (folder / name).write_bytes(b"half an upload")
    two_days = time.time() - 2 * 86400
    os.utime(folder / names["another machine's, two days old"], (two_days, two_days))
    before_it_started = time.time() - 3600
    os.utime(folder / names["a dead process's number, now another's"],
             (before_it_started, before_it_started))  # fmt: skip
    create_app(ServerSettings(db, uploads))
    left = {p.name for p in folder.iterdir()}
    assert left == {names["being received beside it"], names["another machine's, now"]}


def test_a_server_starting_beside_one_receiving_an_upload_leaves_the_upload_whole(
    tmp_path: Path,
) -> None:
    """Issue 57: two servers on one uploads folder; the second starts (in a process of its
    own) while the first is half-way through an upload, which is then kept, not a 422."""
    body = (AUDIO / "jfk.flac").read_bytes()
    half_sent, go_on = threading.Event(), threading.Event()

    def halves() -> Iterator[bytes]:
        yield body[: len(body) // 2]
        half_sent.set()
        assert go_on.wait(60)
        yield body[len(body) // 2 :]

    with (
        served_for_a_user(tmp_path) as (url, token, db),
        httpx.Client(
            base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=60
        ) as client,
    ):
        created = client.post("/v1/meetings", json={"title": "two servers",
                                                     "participants": [{"name": "a"}]})  # fmt: skip
        mid = created.json()["id"]
        with ThreadPoolExecutor(1) as pool:
            reply = pool.submit(client.put, f"/v1/meetings/{mid}/tracks/a", content=halves())
            try:
                assert half_sent.wait(60)
                wait_for(lambda: list((tmp_path / "uploads").rglob("*.part")), "the upload")
                second = subprocess.run(
                    [sys.executable, "-c", SECOND_SERVER, db.url, str(tmp_path / "uploads")],
                    capture_output=True, text=True, timeout=120,
                )  # fmt: skip
            finally:
                go_on.set()
            assert second.returncode == 0, second.stderr
            assert reply.result().status_code == 200, reply.result().text
        (track,) = track_states(db, mid)
        assert Path(track.location).read_bytes() == body


SECOND_SERVER = """
import sys
from pathlib import Path
from heard.server.app import ServerSettings, create_app
from heard.store.database import Database
db = Database(sys.argv[1])
create_app(ServerSettings(db, Path(sys.argv[2])))
db.dispose()
"""
"""What a second ``heard serve`` on the same database and uploads does as it starts."""


def wait_for(condition: Callable[[], object], what: str) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


class FullDisk:
    """An upload's file on a device with no room left (ENOSPC on the first write)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __enter__(self) -> FullDisk:
        self.path.touch()
        return self

    def __exit__(self, *_: object) -> None:
        pass

    def write(self, _: bytes) -> int:
        raise OSError(errno.ENOSPC, "No space left on device", str(self.path))


def test_a_full_uploads_disk_is_a_507_with_one_line_and_no_debris(
    db: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    uploads = tmp_path / "uploads"
    client, headers, mid = start(db, uploads)
    monkeypatch.setattr(kept_uploads, "open_upload", FullDisk)
    reply = client.put(
        f"/v1/meetings/{mid}/tracks/a", content=(AUDIO / "jfk.flac").read_bytes(), headers=headers
    )
    assert reply.status_code == 507
    assert reply.json() == {
        "detail": "the server has no room for this upload now; nothing was kept"
    }
    assert str(tmp_path) not in reply.text
    assert "No space left on device" in caplog.text  # the operator's log says what happened
    assert [p for p in uploads.rglob("*") if p.is_file()] == []
    assert [t.location for t in track_states(db, mid)] == [""]


def test_a_database_that_cannot_be_written_is_a_503_that_names_no_path(
    db: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    client, headers, _ = start(db, tmp_path / "uploads")

    def full(*_: object, **__: object) -> None:
        raise StoreError(
            f"database error at sqlite:///{tmp_path}/heard.db: database or disk is full"
        )

    monkeypatch.setattr(meetings_routes.jobs, "submit", full)
    reply = client.post(
        "/v1/meetings", json={"title": "t", "participants": [{"name": "b"}]}, headers=headers
    )
    assert reply.status_code == 503
    assert str(tmp_path) not in reply.text
    assert "sqlite" not in reply.text


def test_a_tracks_error_names_no_server_path(db: Database, tmp_path: Path) -> None:
    uploads = tmp_path / "uploads"
    client, headers, mid = start(db, uploads)
    body = (AUDIO / "jfk.flac").read_bytes()
    assert client.put(f"/v1/meetings/{mid}/tracks/a", content=body, headers=headers).is_success
    (track,) = track_states(db, mid)
    with db.session() as s:
        s.execute(
            update(AudioTrack)
            .where(AudioTrack.id == track.id)
            .values(last_error=f"{track.location}: cannot read as audio (in {uploads})")
        )
    shown = client.get(f"/v1/meetings/{mid}", headers=headers).json()["tracks"][0]["last_error"]
    assert str(tmp_path) not in shown
    assert shown.startswith("the upload: cannot read as audio")
    # as OSError quotes a path (one with a space, too), and as a transcriber may
    spaced = tmp_path / "my data" / "models"
    errors = [
        f"[Errno 28] No space left on device: '{uploads}'",
        f'OSError: cannot open "{spaced}/tiny.bin"',
        f"RuntimeError: at {spaced}",
    ]
    for error in errors:
        with db.session() as s:
            s.execute(update(AudioTrack).where(AudioTrack.id == track.id)
                      .values(last_error=error))  # fmt: skip
        reply = client.get(f"/v1/meetings/{mid}", headers=headers).json()
        shown = reply["tracks"][0]["last_error"]
        assert str(tmp_path) not in shown
        assert "data" not in shown  # no piece of the path after a space
        assert "<server path>" in shown


def test_a_track_longer_than_the_limit_is_a_413_naming_it_before_any_decoding(
    db: Database, tmp_path: Path
) -> None:
    _, token = add_user(db, "alice")
    headers = {"Authorization": f"Bearer {token}"}
    uploads = tmp_path / "uploads"
    with TestClient(create_app(ServerSettings(db, uploads, max_track_s=5.0))) as client:
        meeting = {"title": "t", "participants": [{"name": "a"}]}
        mid = client.post("/v1/meetings", headers=headers, json=meeting).json()["id"]
        reply = client.put(f"/v1/meetings/{mid}/tracks/a", headers=headers,
                           content=(AUDIO / "jfk.flac").read_bytes())  # fmt: skip
    assert reply.status_code == 413
    assert reply.json()["detail"] == (
        "a's upload: 11 s of audio; a track may hold at most 5 s ($HEARD_MAX_TRACK_S)"
    )
    assert [p for p in uploads.rglob("*") if p.is_file()] == []
