"""Issue 45's faults of ``heard serve``: files that lie about their length, a stop while a file
is transcribed, upload files left by killed requests, a full ``$TMPDIR``, a user's storage, and
the words of its start-up errors."""

from __future__ import annotations

import errno
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from heard.server import quotas, spool
from heard.server.app import ServerSettings, create_app
from heard.speech import Segment, Transcription
from heard.store.database import Database
from heard.store.users import add_user
from heard.testing import FakeTranscriber, forge_length, silent_audio
from tests.conftest import AUDIO
from tests.server.threaded import serving

JFK = AUDIO / "jfk.flac"


@pytest.fixture
def forged(tmp_path: Path) -> dict[str, Path]:
    """Two and a half minutes of silence whose headers lie: a FLAC that states no length (as a
    stream's encoder leaves it) and an Ogg Opus that states 5 s."""
    flac = forge_length(silent_audio(tmp_path / "unstated.flac", 150), 0)
    opus = forge_length(silent_audio(tmp_path / "five_seconds.opus", 150, "opus"), 5)
    return {"flac": flac, "opus": opus}


def _client(db: Database, tmp_path: Path, **settings: Any) -> tuple[TestClient, dict[str, str]]:
    app = create_app(ServerSettings(db, tmp_path / "uploads", **settings))
    _, token = add_user(db, "ana")
    return TestClient(app, raise_server_exceptions=False), {"Authorization": f"Bearer {token}"}


def test_files_that_lie_about_their_length_are_refused_before_any_decoding(
    db: Database, tmp_path: Path, forged: dict[str, Path]
) -> None:
    """Their packets are counted (no decoding): the FLAC holds more than the server's limit,
    the Opus far more than its header states. Neither reaches the recognizer, on any route."""
    fake = FakeTranscriber({})
    client, auth = _client(db, tmp_path, transcriber=fake, max_track_s=120.0)
    with client:
        flac, opus = (
            client.post(
                "/v1/audio/transcriptions",
                data={"model": "whisper-1"},
                headers=auth,
                files={"file": (path.name, path.read_bytes())},
            )
            for path in (forged["flac"], forged["opus"])
        )
        listen = client.post("/v1/listen", content=forged["flac"].read_bytes(), headers=auth)
        made = client.post("/v1/meetings", json={"title": "t", "participants": [{"name": "a"}]},
                           headers=auth).json()  # fmt: skip
        track = client.put(f"/v1/meetings/{made['id']}/tracks/a",
                           content=forged["opus"].read_bytes(), headers=auth)  # fmt: skip
    assert flac.status_code == 413, flac.text
    assert flac.json()["error"]["message"] == (
        "unstated.flac: over 2 min of audio; a track may hold at most 2 min ($HEARD_MAX_TRACK_S)"
    )
    assert opus.status_code == 400, opus.text
    assert "its header says 5.01 s of audio but its packets hold" in opus.text
    assert listen.status_code == 413, listen.text  # past the longest track: 413 (issue 57)
    assert "over 2 min of audio" in listen.json()["err_msg"]
    assert track.status_code == 422, track.text
    assert "header says" in track.json()["detail"]
    assert fake.calls == []


def test_an_honest_file_is_measured_as_its_header_says(tmp_path: Path) -> None:
    from heard.asr.audio import measure_audio, probe_audio

    for path in (silent_audio(tmp_path / "a.flac", 150), silent_audio(tmp_path / "a.opus", 150,
                                                                     "opus")):  # fmt: skip
        assert measure_audio(path).duration_s == pytest.approx(
            probe_audio(path).duration_s, abs=0.3
        )
    assert measure_audio(JFK).duration_s == pytest.approx(11.0, abs=0.1)
    # files joined end to end (a chained Ogg): the header tells of the last part only, and
    # each part's times start again; not a lie, measured whole
    part = silent_audio(tmp_path / "part.opus", 20, "opus").read_bytes()
    joined = tmp_path / "joined.opus"
    joined.write_bytes(part * 10)
    assert probe_audio(joined).duration_s == pytest.approx(20.0, abs=0.5)
    assert measure_audio(joined, 3600).duration_s == pytest.approx(200.0, abs=1.0)


