"""Limits a server on the open internet needs (issue 71): bad tokens rate-limited per client
address, request headers and handshakes that trickle closed, bodies that stall given up,
one token's sockets capped. ``bench/abuse.py`` measures the same against a real server."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
import wave
from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from starlette.websockets import WebSocketDisconnect
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from heard.server import bodies, quotas, shares, transport
from heard.server.app import ServerSettings, create_app
from heard.server.quotas import AUTH_FAILURE_BURST, AuthFailures
from heard.speech import Transcription
from heard.store.database import Database
from heard.store.users import add_user
from heard.testing import ScriptedRecognizer
from tests.bench.scripts import load
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
    db: Database, app_and_token: tuple[object, str]
) -> None:
    app, token = app_and_token
    _, fresh = add_user(db, "bo")
    flood = TestClient(app, client=FLOOD)  # type: ignore[arg-type]
    other = TestClient(app, client=ELSEWHERE)  # type: ignore[arg-type]
    mine = {"Authorization": f"Bearer {token}"}
    assert flood.get("/v1/meetings", headers=mine).status_code == 200  # ana, behind one proxy
    answers = [
        flood.get("/v1/meetings", headers={"Authorization": f"Bearer heard_guess{i}"})
        for i in range(AUTH_FAILURE_BURST + 5)
    ]
    assert [a.status_code for a in answers] == [401] * AUTH_FAILURE_BURST + [429] * 5
    assert int(answers[-1].headers["Retry-After"]) >= 1
    assert "too many bad tokens" in answers[-1].text
    assert flood.get("/v1/meetings").status_code == 401  # no token: nothing to look up, no 429
    # a token found valid lately still gets in from the flooded address (the other users
    # behind the same proxy); one never seen waits as the guesses do
    assert flood.get("/v1/meetings", headers=mine).status_code == 200
    assert (
        flood.get("/v1/meetings", headers={"Authorization": f"Bearer {fresh}"}).status_code == 429
    )
    assert (
        other.get("/v1/meetings", headers={"Authorization": f"Bearer {fresh}"}).status_code == 200
    )
    # a live socket's handshake from the flooding address is held back too
    with (
        pytest.raises(WebSocketDisconnect) as refused,
        flood.websocket_connect("/v1/live?token=heard_guess_again"),
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
        sock.sendall(sent)
        got = answer_to(sock)
    assert got.startswith(b"HTTP/1.1 408"), got  # (none: the socket's 10 s timeout fails it)


def stalled_json(token: str) -> bytes:
    """A request for a new meeting whose JSON body stops after its first bytes."""
    return (f"POST /v1/meetings HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
            "Content-Type: application/json\r\nContent-Length: 200\r\n\r\n"
            '{"title": "stalled').encode()  # fmt: skip


@pytest.mark.parametrize("turn", ["comes", "never comes"])
def test_a_json_body_that_stops_arriving_gets_a_408(
    app_and_token: tuple[object, str], monkeypatch: pytest.MonkeyPatch, turn: str
) -> None:
    """A user's requests to synchronous routes run one at a time. A body read only once its
    request's turn came was timed only then: 166 stalled bodies of one user, 1 answered in
    25 s. Its 408 comes whether the user's turn comes or never does."""
    monkeypatch.setattr(bodies, "BODY_IDLE_S", 0.5)

    @contextlib.asynccontextmanager
    async def never(self: object, owner: str) -> AsyncIterator[None]:
        await asyncio.Event().wait()
        yield

    if turn == "never comes":
        monkeypatch.setattr(shares.UserShares, "taken", never)
    app, token = app_and_token
    with serving(app) as host, raw(host) as sock:  # type: ignore[arg-type]
        sock.sendall(stalled_json(token))
        answer = answer_to(sock)  # (no answer: the socket's 10 s timeout fails the test)
    assert answer.startswith(b"HTTP/1.1 408"), answer
    assert b"stopped arriving" in answer


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


def reply_of(sock: socket.socket) -> bytes:
    """The server's first answer on ``sock``: its head and its body."""
    got = b""
    while b"\r\n\r\n" not in got:
        chunk = sock.recv(4096)
        assert chunk, got
        got += chunk
    head, _, body = got.partition(b"\r\n\r\n")
    length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                  if line.lower().startswith(b"content-length:"))  # fmt: skip
    while len(body) < length:
        body += sock.recv(4096)
    return head + b"\r\n\r\n" + body


