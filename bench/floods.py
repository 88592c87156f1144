"""Floods and trickles against a real ``heard serve`` (issue 71), each beside user B's tiny GET
(``/v1/me``, one after another from 127.0.0.1) and against B alone in the same run:

* **bad tokens**: 24 clients from 127.0.0.2 send made-up tokens, about 100 a second in all:
  what they get (401, 429), and B's GET p95 beside them;
* **trickles**: 500 connections from 127.0.0.3 that send part of a request and then nothing:
  a third half a request's headers, a third half a WebSocket handshake, a third a JSON body's
  first bytes. How many the server has closed (or answered 408) within 30 s, the slowest, and
  B's GET p95 while they are held;
* **stalled forms**: with 50 MB of storage a user, six OpenAI transcription forms of 30 MB
  each from one user, sent all but their last 64 KB and then held: what each gets, and when;
  and that user's next 30 MB form, sent whole while they are held;
* **channels**: one token's ``/v1/listen`` stream of 8 channels of linear16 at real time, and
  one of 2: refused at the handshake, or how long each lasts before it is closed for its rate
  (the default allowance is 2 channels: an 8-channel stream is charged as 8 streams).

Loopback gives the flood and the trickles addresses of their own (127.0.0.0/8 is all this
machine's), as they would have on the internet. Called by bench/abuse.py --floods-only.
Usage: python bench/floods.py [--src DIR] [--seconds S] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import websockets

from heard.release.cadence import nearest_rank

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from served import serving  # noqa: E402

FLOOD_CLIENTS, FLOOD_PER_S = 24, 100
TRICKLES = 500
TRICKLE_WAIT_S = 30.0


def gets(host: str, token: str, until: threading.Event) -> list[float]:
    """B's GET after GET until ``until`` is set: each in ms."""
    out: list[float] = []
    with httpx.Client(base_url=f"http://{host}", timeout=60,
                      headers={"Authorization": f"Bearer {token}"}) as client:  # fmt: skip
        while not until.is_set():
            began = time.perf_counter()
            client.get("/v1/me").raise_for_status()
            out.append((time.perf_counter() - began) * 1000)
    return out


def beside(host: str, token: str, work: Any, *args: Any) -> tuple[dict[str, float], Any]:
    """B's GETs while ``work(*args)`` runs: their p50 and p95 (ms), and what ``work`` gave."""
    done = threading.Event()
    measured: list[float] = []
    thread = threading.Thread(target=lambda: measured.extend(gets(host, token, done)))
    thread.start()
    try:
        result = work(*args)
    finally:
        done.set()
        thread.join()
    return {"n": len(measured), "p50": round(nearest_rank(measured, 50), 1),
            "p95": round(nearest_rank(measured, 95), 1)}, result  # fmt: skip


def idle(seconds: float) -> None:
    time.sleep(seconds)


