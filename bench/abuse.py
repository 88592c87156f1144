"""heard serve under abuse: what one client's misbehaviour costs everyone else.

A real ``heard serve`` (uvicorn, SQLite) in its own process; ``--src DIR`` runs the server
from another checkout's ``src/`` (to measure an older commit beside this one). Another
user's REST recall is timed, one request after another:

* idle: nothing else happens;
* flood: one client sends transcript events as fast as it can for up to 10 s and never
  looks at the replies (its library takes them in, as a browser's does); also the 5 s after
  it stops (the backlog);
* 50 live clients: 50 users stream LoCoMo turns at a normal pace (a partial every 150 ms);
* 30 clients of recall and writes: 30 users, each alternating a recall and a one-utterance
  evidence write for 10 s: throughput, p95, p99 (the timed user is not needed here);
* heavy (a second server, with dense memory when heard[dense] is installed): one user posts
  6 MB of valid evidence in a loop for 30 s, and one utterance at a time from 45 clients
  beside it, while another user recalls and /healthz is polled;
  then a ten-hour track (25 MB of FLAC silence made with sox) is uploaded, and the server's
  peak memory read before and after;
* floods and trickles (``bench/floods.py``, issue 71): 100 bad tokens a second from one
  address, 500 half-sent headers, handshakes and JSON bodies, an 8-channel stream;
* a heavy user's worst (``bench/stall.py``, issue 57): 12 uploads at once of a 3 h 50 min
  MP3, 400 event streams, 12 loops of rename-then-search: another user's tiny GET and live
  finals beside each;
* transcriptions (a third server, heard's recognizer, tiny.en): user A re-posts JFK to OpenAI's
  route from four threads at once for ``--transcribe-seconds`` while user B posts it one
  request after another: B's answers and waits, against B's alone; then files that lie about
  their length (4.5 h of FLAC silence whose header states no length, 1.4 h of Opus silence
  whose header states 5 s) are posted, each with the server's CPU time spent on it; and the
  server's peak memory over the whole scenario.

Called by bench/serve.py --abuse. Usage: python bench/abuse.py [--src DIR] [--json]
       python bench/abuse.py --transcriptions-only [--src DIR] [--json]
       python bench/abuse.py --stall-only [--src DIR] [--json]
       python bench/abuse.py --floods-only [--src DIR] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import websockets

from heard.release.cadence import nearest_rank

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import floods  # noqa: E402
import stall  # noqa: E402
from locomo import conversations, turns_of  # noqa: E402
from served import cpu_seconds, serving  # noqa: E402

UTTERANCES = [
    {"id": f"d{i}", "speaker": t["speaker"], "text": t["text"], "session": t["session"]}
    for i, t in enumerate(turns_of(conversations()[0])[:300])
]


def recalls(host: str, token: str, until: threading.Event | float) -> list[float]:
    """Recall after recall until ``until`` is set (or that many seconds pass): each in ms."""
    out: list[float] = []
    end = time.monotonic() + until if isinstance(until, float) else None
    with httpx.Client(base_url=f"http://{host}", timeout=120,
                      headers={"Authorization": f"Bearer {token}"}) as client:  # fmt: skip
        while not (until.is_set() if end is None else time.monotonic() >= end):  # type: ignore[union-attr]
            started = time.perf_counter()
            client.post("/v1/memory/recall", json={"query": "what did she paint last year"})
            out.append((time.perf_counter() - started) * 1000)
    return out


def summary(ms: list[float]) -> dict[str, float]:
    return {
        "n": len(ms),
        **{f"p{q}_ms": round(nearest_rank(ms, q), 1) for q in (50, 95, 99)},
    }


async def flood(host: str, token: str, seconds: float) -> dict[str, Any]:
    """Frames as fast as they go, never reading the replies; closed or refused, it connects
    again at once, until ``seconds`` have passed."""
    sent, closes, refused, codes = 0, 0, 0, set()
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            ws = await websockets.connect(f"ws://{host}/v1/live?token={token}", max_size=None,
                                          max_queue=None)  # fmt: skip
        except websockets.InvalidStatus:
            refused += 1
            continue
        async with ws:
            try:
                while time.monotonic() < end:
                    await ws.send(json.dumps({"t_ms": sent, "type": "partial",
                                              "text": f"w {sent}"}))  # fmt: skip
                    sent += 1
                    if sent % 100 == 0:
                        await asyncio.sleep(0)
            except websockets.ConnectionClosed as e:
                closes += 1
                codes.add(e.rcvd.code if e.rcvd else None)
    return {"frames_sent": sent, "connections_closed": closes, "close_codes": sorted(codes),
            "connections_refused": refused}  # fmt: skip


async def at_the_limit(host: str, token: str, seconds: float, per_s: float) -> dict[str, Any]:
    """A client as heavy as its rate limit lets it be: ``per_s`` events a second (partials of
    a growing turn, a final every 20th), replies read as they come."""
    sent, answers = 0, 0
    end = time.monotonic() + seconds
    async with websockets.connect(f"ws://{host}/v1/live?token={token}", max_size=None,
                                  max_queue=None) as ws:  # fmt: skip

        async def read() -> None:
            nonlocal answers
            with contextlib.suppress(websockets.ConnectionClosed):
                async for _ in ws:
                    answers += 1

        reader = asyncio.create_task(read())
        started = time.monotonic()
        while time.monotonic() < end:
            words = [f"word{sent % 20}", *(f"w{i}" for i in range(sent % 20))]
            kind = "final" if sent % 20 == 19 else "partial"
            await ws.send(json.dumps({"t_ms": sent * 10, "type": kind, "text": " ".join(words)}))
            sent += 1
            await asyncio.sleep(max(0.0, started + sent / per_s - time.monotonic()))
        await ws.close()
        await reader
    return {"events_sent": sent, "answers": answers}


async def live_client(host: str, token: str, turns: list[dict[str, Any]]) -> None:
    async with websockets.connect(f"ws://{host}/v1/live?token={token}", max_size=None) as ws:
        t = 0
        for turn in turns:
            words = turn["text"].split()
            for n in range(1, len(words) + 1):
                await ws.send(json.dumps({"t_ms": t, "type": "partial",
                                          "text": " ".join(words[:n])}))  # fmt: skip
                await ws.recv()
                t += 150
                await asyncio.sleep(0.15)


def _background(coro: Any) -> tuple[threading.Event, list[Any]]:
    """Run ``coro`` in a thread of its own; an event set when it is done, and its result."""
    result: list[Any] = []
    done = threading.Event()

    def run() -> None:
        try:
            result.append(asyncio.run(coro))
        finally:
            done.set()

    threading.Thread(target=run).start()
    return done, result


def run(
    src: Path | None, *, live: int = 50, writers: int = 30, seconds: float = 10.0, turns: int = 4
) -> dict[str, Any]:
    """The scenarios: ``live`` clients streaming ``turns`` turns, ``writers`` clients of recall
    and writes, a flood of up to ``seconds`` (idle and after-flood windows: half that)."""
    users = ["timed", "flooder", "steady", *(f"live{i}" for i in range(live)),
             *(f"rw{i}" for i in range(writers))]  # fmt: skip
    out: dict[str, Any] = {}
    with serving(users, src) as (host, tokens, _):
        with httpx.Client(base_url=f"http://{host}", timeout=120) as client:
            for name in ("timed", *(f"rw{i}" for i in range(writers))):
                client.post("/v1/memory/evidence", json={"utterances": UTTERANCES},
                            headers={"Authorization": f"Bearer {tokens[name]}"})  # fmt: skip
        out["idle"] = summary(recalls(host, tokens["timed"], seconds / 2))

        done, flooded = _background(flood(host, tokens["flooder"], seconds))
        out["during_flood"] = summary(recalls(host, tokens["timed"], done))
        out["after_flood"] = summary(recalls(host, tokens["timed"], seconds / 2))
        out["flooder"] = flooded[0] if flooded else {}

        done, steady = _background(at_the_limit(host, tokens["steady"], seconds, 95.0))
        out["beside_one_at_its_limit"] = summary(recalls(host, tokens["timed"], done))
        out["client_at_its_limit"] = steady[0] if steady else {}

        spoken = turns_of(conversations()[1])[:turns]

        async def everyone() -> None:
            await asyncio.gather(
                *(live_client(host, tokens[f"live{i}"], spoken) for i in range(live))
            )

        done, _ = _background(everyone())
        out["beside_50_live"] = summary(recalls(host, tokens["timed"], done))

        latencies: list[float] = []
        lock = threading.Lock()

        def mixed(name: str) -> None:
            mine: list[float] = []
            end = time.monotonic() + seconds
            auth = {"Authorization": f"Bearer {tokens[name]}"}
            with httpx.Client(base_url=f"http://{host}", timeout=120, headers=auth) as c:
                i = 0
                while time.monotonic() < end:
                    started = time.perf_counter()
                    if i % 2:
                        c.post(
                            "/v1/memory/evidence",
                            json={
                                "utterances": [
                                    {"id": f"w{i}", "speaker": "ana", "text": f"note number {i}"}
                                ]
                            },
                        )
                    else:
                        c.post("/v1/memory/recall", json={"query": "note number"})
                    mine.append((time.perf_counter() - started) * 1000)
                    i += 1
            with lock:
                latencies.extend(mine)

        started = time.perf_counter()
        workers = [threading.Thread(target=mixed, args=(f"rw{i}",)) for i in range(writers)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        per_s = round(len(latencies) / (time.perf_counter() - started))
        out["30_recall_and_write"] = {**summary(latencies), "per_s": per_s}
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--src", type=Path, help="run the server from this src/ folder")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--heavy-seconds", type=float, default=30.0,
                        help="how long the heavy user stores evidence in a loop")  # fmt: skip
    parser.add_argument("--heavy-only", action="store_true", help="the heavy scenario alone")
    parser.add_argument("--transcriptions-only", action="store_true",
                        help="the transcription scenario alone")  # fmt: skip
    parser.add_argument("--stall-only", action="store_true",
                        help="the heavy user's worst alone (bench/stall.py)")  # fmt: skip
    parser.add_argument("--floods-only", action="store_true",
                        help="bad tokens, trickles, channels alone (bench/floods.py)")  # fmt: skip
    parser.add_argument("--transcribe-seconds", type=float, default=60.0,
                        help="how long user A re-posts files")  # fmt: skip
    args = parser.parse_args(argv)
    result: dict[str, Any] = {}
    if args.floods_only:
        result = {f"floods: {k}": v for k, v in floods.run(args.src).items()}
    elif args.stall_only:
        result = {f"stall: {k}": v for k, v in stall.run(args.src).items()}
    elif not args.transcriptions_only:
        result = {} if args.heavy_only else run(args.src)
        result |= {f"heavy: {k}": v for k, v in run_heavy(args.src, args.heavy_seconds).items()}
    if not (args.heavy_only or args.stall_only or args.floods_only):
        result |= {f"stall: {k}": v for k, v in stall.run(args.src).items()}
        result |= {f"floods: {k}": v for k, v in floods.run(args.src).items()}
        heard = run_transcriptions(args.src, args.transcribe_seconds)
        result |= {f"transcriptions: {k}": v for k, v in heard.items()}
    if args.json:
        print(json.dumps(result, indent=1))
        return result
    for name, row in result.items():
        print(f"{name:<22} {row}")
    return result


BIG = [
    {
        "id": f"big{i}",
        "speaker": "ana",
        "text": ("a long run-on note about the ferry " * 570)[:19_800],
    }
    for i in range(300)
]
"""About 6 MB of valid evidence: 300 utterances of 19,800 characters."""


def peak_rss_mb(pid: int) -> float:
    """The process's peak resident memory so far (VmHWM), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def heavy_evidence(host: str, token: str, seconds: float, small: int = 45) -> dict[str, Any]:
    """6 MB of evidence posted again and again for ``seconds``, and beside it ``small``
    clients of the same user posting one utterance at a time: what the server answered."""
    answers: dict[int, int] = {}
    lock = threading.Lock()
    end = time.monotonic() + seconds

    def post(batch: list[dict[str, Any]], client: httpx.Client) -> int:
        try:
            status = client.post("/v1/memory/evidence", json={"utterances": batch}).status_code
        except httpx.HTTPError:
            status = 0  # timed out
        with lock:
            answers[status] = answers.get(status, 0) + 1
        if status == 429:
            time.sleep(0.5)
        return status

    def big() -> None:
        with httpx.Client(base_url=f"http://{host}", timeout=600,
                          headers={"Authorization": f"Bearer {token}"}) as client:  # fmt: skip
            n = 0
            while time.monotonic() < end:
                post([{**u, "id": f"{u['id']}-{n}"} for u in BIG], client)
                n += 1

    def little(k: int) -> None:
        with httpx.Client(base_url=f"http://{host}", timeout=60,
                          headers={"Authorization": f"Bearer {token}"}) as client:  # fmt: skip
            n = 0
            while time.monotonic() < end:
                post([{"id": f"s{k}-{n}", "speaker": "ana", "text": "a short note"}], client)
                n += 1

    threads = [threading.Thread(target=big)]
    threads += [threading.Thread(target=little, args=(k,)) for k in range(small)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {"answers": dict(sorted(answers.items()))}


def health(host: str, until: threading.Event) -> dict[str, int]:
    """``/healthz`` every quarter second with a 5 s timeout, until ``until``: answered, failed."""
    answered = failed = 0
    with httpx.Client(base_url=f"http://{host}", timeout=5) as client:
        while not until.is_set():
            try:
                answered += client.get("/healthz").status_code == 200
            except httpx.HTTPError:
                failed += 1
            time.sleep(0.25)
    return {"answered": answered, "failed": failed}


def ten_hours(folder: Path) -> Path:
    """Ten hours of silence as FLAC (sox), at 4 kHz: about 25 MB, under the upload limit."""
    path = folder / "ten_hours.flac"
    subprocess.run(["sox", "-n", "-r", "4000", "-c", "1", "-b", "16", str(path), "trim", "0",
                    "36000"], check=True)  # fmt: skip
    return path


def run_heavy(
    src: Path | None, seconds: float = 30.0, idle_s: float = 5.0, *, dense: bool = True
) -> dict[str, Any]:
    """One user stores 6 MB of evidence in a loop for ``seconds`` (dense memory when heard[dense]
    is installed, as a user's server has it): another user's recall p95 beside it against idle,
    and /healthz; then a ten-hour track is uploaded: the reply and the server's peak memory."""
    out: dict[str, Any] = {}
    with serving(["timed", "heavy", "long"], src, dense=dense) as (host, tokens, pid):
        with httpx.Client(base_url=f"http://{host}", timeout=120) as client:
            client.post("/v1/memory/evidence", json={"utterances": UTTERANCES},
                        headers={"Authorization": f"Bearer {tokens['timed']}"})  # fmt: skip
        out["idle"] = summary(recalls(host, tokens["timed"], idle_s))
        done = threading.Event()
        result: list[dict[str, Any]] = []
        checked: list[dict[str, int]] = []

        def load() -> None:
            try:
                result.append(heavy_evidence(host, tokens["heavy"], seconds))
            finally:
                done.set()

        loader = threading.Thread(target=load)
        checker = threading.Thread(target=lambda: checked.append(health(host, done)))
        loader.start()
        checker.start()
        out["beside_6MB_evidence_loop"] = summary(recalls(host, tokens["timed"], done))
        loader.join()
        checker.join()
        out["evidence_loop"] = result[0] if result else {}
        out["healthz_during_loop"] = checked[0] if checked else {}
        out["ratio_p95_to_idle"] = round(
            out["beside_6MB_evidence_loop"]["p95_ms"] / max(out["idle"]["p95_ms"], 0.1), 2
        )
        with tempfile.TemporaryDirectory() as tmp:
            audio = ten_hours(Path(tmp))
            auth = {"Authorization": f"Bearer {tokens['long']}"}
            with httpx.Client(base_url=f"http://{host}", timeout=600, headers=auth) as client:
                before = peak_rss_mb(pid)
                meeting = {"title": "ten hours", "participants": [{"name": "a"}]}
                made = client.post("/v1/meetings", json=meeting)
                reply = client.put(f"/v1/meetings/{made.json()['id']}/tracks/a",
                                   content=audio.read_bytes())  # fmt: skip
                out["ten_hour_track"] = {
                    "status": reply.status_code,
                    "detail": reply.json().get("detail"),
                    "file_mb": round(audio.stat().st_size / 2**20, 1),
                    "peak_rss_mb_before": round(before),
                    "peak_rss_mb_after": round(peak_rss_mb(pid)),
                }
    return out


JFK = HERE.parent / "tests" / "data" / "audio" / "jfk.flac"


def lying_files(folder: Path, flac_s: float = 4.5 * 3600, opus_s: float = 1.4 * 3600) -> list[Path]:
    """The audit's two liars: FLAC silence whose header states no length (``flac_s`` of it,
    over the 4 h limit) and Opus silence whose header states 5 s (``opus_s`` of it)."""
    from heard.testing import forge_length, silent_audio

    flac = forge_length(silent_audio(folder / "no_length.flac", flac_s), 0)
    opus = forge_length(silent_audio(folder / "says_5s.opus", opus_s, "opus"), 5)
    return [flac, opus]


def run_transcriptions(
    src: Path | None, seconds: float = 60.0, a_threads: int = 4, *, liars: list[Path] | None = None
) -> dict[str, Any]:
    """User A re-posting from ``a_threads`` threads for ``seconds`` beside user B posting one
    file after another; then the lying files; the server's peak memory."""
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp, serving(["a", "b", "liar"], src) as (
        host, tokens, pid,
    ):  # fmt: skip
        audio = JFK.read_bytes()
        end = time.monotonic() + seconds
        a_answers: dict[int, int] = {}
        lock = threading.Lock()

        def post(client: httpx.Client, name: str, body: bytes) -> httpx.Response:
            auth = {"Authorization": f"Bearer {tokens[name.split('.')[0]]}"}
            return client.post("/v1/audio/transcriptions", data={"model": "whisper-1"},
                               files={"file": (name, body)}, headers=auth)  # fmt: skip

        def user_a() -> None:
            with httpx.Client(base_url=f"http://{host}", timeout=600) as client:
                while time.monotonic() < end:
                    status = post(client, "a.flac", audio).status_code
                    with lock:
                        a_answers[status] = a_answers.get(status, 0) + 1

        alone: list[float] = []
        with httpx.Client(base_url=f"http://{host}", timeout=600) as client:
            for _ in range(3):  # B with the server to itself: the wait to compare with
                started = time.perf_counter()
                post(client, "b.flac", audio)
                alone.append((time.perf_counter() - started) * 1000)
        out["user_b_alone"] = summary(alone)
        end = time.monotonic() + seconds
        threads = [threading.Thread(target=user_a) for _ in range(a_threads)]
        for t in threads:
            t.start()
        time.sleep(2.0)  # A holds the queue first
        b_waits: list[float] = []
        b_answers: dict[int, int] = {}
        with httpx.Client(base_url=f"http://{host}", timeout=600) as client:
            while time.monotonic() < end - 5:
                started = time.perf_counter()
                status = post(client, "b.flac", audio).status_code
                b_waits.append((time.perf_counter() - started) * 1000)
                b_answers[status] = b_answers.get(status, 0) + 1
        for t in threads:
            t.join()
        out["user_a_reposting"] = {"threads": a_threads, "answers": dict(sorted(a_answers.items()))}
        out["user_b_beside_a"] = {"answers": dict(sorted(b_answers.items())), **summary(b_waits)}
        made = liars if liars is not None else lying_files(Path(tmp))
        with httpx.Client(base_url=f"http://{host}", timeout=600) as client:
            for path in made:
                cpu, started = cpu_seconds(pid), time.perf_counter()
                reply = post(client, f"liar.{path.suffix[1:]}", path.read_bytes())
                out[f"lying {path.name}"] = {
                    "status": reply.status_code,
                    "answer": reply.text[:160],
                    "file_mb": round(path.stat().st_size / 2**20, 2),
                    "server_cpu_s": round(cpu_seconds(pid) - cpu, 2),
                    "wall_s": round(time.perf_counter() - started, 2),
                }
        out["server_peak_rss_mb"] = round(peak_rss_mb(pid))
    return out


if __name__ == "__main__":
    main()
