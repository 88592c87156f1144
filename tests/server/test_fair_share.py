"""No client starves another: over a real uvicorn server, a flooder is stopped by its rate
limit while another user's REST calls and live captions go on, and a client that does not
read its messages is closed. (How much the flood slows the others is measured, not asserted:
bench/serve.py.)"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect

import heard.server.quotas as quotas_module
import heard.server.session as session_module
from heard.server.app import ServerSettings, create_app
from heard.server.transport import MAX_HEADERS, MAX_LINE_BYTES
from heard.store.database import Database
from heard.store.users import add_user
from tests.server.threaded import serving


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, str, str]]:
    """A real server in a thread of this process: its host:port and two users' tokens."""
    db = Database(f"sqlite:///{tmp_path / 'h.db'}")
    app = create_app(ServerSettings(db, tmp_path / "uploads", workspaces=tmp_path / "memory"))
    _, flooder = add_user(db, "flooder")
    _, other = add_user(db, "other")
    try:
        with serving(app) as host:
            yield host, flooder, other
    finally:
        db.dispose()


def partial(i: int, text: str = "") -> str:
    return json.dumps({"t_ms": i, "type": "partial", "text": text or f"word {i} and more"})


def test_a_flooder_is_stopped_while_others_are_served(served: tuple[str, str, str]) -> None:
    host, flooder_token, other_token = served
    other = {"Authorization": f"Bearer {other_token}"}
    with httpx.Client(base_url=f"http://{host}", headers=other, timeout=30) as rest:
        stored = rest.post(
            "/v1/memory/evidence",
            json={
                "utterances": [
                    {"id": "d1", "speaker": "Maya", "text": "The Lisbon office opens in April."}
                ]
            },
        )
        assert stored.status_code == 201
        closed: list[ConnectionClosed] = []

        def flood() -> None:
            # as a browser's socket does, its library takes in what comes (it just never looks)
            with connect(f"ws://{host}/v1/live?token={flooder_token}", max_queue=None) as ws:
                try:
                    for i in range(100_000):  # as fast as it can, never reading
                        ws.send(partial(i))
                except ConnectionClosed as e:
                    closed.append(e)

        flooding = threading.Thread(target=flood)
        flooding.start()
        answered = []
        while flooding.is_alive() or len(answered) < 10:
            answered.append(rest.post("/v1/memory/recall", json={"query": "Lisbon office"}))
        flooding.join(timeout=60)
        with connect(f"ws://{host}/v1/live?token={other_token}") as ws:
            for i, text in enumerate(
                ["when does", "when does the Lisbon", "when does the Lisbon office"]
            ):
                ws.send(json.dumps({"t_ms": 300 * i, "type": "partial", "text": text}))
                assert json.loads(ws.recv(timeout=30))["type"] == "hypothesis"
    assert all(r.status_code == 200 and r.json()[0]["id"] == "d1" for r in answered)
    assert len(closed) == 1
    assert closed[0].rcvd is not None
    assert closed[0].rcvd.code == 1008
    assert "rate limit" in closed[0].rcvd.reason


class SilentSocket:
    """A WebSocket client that never reads a byte: the handshake, then masked text frames
    over a socket with a small receive buffer."""

    def __init__(self, host: str, path: str) -> None:
        address, port = host.split(":")
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        self.sock.connect((address, int(port)))
        self.sock.settimeout(5)  # a server that stops reading it must not hang the test
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(
            f"GET {path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
            "Sec-WebSocket-Version: 13\r\n\r\n".encode()
        )
        reply = b""
        while b"\r\n\r\n" not in reply:
            reply += self.sock.recv(1)  # the handshake's reply, and nothing after it
        assert reply.startswith(b"HTTP/1.1 101"), reply

    def send(self, text: str) -> None:
        payload = text.encode()
        mask = os.urandom(4)
        n = len(payload)
        size = bytes([0x80 | n]) if n < 126 else (
            bytes([0x80 | 126]) + n.to_bytes(2, "big") if n < 65536
            else bytes([0x80 | 127]) + n.to_bytes(8, "big")
        )  # fmt: skip
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(b"\x81" + size + mask + masked)

    def close(self) -> None:
        self.sock.close()

    def read_close(self) -> tuple[int, str] | None:
        """Read what the server sent until it ends the connection: its close frame's code
        and reason (None: it sent none)."""
        data = b""
        with contextlib.suppress(OSError):
            while chunk := self.sock.recv(65536):
                data += chunk
        at = 0
        while at + 2 <= len(data):  # the server's frames: unmasked
            opcode, size, at = data[at] & 0x0F, data[at + 1] & 0x7F, at + 2
            if size >= 126:
                width = 2 if size == 126 else 8
                size, at = int.from_bytes(data[at : at + width], "big"), at + width
            if opcode == 0x8:
                payload = data[at : at + size]
                return int.from_bytes(payload[:2], "big"), payload[2:].decode()
            at += size
        return None