FLOODS = load("floods")
multipart_head = FLOODS.form_head
BOUNDARY = FLOODS.BOUNDARY


@pytest.fixture
def transcribing(db: Database, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """A real server that transcribes (hearing nothing), its users keeping 1 MiB each."""
    from heard.testing import FakeTranscriber

    app = create_app(ServerSettings(db, tmp_path / "uploads", transcriber=FakeTranscriber({}),
                                    user_storage_bytes=2**20))  # fmt: skip
    _, token = add_user(db, "ana")
    with serving(app) as host:
        yield host, token


def test_a_form_counts_against_its_users_storage_as_it_arrives(
    transcribing: tuple[str, str],
) -> None:
    """Issue 71: six stalled 30 MB forms held 180 MB in $TMPDIR against a 50 MB quota, and the
    user's next 30 MB upload still got 200. Now a form past the room left is a 507 as it
    arrives, and while one holds the room, the next is refused too."""
    host, token = transcribing
    with raw(host) as big:
        big.sendall(multipart_head(host, token, 3 * 2**20) + bytes(3 * 2**20 - 400))
        answer = reply_of(big)
    assert answer.startswith(b"HTTP/1.1 507"), answer[:200]
    assert b"past your limit" in answer
    with raw(host) as holding, raw(host) as next_one:
        holding.sendall(multipart_head(host, token, 2**20) + bytes(900_000))  # and then stalls
        time.sleep(0.5)
        next_one.sendall(multipart_head(host, token, 2**20) + bytes(900_000))
        refused = reply_of(next_one)
    assert refused.startswith(b"HTTP/1.1 507"), refused[:200]


def test_a_form_that_stops_arriving_gets_a_408(
    transcribing: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bodies, "BODY_IDLE_S", 0.5)
    host, token = transcribing
    with raw(host) as sock:
        sock.sendall(multipart_head(host, token, 500_000) + bytes(100_000))
        answer = answer_to(sock)
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]


class Slow:
    """A recognizer that takes 5 s a file, a segment each 0.1 s, and counts the segments."""

    name = "slow"

    def __init__(self) -> None:
        self.segments = 0
        self.started = threading.Event()

    def transcribe(self, audio: object, *, on_progress: Any = None, **_: object) -> Transcription:
        self.started.set()
        for i in range(50):
            time.sleep(0.1)
            self.segments += 1
            if on_progress is not None:
                on_progress(i * 0.1 + 0.1, 5.0)
        return Transcription(())


@pytest.mark.parametrize("route", ["deepgram", "openai"])
def test_a_transcription_whose_client_hung_up_stops(
    db: Database, tmp_path: Path, route: str
) -> None:
    """Issue 71: LiveKit's Deepgram STT gives up after 10 s and sends the file again, and
    heard transcribed it to the end each time: three times for one answer."""
    slow = Slow()
    app = create_app(ServerSettings(db, tmp_path / "uploads", transcriber=slow))
    _, token = add_user(db, "ana")
    wav = tmp_path / "a.wav"
    with wave.open(str(wav), "wb") as w:
        w.setnchannels(1), w.setsampwidth(2), w.setframerate(16_000)
        w.writeframes(bytes(32_000))
    body = wav.read_bytes()
    with serving(app) as host:
        with raw(host) as sock:
            if route == "deepgram":
                sock.sendall(f"POST /v1/listen HTTP/1.1\r\nHost: x\r\nAuthorization: Token "
                             f"{token}\r\nContent-Type: audio/wav\r\nContent-Length: {len(body)}"
                             "\r\n\r\n".encode() + body)  # fmt: skip
            else:
                form = multipart_head(host, token, 0).split(b"\r\n\r\n", 1)[1]
                tail = f"\r\n--{BOUNDARY}--\r\n".encode()
                length = len(form) + len(body) + len(tail)
                head = multipart_head(host, token, length).split(b"\r\n\r\n", 1)[0]
                sock.sendall(head + b"\r\n\r\n" + form + body + tail)
            assert slow.started.wait(10), "the transcription never started"
            time.sleep(0.3)
        # the client is gone: the work stops at its next segment, not after all 50
        time.sleep(1.5)
        stopped_at = slow.segments
        time.sleep(1.0)
    assert slow.segments == stopped_at, "still transcribing for a client that left"
    assert stopped_at < 30, stopped_at
    assert [p for p in (tmp_path / "uploads").rglob("*") if p.is_file()] == []
