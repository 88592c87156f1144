from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import websockets

from tests.cli.run import heard, held_port


def test_users_add_prints_a_token_once_and_refuses_a_duplicate(tmp_path: Path) -> None:
    added = heard("users", "add", "ana", cwd=tmp_path)
    assert added.returncode == 0, added.stderr
    token = added.stdout.strip()
    assert token.startswith("heard_")
    assert "user ana" in added.stderr
    again = heard("users", "add", "ana", cwd=tmp_path)
    assert again.returncode == 2
    assert "already exists" in again.stderr
    more = heard("users", "token", "ana", cwd=tmp_path)
    assert more.returncode == 0
    assert more.stdout.strip() != token
    assert heard("users", "token", "nobody", cwd=tmp_path).returncode == 2


async def say_hello(url: str) -> None:
    async with websockets.connect(url) as ws:
        await ws.send('{"t_ms": 0, "type": "final", "text": "hello"}')
        assert json.loads(await ws.recv())["type"] == "hypothesis"


def test_serve_binds_localhost_and_answers(tmp_path: Path) -> None:
    token = heard("users", "add", "ana", cwd=tmp_path).stdout.strip()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "HEARD_DATABASE_URL": f"sqlite:///{tmp_path / 'm.db'}"}
    command = [sys.executable, "-m", "heard", "serve", "--port", str(port),
               "--uploads", str(tmp_path / "up")]  # fmt: skip
    server = subprocess.Popen(
        command, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                me = httpx.get(f"http://127.0.0.1:{port}/v1/me",
                               headers={"Authorization": f"Bearer {token}"})  # fmt: skip
                break
            except httpx.ConnectError:
                assert server.poll() is None, server.stderr.read() if server.stderr else ""
                assert time.monotonic() < deadline, "heard serve did not start"
                time.sleep(0.2)
        assert me.json()["name"] == "ana"
        page = httpx.get(f"http://127.0.0.1:{port}/")
        assert "Start microphone" in page.text
        assert httpx.get(f"http://127.0.0.1:{port}/v1/me").status_code == 401
        asyncio.run(say_hello(f"ws://127.0.0.1:{port}/v1/live?token={token}&mode=balanced"))
    finally:
        server.terminate()
        _, err = server.communicate(timeout=20)
    assert f"on http://127.0.0.1:{port}" in err
    assert "/v1/live?token=[redacted]" in err  # the handshake is logged, the token is not
    assert token not in err


def test_users_revoke_takes_one_token_or_all_of_a_users(tmp_path: Path) -> None:
    from heard.store.database import Database
    from heard.store.users import authenticate

    first = heard("users", "add", "ana", cwd=tmp_path).stdout.strip()
    second = heard("users", "token", "ana", cwd=tmp_path).stdout.strip()
    one = heard("users", "revoke", "ana", "--token", first, cwd=tmp_path)
    assert one.returncode == 0, one.stderr
    assert "revoked 1 token of ana" in one.stderr
    db = Database(f"sqlite:///{tmp_path / 'm.db'}")  # where tests.cli.run points heard
    assert authenticate(db, first) is None
    assert authenticate(db, second) is not None
    again = heard("users", "revoke", "ana", "--token", first, cwd=tmp_path)
    assert again.returncode == 2
    assert "not one of" in again.stderr
    assert heard("users", "revoke", "nobody", cwd=tmp_path).returncode == 2
    every = heard("users", "revoke", "ana", cwd=tmp_path)
    assert every.returncode == 0
    assert authenticate(db, second) is None


def test_log_redaction_covers_every_spelling_of_the_token() -> None:
    from heard.cli.serve import redact

    token = "heard_" + "A1b2-C3d4_" * 4
    for line in [
        f"GET /v1/live?token={token}&mode=balanced",
        f"GET /v1/live?TOKEN={token}",
        f"GET /v1/live?%74oken={token}",
        f"GET /v1/live?mode=relaxed&Tok%65n={token}",
        f"GET /v1/live?x={token}",  # a token under another name
        f"GET /v1/live?t={token.replace('_', '%5F')}",
    ]:
        redacted = redact(line)
        assert "[redacted]" in redacted, line
        assert token[6:] not in redacted.replace("%5F", "_"), line
    for line in ["GET /v1/live?TOKEN=s3cret", "GET /v1/live?mode=x&%74oken=s3cret",
                 "GET /v1/meetings/m/tracks/a/audio?user=u&expires=9&sig=s3cret"]:  # fmt: skip
        assert "s3cret" not in redact(line), line  # named token, whatever its value looks like
    assert redact("GET /v1/live?mode=balanced") == "GET /v1/live?mode=balanced"


def test_serve_refuses_a_wildcard_or_malformed_cors_origin(tmp_path: Path) -> None:
    for origin in ("*", "app.example.com", "https://app.example.com/path"):
        with held_port() as port:  # refused before it takes a port, whoever holds it
            ran = heard("serve", "--cors-origin", origin, "--port", str(port),
                        "--db", f"sqlite:///{tmp_path / 'h.db'}", cwd=tmp_path)  # fmt: skip
        assert ran.returncode == 2
        assert "CORS origin" in ran.stderr
        assert "https://app.example.com" in ran.stderr


def test_serve_queue_with_a_database_the_workers_do_not_open_is_refused(tmp_path: Path) -> None:
    """Issue 27: the workers open $HEARD_DATABASE_URL; uploads stored elsewhere would never run."""
    workers = f"sqlite:///{tmp_path / 'workers.db'}"
    other = f"sqlite:///{tmp_path / 'other.db'}"
    with held_port() as port:
        refused = heard("serve", "--queue", "--db", other, "--port", str(port), cwd=tmp_path,
                        env={"HEARD_DATABASE_URL": workers})  # fmt: skip
    assert refused.returncode == 2
    assert f"--queue with --db {other}: the workers open {workers}" in refused.stderr
    assert not (tmp_path / "other.db").exists()