def bad_tokens(host: str, seconds: float) -> dict[str, int]:
    """``FLOOD_CLIENTS`` clients from 127.0.0.2, ``FLOOD_PER_S`` made-up tokens a second in all:
    the statuses they got."""
    statuses: dict[str, int] = {}
    lock = threading.Lock()
    end = time.monotonic() + seconds
    gap = FLOOD_CLIENTS / FLOOD_PER_S

    def client(i: int) -> None:
        transport = httpx.HTTPTransport(local_address="127.0.0.2")
        with httpx.Client(base_url=f"http://{host}", timeout=30, transport=transport) as c:
            n = 0
            while (now := time.monotonic()) < end:
                got = c.get("/v1/me", headers={"Authorization": f"Bearer heard_made_up_{i}_{n}"})
                with lock:
                    statuses[str(got.status_code)] = statuses.get(str(got.status_code), 0) + 1
                n += 1
                time.sleep(max(0.0, gap - (time.monotonic() - now)))

    threads = [threading.Thread(target=client, args=(i,)) for i in range(FLOOD_CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return statuses


def _half(kind: str, host: str, token: str) -> bytes:
    if kind == "headers":
        return f"GET /v1/me HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token[:6]}".encode()
    if kind == "handshake":
        return (f"GET /v1/live?token={token} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\n"
                "Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n").encode()  # fmt: skip
    return (f"POST /v1/meetings HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n"
            "Content-Type: application/json\r\nContent-Length: 4000\r\n\r\n"
            '{"title": "').encode()  # fmt: skip


def trickles(host: str, token: str, n: int = TRICKLES) -> dict[str, Any]:
    """``TRICKLES`` connections that send part of a request, then nothing: for each kind, how
    many were closed within ``TRICKLE_WAIT_S`` (with a 408, or without a word), and the
    slowest."""
    name, port = host.split(":")
    kinds = ("headers", "handshake", "json body")
    held: list[tuple[str, socket.socket, float]] = []
    for i in range(n):
        sock = socket.socket()
        sock.bind(("127.0.0.3", 0))
        sock.connect((name, int(port)))
        kind = kinds[i % len(kinds)]
        sock.sendall(_half(kind, host, token))
        sock.setblocking(False)
        held.append((kind, sock, time.monotonic()))
    out: dict[str, Any] = {k: {"sent": 0, "closed": 0, "408": 0, "slowest_s": 0.0} for k in kinds}
    open_ = {id(s): (k, s, t) for k, s, t in held}
    got: dict[int, bytes] = {}
    deadline = time.monotonic() + TRICKLE_WAIT_S
    for kind, _, _ in held:
        out[kind]["sent"] += 1
    while open_ and time.monotonic() < deadline:
        for key, (kind, sock, began) in list(open_.items()):
            try:
                chunk = sock.recv(4096)
            except BlockingIOError:
                continue
            except OSError:
                chunk = b""
            if chunk:
                got[key] = got.get(key, b"") + chunk
                continue
            row = out[kind]
            row["closed"] += 1
            row["408"] += got.get(key, b"").startswith(b"HTTP/1.1 408")
            row["slowest_s"] = round(max(row["slowest_s"], time.monotonic() - began), 1)
            sock.close()
            del open_[key]
        time.sleep(0.05)
    for _, sock, _ in open_.values():
        sock.close()
    return out


BOUNDARY = "benchboundary"
FORM_MB, FORMS, STORAGE_MB = 30, 6, 50


def form_head(host: str, token: str, length: int) -> bytes:
    """The start of an OpenAI transcription request whose form is ``length`` bytes, up to
    its file's first byte."""
    return (f"POST /v1/audio/transcriptions HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer "
            f"{token}\r\nContent-Type: multipart/form-data; boundary={BOUNDARY}\r\n"
            f"Content-Length: {length}\r\n\r\n--{BOUNDARY}\r\nContent-Disposition: form-data; "
            'name="model"\r\n\r\nwhisper-1\r\n'
            f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; '
            'filename="a.wav"\r\nContent-Type: audio/wav\r\n\r\n').encode()  # fmt: skip


def _status(sock: socket.socket, began: float, wait_s: float) -> tuple[str, float]:
    """The status of the server's answer on ``sock`` and when it came (``-``: none)."""
    sock.settimeout(wait_s)
    try:
        got = sock.recv(64)
    except OSError:
        return "-", round(time.monotonic() - began, 1)
    return (got[9:12].decode() if got.startswith(b"HTTP/1.1 ") else "closed",
            round(time.monotonic() - began, 1))  # fmt: skip


def stalled_forms(
    host: str, token: str, forms: int = FORMS, form_mb: int = FORM_MB
) -> dict[str, Any]:
    """``forms`` forms of ``form_mb`` sent but for their last 64 KB and held; then one sent
    whole: each answer's status and time."""
    name, port = host.split(":")
    length = form_mb * 2**20
    began = time.monotonic()
    answers: dict[str, tuple[str, float]] = {}

    def one(label: str, whole: bool) -> None:
        with socket.create_connection((name, int(port))) as sock:
            sock.settimeout(60)
            head = form_head(host, token, length)
            body = bytes(length - len(head) - (0 if whole else 64 * 1024))
            with contextlib.suppress(OSError):  # answered and closed before it was all sent
                sock.sendall(head + body)
            answers[label] = _status(sock, began, 60)

    held = [threading.Thread(target=one, args=(f"held {i}", False)) for i in range(forms)]
    for t in held:
        t.start()
    time.sleep(3)  # the held forms are in
    whole = threading.Thread(target=one, args=("whole", True))
    whole.start()
    for t in [*held, whole]:
        t.join()
    statuses: dict[str, int] = {}
    for label, (status, _) in answers.items():
        if label != "whole":
            statuses[status] = statuses.get(status, 0) + 1
    return {"held got": statuses, "the whole one": answers.get("whole"),
            "last answer_s": max(t for _, t in answers.values())}  # fmt: skip


def tone(seconds: float, channels: int) -> bytes:
    t = np.arange(int(16_000 * seconds)) / 16_000
    mono = (np.sin(2 * np.pi * 440 * t) * 8000).astype("<i2")
    return np.repeat(mono, channels).tobytes()


async def stream(host: str, token: str, channels: int, seconds: float) -> dict[str, Any]:
    """One ``/v1/listen`` stream of ``channels`` at real time: the handshake's refusal, or
    how long until it is closed for its rate (None: it lasted ``seconds``) and the code."""
    query = f"encoding=linear16&sample_rate=16000&channels={channels}&multichannel=true"
    frame = tone(0.1, channels)
    began = time.monotonic()
    auth = {"Authorization": f"Token {token}"}
    try:
        opened = await websockets.connect(f"ws://{host}/v1/listen?{query}", additional_headers=auth)
    except websockets.InvalidStatus as e:
        return {"channels": channels, "refused": e.response.status_code}
    async with opened as ws:
        try:
            for i in range(round(seconds * 10)):
                await ws.send(frame)
                await asyncio.sleep(max(0.0, began + (i + 1) * 0.1 - time.monotonic()))
            await ws.send(json.dumps({"type": "CloseStream"}))
            async for _ in ws:
                pass
        except websockets.ConnectionClosed:
            pass
        code = ws.close_code
    closed_s = time.monotonic() - began
    return {"channels": channels, "code": code,
            "closed_after_s": round(closed_s, 1) if code == 1008 else None}  # fmt: skip


def run(
    src: Path | None = None,
    seconds: float = 20.0,
    *,
    n_trickles: int = TRICKLES,
    forms: int = FORMS,
    form_mb: int = FORM_MB,
    storage_mb: int = STORAGE_MB,
) -> dict[str, Any]:
    """Every scenario (smaller by the keywords: a test's short run)."""
    out: dict[str, Any] = {}
    with serving(["b", "a"], src=src) as (host, tokens, _pid):
        b, a = tokens["b"], tokens["a"]
        out["idle"], _ = beside(host, b, idle, seconds)
        out["bad tokens"], statuses = beside(host, b, bad_tokens, host, seconds)
        out["bad tokens"]["flood got"] = statuses
        out["bad tokens"]["p95 x idle"] = round(out["bad tokens"]["p95"] / out["idle"]["p95"], 2)
        out["trickles"], held = beside(host, b, trickles, host, a, n_trickles)
        out["trickles"] |= held
        out["trickles"]["p95 x idle"] = round(out["trickles"]["p95"] / out["idle"]["p95"], 2)
    with serving(["a"], src=src, settings={"HEARD_USER_STORAGE_MB": str(storage_mb)}) as (
        host, tokens, _pid,
    ):  # fmt: skip
        out["stalled forms"] = stalled_forms(host, tokens["a"], forms, form_mb)
    with serving(["a"], src=src) as (host, tokens, _pid):  # a token of its own: a fresh quota
        out["8 channels"] = asyncio.run(stream(host, tokens["a"], 8, seconds))
    with serving(["a"], src=src) as (host, tokens, _pid):
        out["2 channels"] = asyncio.run(stream(host, tokens["a"], 2, seconds))
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--src", type=Path, help="run the server from this src/ folder")
    parser.add_argument("--seconds", type=float, default=20.0, help="each timed scenario")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    result = run(args.src, args.seconds)
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        for name, row in result.items():
            print(f"{name:<12} {row}")
    return result


if __name__ == "__main__":
    main()
