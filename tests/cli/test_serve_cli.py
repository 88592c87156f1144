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

from tests.cli.run import heard


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