def test_a_client_that_does_not_read_is_closed(
    served: tuple[str, str, str], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(session_module, "SEND_TIMEOUT_S", 1.0)
    caplog.set_level(logging.WARNING, "heard.server.session")
    host, token, other_token = served
    silent = SilentSocket(host, f"/v1/live?token={token}")
    big = "x" * 19_000  # one word: cheap to stabilize, 19 KB to send back (texts hold 20,000)
    deadline = time.monotonic() + 60
    try:
        i = 0
        while "not reading its messages, closed" not in caplog.text:
            assert time.monotonic() < deadline, "a client that does not read was kept"
            with contextlib.suppress(OSError):  # once closed, its sends may fail
                silent.send(partial(i, f"{big}{i}"))
            i += 1
            time.sleep(0.02)  # within the rate limit
        # reading again at once, it gets what was on its way, then the reason
        assert silent.read_close() == (1008, "not reading: messages waited too long or piled up")
    finally:
        silent.close()
    # and everyone else is served as before
    with connect(f"ws://{host}/v1/live?token={other_token}") as ws:
        ws.send(partial(0, "still here"))
        assert json.loads(ws.recv(timeout=30))["type"] == "hypothesis"


def test_a_client_that_takes_nothing_not_even_pings_is_closed(tmp_path: Path) -> None:
    """Messages too small to back up within the time the keepalive gives: the server's pings
    go unanswered and the connection is closed with 1011, as docs/server.md says."""
    db = Database(f"sqlite:///{tmp_path / 'h.db'}")
    app = create_app(ServerSettings(db, tmp_path / "uploads", workspaces=tmp_path / "memory"))
    _, token = add_user(db, "silent")
    try:
        with serving(app, ws_ping_interval=0.5, ws_ping_timeout=0.5) as host:
            silent = SilentSocket(host, f"/v1/live?token={token}")
            try:
                silent.send(partial(0, "hello there"))
                time.sleep(3)  # not reading: neither its hypothesis nor the pings
                assert silent.read_close() == (1011, "keepalive ping timeout")
            finally:
                silent.close()
    finally:
        db.dispose()


def closed_with(host: str, token: str, frames: int) -> ConnectionClosed | None:
    """Send ``frames`` events as fast as they go, then read until each is answered; how the
    server closed the connection (None: it answered them all)."""
    try:
        with connect(f"ws://{host}/v1/live?token={token}", max_queue=None) as ws:
            for i in range(frames):
                ws.send(partial(i))
            answered = 0
            while answered < frames:
                answered += json.loads(ws.recv(timeout=30))["type"] == "hypothesis"
    except ConnectionClosed as e:
        return e
    return None


@pytest.fixture
def three_users(tmp_path: Path) -> Iterator[tuple[str, list[str]]]:
    db = Database(f"sqlite:///{tmp_path / 'h.db'}")
    app = create_app(ServerSettings(db, tmp_path / "uploads", workspaces=tmp_path / "memory"))
    tokens = [add_user(db, name)[1] for name in ("ana", "bo", "cy")]
    try:
        with serving(app) as host:
            yield host, tokens
    finally:
        db.dispose()


def at_once(host: str, tokens: list[str], frames: int) -> list[ConnectionClosed | None]:
    results: list[ConnectionClosed | None] = []
    threads = [
        threading.Thread(target=lambda t=t: results.append(closed_with(host, t, frames)))
        for t in tokens
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def test_the_limit_is_the_tokens_over_all_its_connections(
    three_users: tuple[str, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two connections of one token, each under the burst, together over it: one is closed
    (or both, as their frames interleave); two connections of two tokens, the same sizes, are
    both served."""
    monkeypatch.setattr(quotas_module, "EVENT_BURST", 300)
    monkeypatch.setattr(quotas_module, "EVENTS_PER_S", 1)
    host, (ana, bo, cy) = three_users
    assert at_once(host, [bo, cy], 200) == [None, None]
    same = at_once(host, [ana, ana], 200)
    closed = [r for r in same if r is not None]
    assert closed, "one token sent 400 events under a burst of 300"
    assert all(r.rcvd is not None and r.rcvd.code == 1008 for r in closed)


def test_a_token_closed_for_its_rate_is_refused_a_while_and_others_are_not(
    served: tuple[str, str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(quotas_module, "EVENT_BURST", 50)
    monkeypatch.setattr(quotas_module, "EVENTS_PER_S", 1)
    monkeypatch.setattr(quotas_module, "BARRED_S", 3.0)
    monkeypatch.setattr(quotas_module, "REFUSAL_DELAY_S", 0.1)
    host, flooder, other = served
    first = closed_with(host, flooder, 500)
    assert first is not None
    assert first.rcvd is not None
    assert "no new connection for 3 s" in first.rcvd.reason
    # reconnecting at once buys no new burst: refused before any work
    with pytest.raises(InvalidStatus) as refused:
        connect(f"ws://{host}/v1/live?token={flooder}")
    assert refused.value.response.status_code == 403
    with connect(f"ws://{host}/v1/live?token={other}") as ws:
        ws.send(partial(0, "still here"))
        assert json.loads(ws.recv(timeout=30))["type"] == "hypothesis"
    time.sleep(3.0)  # the bar lifted: served again, within what is left of its burst
    assert closed_with(host, flooder, 1) is None


def handshake_reply(host: str, query: str, header: str = "") -> bytes:
    """The status line a raw WebSocket handshake gets within 5 s (b"": none)."""
    address, port = host.split(":")
    with socket.create_connection((address, int(port)), timeout=5) as sock:
        key = base64.b64encode(os.urandom(16)).decode()
        sock.sendall(
            f"GET /v1/live?{query} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n{header}"
            "Sec-WebSocket-Version: 13\r\n\r\n".encode()
        )
        reply = b""
        with contextlib.suppress(OSError):
            while b"\r\n" not in reply and (chunk := sock.recv(1024)):
                reply += chunk
        return reply.split(b"\r\n")[0]


@pytest.mark.parametrize("extra", [-1, 0, 1, 60_000])
def test_a_handshake_line_too_long_is_answered_at_once(
    served: tuple[str, str, str], extra: int
) -> None:
    """The WebSocket library reads no handshake line over 8 KiB and then never answers; up to
    that length the app answers (a bad token: 403), beyond it a 400, both at once."""
    host = served[0]
    query = "token=" + "x" * (MAX_LINE_BYTES - len("GET /v1/live?token= HTTP/1.1\r\n") + extra)
    expected = b"HTTP/1.1 400 Bad Request" if extra > 0 else b"HTTP/1.1 403 Forbidden"
    assert handshake_reply(host, query) == expected
    header = "Cookie: " + "c" * (MAX_LINE_BYTES - len("Cookie: \r\n") + extra) + "\r\n"
    assert handshake_reply(host, "token=x", header) == expected


@pytest.mark.parametrize("headers", [MAX_HEADERS, MAX_HEADERS + 1])
def test_a_handshake_with_too_many_headers_is_answered_at_once(
    served: tuple[str, str, str], headers: int
) -> None:
    """The library reads at most 128 headers, then never answers: beyond, a 400 at once."""
    extra = "".join(f"X-Filler-{i}: x\r\n" for i in range(headers - 5))  # 5 of the handshake's
    expected = b"HTTP/1.1 400 Bad Request" if headers > MAX_HEADERS else b"HTTP/1.1 403 Forbidden"
    assert handshake_reply(served[0], "token=x", extra) == expected
