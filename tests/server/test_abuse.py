"""Limits a server on the open internet needs (issue 71): bad tokens rate-limited per client
address, request headers and handshakes that trickle closed, bodies that stall given up,
one token's sockets capped. ``bench/abuse.py`` measures the same against a real server."""

from __future__ import annotations

import socket
import time
from contextlib import ExitStack
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from starlette.websockets import WebSocketDisconnect
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from heard.server import bodies, quotas, transport
from heard.server.app import ServerSettings, create_app
from heard.server.quotas import AUTH_FAILURE_BURST, AuthFailures
from heard.store.database import Database
from heard.store.users import add_user
from heard.testing import ScriptedRecognizer
from tests.server.threaded import serving

FLOOD = ("10.0.0.66", 40000)
"""The address bad tokens come from."""
ELSEWHERE = ("10.0.0.7", 40000)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def scripted(*_: object) -> object:
    return lambda speaker: ScriptedRecognizer([])


@pytest.fixture
def app_and_token(db: Database, tmp_path: Path) -> tuple[object, str]:
    app = create_app(ServerSettings(db, tmp_path / "uploads", recognizers=scripted))  # type: ignore[arg-type]
    _, token = add_user(db, "ana")
    return app, token


def test_an_address_that_sent_too_many_bad_tokens_waits_then_may_try_again() -> None:
    clock = Clock()
    failures = AuthFailures(clock)
    for _ in range(AUTH_FAILURE_BURST):
        assert failures.wait_s("a") == 0
        failures.failed("a")
    assert failures.wait_s("a") == 1
    assert failures.wait_s("b") == 0  # another address is not held for it
    clock.now += 1 / quotas.AUTH_FAILURES_PER_S
    assert failures.wait_s("a") == 0


def test_bad_tokens_from_one_address_get_429s_and_other_addresses_are_served(
    app_and_token: tuple[object, str],
) -> None:
    app, token = app_and_token
    flood = TestClient(app, client=FLOOD)  # type: ignore[arg-type]
    other = TestClient(app, client=ELSEWHERE)  # type: ignore[arg-type]
    answers = [
        flood.get("/v1/meetings", headers={"Authorization": f"Bearer heard_guess{i}"})
        for i in range(AUTH_FAILURE_BURST + 5)
    ]
    assert [a.status_code for a in answers] == [401] * AUTH_FAILURE_BURST + [429] * 5
    assert int(answers[-1].headers["Retry-After"]) >= 1
    assert "too many bad tokens" in answers[-1].text
    assert flood.get("/v1/meetings").status_code == 401  # no token: nothing to look up, no 429
    mine = {"Authorization": f"Bearer {token}"}
    assert other.get("/v1/meetings", headers=mine).status_code == 200
    # a live socket's handshake from the flooding address is held back too
    with (
        pytest.raises(WebSocketDisconnect) as refused,
        flood.websocket_connect(f"/v1/live?token={token}"),
    ):
        pass
    assert "too many bad tokens" in refused.value.reason


def test_bad_tokens_on_live_handshakes_count_too(app_and_token: tuple[object, str]) -> None:
    app, token = app_and_token
    flood = TestClient(app, client=FLOOD)  # type: ignore[arg-type]
    for i in range(AUTH_FAILURE_BURST):
        with (
            pytest.raises(WebSocketDisconnect),
            flood.websocket_connect(f"/v1/live?token=heard_g{i}"),
        ):
            pass
    answer = flood.get("/v1/meetings", headers={"Authorization": f"Bearer {token}"})
    assert answer.status_code == 429


def test_one_token_holds_at_most_its_share_of_live_sockets(
    app_and_token: tuple[object, str],
) -> None:
    app, token = app_and_token
    with serving(app) as host, ExitStack() as held:  # type: ignore[arg-type]
        for _ in range(quotas.SOCKETS_PER_TOKEN):
            held.enter_context(connect(f"ws://{host}/v1/listen?token={token}"))
        with (
            pytest.raises(InvalidStatus) as refused,  # (/v1/listen answers refusals in HTTP)
            connect(f"ws://{host}/v1/listen?token={token}"),
        ):
            pass
        assert refused.value.response.status_code == 429
        held.close()  # the token's sockets closed: it may open one again
        deadline = time.monotonic() + 10
        while True:
            try:
                with connect(f"ws://{host}/v1/listen?token={token}"):
                    break
            except InvalidStatus:
                assert time.monotonic() < deadline, "the closed sockets were never counted out"
                time.sleep(0.1)


def raw(host: str) -> socket.socket:
    name, port = host.split(":")
    sock = socket.create_connection((name, int(port)), timeout=10)
    return sock


def answer_to(sock: socket.socket) -> bytes:
    """What the server sends before it closes the connection."""
    got = b""
    while chunk := sock.recv(4096):
        got += chunk
    return got


@pytest.mark.parametrize(
    "sent",
    [
        b"",
        b"GET /v1/meetings HTTP/1.1\r\nHost: x\r\nAuthoriz",
        b"GET /v1/live HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n",
    ],
    ids=["nothing", "half the headers", "half a handshake"],
)
def test_headers_that_do_not_arrive_in_time_get_a_408_and_the_connection_closed(
    app_and_token: tuple[object, str], monkeypatch: pytest.MonkeyPatch, sent: bytes
) -> None:
    monkeypatch.setattr(transport, "HEADERS_S", 0.5)
    app, _ = app_and_token
    with serving(app) as host, raw(host) as sock:  # type: ignore[arg-type]
        began = time.monotonic()
        sock.sendall(sent)
        got = answer_to(sock)
        took = time.monotonic() - began
    assert got.startswith(b"HTTP/1.1 408"), got
    assert took < 5, f"held {took:.1f} s"


def test_a_json_body_that_stops_arriving_gets_a_408(
    app_and_token: tuple[object, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bodies, "BODY_IDLE_S", 0.5)
    app, token = app_and_token
    with serving(app) as host, raw(host) as sock:  # type: ignore[arg-type]
        sock.sendall(f"POST /v1/meetings HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
                     "Content-Type: application/json\r\nContent-Length: 200\r\n\r\n"
                     '{"title": "stalled'.encode())  # fmt: skip
        got = answer_to(sock)
    assert got.startswith(b"HTTP/1.1 408"), got
    assert b"stopped arriving" in got


def test_a_kept_alive_connection_gets_the_same_deadline_for_its_next_request(
    app_and_token: tuple[object, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(transport, "HEADERS_S", 0.5)
    app, _ = app_and_token
    with serving(app) as host, raw(host) as sock:  # type: ignore[arg-type]
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /v1/meetings HTTP/1.1\r\n")
        got = answer_to(sock)
    assert got.count(b"HTTP/1.1 ") == 2, got
    assert b"HTTP/1.1 408" in got
