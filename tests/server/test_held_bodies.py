"""Issue 57, item 4: what a request writes to the uploads disk counts against its user, and a
body that stops arriving is given up. Before, a Deepgram ``POST /v1/listen`` body was written
before any count and waited on for good: two unfinished ones from one user filled the disk
another user's upload needed."""

from __future__ import annotations

import time
import wave
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from heard.server import bodies
from heard.server.app import ServerSettings, create_app
from heard.speech import Transcription
from heard.store.database import Database
from heard.store.users import add_user
from tests.server.threaded import serving


def _silence(path: Path, n_bytes: int) -> bytes:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1), w.setsampwidth(2), w.setframerate(16_000)
        w.writeframes(bytes(n_bytes))
    return path.read_bytes()


class _HearsNothing:
    """A recognizer that hears nothing in any file."""

    name = "nothing"

    def transcribe(self, audio: object, **_: object) -> Transcription:
        return Transcription(())


def _spooled(uploads: Path) -> list[Path]:
    return [p for p in (uploads / ".transcriptions").glob("*") if p.is_file()]


def test_a_deepgram_body_counts_against_its_users_storage(db: Database, tmp_path: Path) -> None:
    uploads = tmp_path / "uploads"
    app = create_app(ServerSettings(db, uploads, transcriber=_HearsNothing(),
                                    user_storage_bytes=1_000_000))  # fmt: skip
    _, ana = add_user(db, "ana")
    _, ben = add_user(db, "ben")
    big = _silence(tmp_path / "big.wav", 1_200_000)
    small = _silence(tmp_path / "small.wav", 300_000)
    with TestClient(app) as client:  # (the whole body sent before any answer)
        over = client.post("/v1/listen", content=big, headers={"Authorization": f"Token {ana}"})
        within = client.post("/v1/listen", content=small, headers={"Authorization": f"Token {ana}"})
        made = client.post("/v1/meetings", json={"title": "t", "participants": [{"name": "a"}]},
                           headers={"Authorization": f"Bearer {ben}"})  # fmt: skip
        bens = client.put(f"/v1/meetings/{made.json()['id']}/tracks/a", content=big[:900_000],
                          headers={"Authorization": f"Bearer {ben}"})  # fmt: skip
    assert over.status_code == 507, over.text  # (before: written whole, then transcribed)
    assert "past your limit" in over.json()["err_msg"]
    assert within.status_code == 200, within.text  # its bytes given back: the next one fits
    assert bens.status_code == 200, bens.text
    assert _spooled(uploads) == []


@pytest.mark.parametrize("route", ["track", "deepgram"])
def test_a_body_that_stops_arriving_is_given_up_with_nothing_kept(
    db: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, route: str
) -> None:
    monkeypatch.setattr(bodies, "BODY_IDLE_S", 0.5)
    uploads = tmp_path / "uploads"
    app = create_app(ServerSettings(db, uploads, transcriber=_HearsNothing()))
    _, token = add_user(db, "ana")
    body = _silence(tmp_path / "a.wav", 200_000)

    def stalling() -> Iterator[bytes]:
        yield body[:50_000]
        time.sleep(2.5)  # five times the patience, then the client gives up sending

    auth = {"Authorization": f"Bearer {token}"}
    with serving(app) as host, httpx.Client(base_url=f"http://{host}", timeout=30,
                                            headers=auth) as client:  # fmt: skip
        if route == "track":
            made = client.post("/v1/meetings", json={"title": "t",
                                                     "participants": [{"name": "a"}]})  # fmt: skip
            reply = client.put(f"/v1/meetings/{made.json()['id']}/tracks/a", content=stalling())
        else:
            reply = client.post("/v1/listen", content=stalling())
    assert reply.status_code == 408, reply.text
    assert "stopped arriving" in reply.text
    assert [p for p in uploads.rglob("*") if p.is_file()] == []