class Unheeding(FakeTranscriber):
    """A recognizer in the middle of one long segment: it looks at nothing until it is done."""

    def __init__(self) -> None:
        super().__init__({})
        self.started, self.release = threading.Event(), threading.Event()

    def transcribe(self, audio: Any, **options: Any) -> Transcription:
        self.started.set()
        self.release.wait(60)
        return Transcription((Segment(0.0, 1.0, "ask not"),), "en")


def test_a_stop_answers_a_transcription_in_flight_with_a_503_in_time(
    db: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGTERM while a file is transcribed and the recognizer is deep in a segment: uvicorn
    cancels what still runs after its grace (3 s here), so the answer must come before: a 503
    saying why (before, the connection was dropped). The upload's file goes once the
    recognizer lets go."""
    monkeypatch.setattr(quotas, "STOP_ANSWER_S", 0.5)
    fake = Unheeding()
    app = create_app(ServerSettings(db, tmp_path / "uploads", transcriber=fake))
    _, token = add_user(db, "ana")
    replies: list[httpx.Response | Exception] = []
    with serving(app, timeout_graceful_shutdown=3) as host:

        def post() -> None:
            try:
                with JFK.open("rb") as f:
                    replies.append(httpx.post(
                        f"http://{host}/v1/audio/transcriptions", data={"model": "whisper-1"},
                        files={"file": f}, headers={"Authorization": f"Bearer {token}"},
                        timeout=30))  # fmt: skip
            except httpx.HTTPError as e:
                replies.append(e)

        posting = threading.Thread(target=post)
        posting.start()
        assert fake.started.wait(30)
        assert list((tmp_path / "uploads" / spool.FOLDER).iterdir())  # the upload's file
    posting.join(30)
    fake.release.set()
    assert len(replies) == 1
    reply = replies[0]
    assert isinstance(reply, httpx.Response), reply
    assert reply.status_code == 503
    assert "shutting down" in reply.json()["error"]["message"]
    deadline = time.monotonic() + 10
    while list((tmp_path / "uploads" / spool.FOLDER).iterdir()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert list((tmp_path / "uploads" / spool.FOLDER).iterdir()) == []


def test_upload_files_of_processes_that_are_gone_are_removed_at_start(
    db: Database, tmp_path: Path, another_process: int
) -> None:
    """kill -9 mid-request leaves its upload's file (up to 512 MB each); the next server
    removes it, and never the file of a process still running beside it."""
    folder = tmp_path / "uploads" / spool.FOLDER
    folder.mkdir(parents=True)
    _, here = spool.spool_file(tmp_path / "uploads")
    host = here.name.split(".")[0]
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    names = {
        "killed": f"{host}.{dead}.abc.audio",
        "running": f"{host}.{another_process}.abc.audio",
        "older heard": "tmpk2j3h4.audio",
        "another machine's, now": "elsewhere.12.abc.audio",
        "another machine's, two days old": "elsewhere.13.abc.audio",
        "a dead process's number, now another's": f"{host}.{another_process}.old.audio",
    }
    for name in names.values():
        (folder / name).write_bytes(b"x" * 1000)
    two_days = time.time() - 2 * 86400
    os.utime(folder / names["another machine's, two days old"], (two_days, two_days))
    before_it_started = time.time() - 3600
    os.utime(folder / names["a dead process's number, now another's"],
             (before_it_started, before_it_started))  # fmt: skip
    create_app(ServerSettings(db, tmp_path / "uploads"))
    left = {p.name for p in folder.iterdir()}
    assert left == {names["running"], names["another machine's, now"]}


def test_a_full_tmpdir_is_a_507_not_a_400(
    db: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The form's file goes to $TMPDIR before heard's route runs; a full one is the server's
    fault, as a full uploads volume is."""
    import starlette.formparsers

    real = starlette.formparsers.SpooledTemporaryFile

    class Full(real):  # type: ignore[misc, valid-type]
        def write(self, data: Any) -> int:
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(starlette.formparsers, "SpooledTemporaryFile", Full)
    client, auth = _client(db, tmp_path, transcriber=FakeTranscriber({}))
    with client, JFK.open("rb") as f:
        reply = client.post("/v1/audio/transcriptions", data={"model": "whisper-1"},
                            files={"file": f}, headers=auth)  # fmt: skip
    assert reply.status_code == 507, reply.text
    assert reply.json()["error"]["message"] == "the server has no room for the file"


def test_a_users_stored_audio_has_a_limit(db: Database, tmp_path: Path) -> None:
    """Runs were capped and bytes were not: 29 meetings of 3.8 MB in a minute. Past the user's
    limit an upload is a 507 and nothing is kept; another user is not affected."""
    jfk = JFK.read_bytes()  # 184 KB
    client, auth = _client(db, tmp_path, user_storage_bytes=len(jfk) * 2 + 1000)
    _, ben = add_user(db, "ben")
    with client:

        def upload(headers: dict[str, str]) -> httpx.Response:
            made = client.post("/v1/meetings", headers=headers,
                               json={"title": "t", "participants": [{"name": "a"}]})  # fmt: skip
            return client.put(f"/v1/meetings/{made.json()['id']}/tracks/a", content=jfk,
                              headers=headers)  # fmt: skip

        first, second, third = (upload(auth) for _ in range(3))
        bens = upload({"Authorization": f"Bearer {ben}"})
    assert [first.status_code, second.status_code, third.status_code] == [200, 200, 507]
    assert "past your limit of" in third.json()["detail"]
    assert bens.status_code == 200
    kept = [p for p in (tmp_path / "uploads").rglob("*") if p.is_file()]
    assert len(kept) == 3  # ana's two and ben's one; nothing of the third


def test_parallel_uploads_share_one_users_room(db: Database, tmp_path: Path) -> None:
    """Four uploads of 400 KB at once against a 1 MB limit, their bytes arriving side by side:
    each sees the others' bytes as they come, so at most two are kept (before, each saw the
    room left when it began and all four were kept)."""
    import wave

    track = tmp_path / "silence.wav"
    with wave.open(str(track), "wb") as w:
        w.setnchannels(1), w.setsampwidth(2), w.setframerate(16_000)
        w.writeframes(bytes(400_000))
    body = track.read_bytes()
    app = create_app(ServerSettings(db, tmp_path / "uploads", user_storage_bytes=1_000_000))
    _, token = add_user(db, "ana")
    auth = {"Authorization": f"Bearer {token}"}
    statuses: list[int] = []
    with serving(app) as host, httpx.Client(base_url=f"http://{host}", headers=auth) as client:
        ids = [client.post("/v1/meetings", json={"title": "t", "participants": [{"name": "a"}]}
                           ).json()["id"] for _ in range(4)]  # fmt: skip
        gate = threading.Barrier(4)

        def chunks() -> Iterator[bytes]:
            gate.wait(10)
            for i in range(0, len(body), 40_000):
                yield body[i : i + 40_000]
                time.sleep(0.05)

        def upload(meeting: str) -> None:
            with httpx.Client(base_url=f"http://{host}", headers=auth, timeout=60) as mine:
                statuses.append(mine.put(f"/v1/meetings/{meeting}/tracks/a",
                                         content=chunks()).status_code)  # fmt: skip

        uploads = [threading.Thread(target=upload, args=(m,)) for m in ids]
        for thread in uploads:
            thread.start()
        for thread in uploads:
            thread.join(60)
    kept = sum(p.stat().st_size for p in (tmp_path / "uploads").rglob("*") if p.is_file())
    assert sorted(statuses) in ([200, 200, 507, 507], [200, 507, 507, 507]), statuses
    assert kept <= 1_000_000


def test_a_port_in_use_is_said_in_words(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = {**os.environ, "HEARD_DATABASE_URL": f"sqlite:///{tmp_path / 'h.db'}"}
        done = subprocess.run([sys.executable, "-m", "heard", "serve", "--port", str(port)],
                              capture_output=True, text=True, env=env, timeout=120)  # fmt: skip
    assert done.returncode == 2
    assert f"another program is using port {port}" in done.stderr
    assert "Errno" not in done.stderr


def test_undecodable_input_is_said_without_errno(tmp_path: Path) -> None:
    junk = tmp_path / "junk.wav"
    junk.write_bytes(bytes(range(256)) * 20)
    env = {**os.environ, "HEARD_DATABASE_URL": f"sqlite:///{tmp_path / 'h.db'}"}
    done = subprocess.run([sys.executable, "-m", "heard", "transcribe", f"ana={junk}"],
                          capture_output=True, text=True, env=env, timeout=120)  # fmt: skip
    assert done.returncode != 0
    assert "junk.wav: cannot read as audio (Invalid data found when processing input)" in (
        done.stderr
    )
    assert "Errno" not in done.stderr
