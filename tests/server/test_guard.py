"""Who calls and how big the body is, checked before the body is read (heard.server.guard)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from heard.limits import JSON_BODY_BYTES as JSON_LIMIT
from heard.server.app import ServerSettings, create_app
from heard.store.database import Database
from heard.store.users import add_user

CHUNK = 64 * 1024


class Body:
    """An ASGI receive() that hands out ``chunks`` of a body and counts what was read."""

    def __init__(self, chunks: int, *, disconnect_after: int | None = None) -> None:
        self.chunks = chunks
        self.disconnect_after = disconnect_after
        self.read = 0

    async def __call__(self) -> dict[str, Any]:
        if self.disconnect_after is not None and self.read >= self.disconnect_after:
            return {"type": "http.disconnect"}
        self.read += 1
        more = self.read < self.chunks
        return {"type": "http.request", "body": b"x" * CHUNK, "more_body": more}


def call(
    app: FastAPI, method: str, path: str, body: Body, headers: dict[str, str]
) -> tuple[int, dict[str, Any]]:
    """One request straight through the ASGI app; its status and JSON reply."""
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
        "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"",
        "root_path": "", "client": ("127.0.0.1", 1), "server": ("testserver", 80),
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
    }  # fmt: skip
    asyncio.run(app(scope, body, send))  # type: ignore[arg-type]
    start = next(m for m in sent if m["type"] == "http.response.start")
    payload = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], json.loads(payload or b"{}")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[FastAPI, str, str]]:
    db = Database(f"sqlite:///{tmp_path / 'h.db'}")
    app = create_app(ServerSettings(db, tmp_path / "uploads", workspaces=tmp_path / "memory"))
    _, token = add_user(db, "ana")
    with TestClient(app) as client:
        made = client.post("/v1/meetings", json={"title": "t", "participants": [{"name": "a"}]},
                           headers={"Authorization": f"Bearer {token}"})  # fmt: skip
        yield app, token, made.json()["id"]
    db.dispose()


@pytest.mark.parametrize(
    ("method", "path"),
    [("POST", "/v1/memory/evidence"), ("POST", "/v1/meetings"), ("PUT", "/v1/memory/pages/p"),
     ("PUT", "/v1/meetings/{meeting}/tracks/a"), ("POST", "/v1/nothing-here")],
)  # fmt: skip
@pytest.mark.parametrize("auth", ["", "Bearer heard_wrong", "Basic abc"])
def test_no_body_is_read_without_a_valid_token(
    served: tuple[FastAPI, str, str], method: str, path: str, auth: str
) -> None:
    app, _, meeting = served
    body = Body(1600)  # 100 MB, if anyone read it
    headers = {"Content-Type": "application/json", "Content-Length": str(1600 * CHUNK)}
    if auth:
        headers["Authorization"] = auth
    status, reply = call(app, method, path.format(meeting=meeting), body, headers)
    assert (status, reply) == (401, {"detail": "a valid bearer token is required"})
    assert body.read == 0


def test_a_declared_length_over_the_limit_is_refused_unread(
    served: tuple[FastAPI, str, str],
) -> None:
    app, token, _ = served
    body = Body(100)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json",
               "Content-Length": str(JSON_LIMIT + 1)}  # fmt: skip
    status, reply = call(app, "POST", "/v1/memory/recall", body, headers)
    assert status == 413
    assert str(JSON_LIMIT) in reply["detail"]
    assert body.read == 0


def test_a_body_that_grows_past_the_limit_is_cut_off(served: tuple[FastAPI, str, str]) -> None:
    app, token, _ = served
    body = Body(1600)  # no Content-Length: chunked
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    status, reply = call(app, "PUT", "/v1/memory/pages/p", body, headers)
    assert status == 413
    assert reply == {"detail": f"the body is larger than {JSON_LIMIT} bytes"}
    assert body.read == JSON_LIMIT // CHUNK + 1  # read up to the limit, not one chunk more


def test_evidence_may_be_larger_than_other_json(served: tuple[FastAPI, str, str]) -> None:
    _, token, _ = served
    app = served[0]
    utterances = [{"id": f"d{i}", "speaker": "ana", "text": "w" * 1000} for i in range(1500)]
    with TestClient(app) as client:
        stored = client.post("/v1/memory/evidence", json={"utterances": utterances},
                             headers={"Authorization": f"Bearer {token}"})  # fmt: skip
        padded = {"query": "w" * 1000, "pad": "x" * JSON_LIMIT}
        too_big = client.post("/v1/memory/recall", json=padded,
                              headers={"Authorization": f"Bearer {token}"})  # fmt: skip
    assert stored.status_code == 201, stored.text  # about 1.6 MB
    assert too_big.status_code == 413


def test_an_upload_the_client_abandons_leaves_no_file(
    served: tuple[FastAPI, str, str], tmp_path: Path
) -> None:
    app, token, meeting = served
    body = Body(1000, disconnect_after=5)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "audio/wav"}
    with pytest.raises(Exception):  # noqa: B017, PT011 - the request simply ends
        call(app, "PUT", f"/v1/meetings/{meeting}/tracks/a", body, headers)
    assert [p.name for p in (tmp_path / "uploads").rglob("*") if p.is_file()] == []


def _preflight(client: TestClient, origin: str) -> dict[str, str]:
    response = client.options(
        "/v1/memory/recall",
        headers={"Origin": origin, "Access-Control-Request-Method": "POST",
                 "Access-Control-Request-Headers": "authorization, content-type"},
    )  # fmt: skip
    return dict(response.headers)


def test_no_other_origin_may_call_by_default(served: tuple[FastAPI, str, str]) -> None:
    app, token, _ = served
    with TestClient(app) as client:
        assert "access-control-allow-origin" not in _preflight(client, "https://evil.example")
        answered = client.get("/v1/me", headers={"Authorization": f"Bearer {token}",
                                                 "Origin": "https://evil.example"})  # fmt: skip
    assert answered.status_code == 200
    assert "access-control-allow-origin" not in answered.headers  # the browser hides it


def test_an_allowed_origin_may_call_and_no_other(tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path / 'h.db'}")
    settings = ServerSettings(db, tmp_path / "uploads", cors_origins=("https://app.example",))
    app = create_app(settings)
    _, token = add_user(db, "ana")
    with TestClient(app) as client:
        allowed = _preflight(client, "https://app.example")
        assert allowed["access-control-allow-origin"] == "https://app.example"
        assert "authorization" in allowed["access-control-allow-headers"].lower()
        assert "access-control-allow-origin" not in _preflight(client, "https://evil.example")
        answered = client.get("/v1/me", headers={"Authorization": f"Bearer {token}",
                                                 "Origin": "https://app.example"})  # fmt: skip
        assert answered.headers["access-control-allow-origin"] == "https://app.example"
    db.dispose()


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "/v1/meetings"), ("POST", "/v1/memory/recall"), ("POST", "/v1/audio/transcriptions"),
     ("POST", "/v1/listen")],
)  # fmt: skip
def test_a_store_that_cannot_be_read_is_a_503_before_any_route(
    tmp_path: Path, method: str, path: str
) -> None:
    """Issue 57: the token check ran before the error handlers, so a locked or broken database
    was a 500 on every route, not the documented 503."""
    db = Database(f"sqlite:///{tmp_path / 'h.db'}")
    app = create_app(ServerSettings(db, tmp_path / "uploads", workspaces=tmp_path / "memory"))
    _, token = add_user(db, "ana")
    db.dispose()
    (tmp_path / "h.db").write_bytes(b"not a database, whatever it was" * 100)
    status, reply = call(app, method, path, Body(0), {"Authorization": f"Bearer {token}"})
    assert status == 503
    assert str(tmp_path) not in json.dumps(reply)
    assert "cannot be reached or written just now" in json.dumps(reply)
