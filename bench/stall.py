"""One heavy user against everyone else (issue 57, items 1 and 6), on a real ``heard serve``
(uvicorn, SQLite, tiny.en), from this checkout or another one's ``src/`` (``--src``).

User B does two small things throughout, and each is measured against B alone:

* a tiny GET (``/v1/me``), one after another: its latency;
* a live Deepgram stream (``/v1/listen``, 16 kHz PCM at real-time pace: JFK's 11 s, three
  times with a second of silence between): how late each final comes after the end of the
  audio it covers (arrival minus the moment that audio was sent).

Meanwhile user A does its worst, one scenario after another:

* **uploads**: 12 uploads at once, again and again, of a 3 h 50 min MP3 (legal: the longest
  track is 4 h), whose length the server counts packet by packet;
* **event streams**: 400 event streams on one meeting that waits to be run;
* **files**: 4 threads re-posting JFK to OpenAI's transcription route, one after another
  (issue 71: the server's own CPU work beside live decoding);
* **rename and search**: 12 loops of renaming a participant of a transcribed meeting and then
  searching A's meetings, with 50,000 utterances in A's memory.

The server's peak resident memory (VmHWM) is read at the end of each scenario's server.
Usage: python bench/stall.py [--src DIR] [--seconds S] [--json]  (bench/abuse.py --stall-only)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import websockets

from heard.asr.audio import load_audio
from heard.release.cadence import nearest_rank

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from served import serving  # noqa: E402

JFK = HERE.parent / "tests" / "data" / "audio" / "jfk.flac"
LONG_MP3_S = 3 * 3600 + 50 * 60
UPLOADS = 12
STREAMS = 400
LOOPS = 12
UTTERANCES = 50_000
FILE_THREADS = 4
SCENARIOS = ("uploads", "streams", "files", "renames")


def long_mp3(folder: Path, seconds: float = LONG_MP3_S) -> Path:
    """``seconds`` of MPEG-2 layer III silence (22.05 kHz mono, 8 kbit/s: about 14 MB), with
    no ID3 tag and no Xing header: 10 s encoded, its frames repeated (silence's frames are
    all alike), as a long low-bitrate recording is."""
    import av

    piece = folder / "piece.mp3"
    with av.open(str(piece), "w", options={"id3v2_version": "0", "write_xing": "0"}) as out:
        stream = out.add_stream("libmp3lame", rate=22050, layout="mono")
        stream.bit_rate = 8000
        for _ in range(10 * 22050 // 1152):
            frame = av.AudioFrame.from_ndarray(np.zeros((1, 1152), np.int16), "s16", "mono")
            frame.sample_rate = 22050
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    with av.open(str(piece)) as encoded:
        frames = [bytes(p) for p in encoded.demux(encoded.streams.audio[0]) if p.size]
    middle = b"".join(frames[10:110])  # 100 whole frames, past the encoder's start
    frames_needed = int(seconds * 22050 / 576)  # MPEG-2 layer III: 576 samples a frame
    path = folder / "long.mp3"
    with path.open("wb") as f:
        for _ in range(frames_needed // 100):
            f.write(middle)
    return path


def summary(ms: list[float]) -> dict[str, float]:
    if not ms:
        return {"n": 0}
    return {"n": len(ms), **{f"p{q}_ms": round(nearest_rank(ms, q), 1) for q in (50, 95)},
            "max_ms": round(max(ms), 1)}  # fmt: skip


def gets(host: str, token: str, path: str, until: threading.Event) -> list[float]:
    """GET ``path`` one after another (20 a second at most) until ``until``: each in ms."""
    out: list[float] = []
    auth = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=f"http://{host}", timeout=300, headers=auth) as client:
        while not until.is_set():
            started = time.perf_counter()
            client.get(path).raise_for_status()
            out.append((time.perf_counter() - started) * 1000)
            time.sleep(0.05)
    return out


def _speech(times: int) -> bytes:
    jfk = (load_audio(JFK) * 32767).astype(np.int16)
    quiet = np.zeros(16000, np.int16)
    return np.concatenate([jfk, quiet] * times).tobytes()


async def late_finals(host: str, token: str, lateness: list[float], times: int = 3) -> None:
    """B's stream at real-time pace (JFK ``times`` times): each final's lateness in ms, into
    ``lateness`` as it comes (a stream cut short keeps what it got)."""
    pcm, step = _speech(times), 3200  # 100 ms
    url = (f"ws://{host}/v1/listen?encoding=linear16&sample_rate=16000&channels=1"
           f"&punctuate=true")  # fmt: skip
    async with websockets.connect(url, additional_headers={"Authorization": f"Token {token}"},
                                  max_size=None) as ws:  # fmt: skip
        started = time.monotonic()

        async def send() -> None:
            for i in range(0, len(pcm), step):
                await ws.send(pcm[i : i + step])
                ahead = started + (i + step) / 32000 - time.monotonic()
                if ahead > 0:
                    await asyncio.sleep(ahead)
            await ws.send(json.dumps({"type": "CloseStream"}))

        sender = asyncio.create_task(send())
        async for raw in ws:
            if isinstance(raw, bytes):
                continue
            message = json.loads(raw)
            if message.get("type") == "Results" and message.get("is_final"):
                alternative = message["channel"]["alternatives"][0]
                if alternative["transcript"]:
                    end_s = message["start"] + message["duration"]
                    lateness.append((time.monotonic() - started - end_s) * 1000)
        await sender


SEARCH = "/v1/search?q=ask+not+what+your+country"


def measured_b(
    host: str, token: str, paths: tuple[str, ...] = ("/v1/me",), times: int = 3
) -> dict[str, Any]:
    """B's GETs of ``paths`` (each in a loop of its own) and B's stream of JFK ``times``
    times, once (with A's load, when it runs, all along)."""
    until = threading.Event()
    timed: dict[str, list[float]] = {p: [] for p in paths}
    getters = [threading.Thread(target=lambda p=p: timed[p].extend(gets(host, token, p, until)))
               for p in paths]  # fmt: skip
    for getter in getters:
        getter.start()
    finals: list[float] = []
    failed: dict[str, str] = {}
    try:
        asyncio.run(late_finals(host, token, finals, times))
    except (OSError, TimeoutError, websockets.exceptions.WebSocketException) as e:
        # the old server could not even open B's socket beside A's uploads: a result
        failed["stream_failed"] = f"{type(e).__name__}: {e}"
    finally:
        until.set()
        for getter in getters:
            getter.join()
    return {**{p: summary(ms) for p, ms in timed.items()}, "finals_late": summary(finals),
            "finals": len(finals), **failed}  # fmt: skip


def _meeting(client: httpx.Client, title: str, participant: str = "p") -> str:
    meeting = {"title": title, "participants": [{"name": participant}]}
    created = client.post("/v1/meetings", json=meeting)
    created.raise_for_status()
    mid: str = created.json()["id"]
    return mid


def _client(host: str, token: str, timeout: float = 600) -> httpx.Client:
    return httpx.Client(base_url=f"http://{host}", timeout=timeout,
                        headers={"Authorization": f"Bearer {token}"})  # fmt: skip


def _peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024)
    return 0.0


def _until(stop: threading.Event, loops: list[threading.Thread]) -> None:
    """Run ``loops`` (each checks ``stop``) until ``stop`` is set and they have ended."""
    for t in loops:
        t.start()
    stop.wait()
    for t in loops:
        t.join()


def heavy_uploads(
    host: str, token: str, mp3: Path, stop: threading.Event, n: int = UPLOADS
) -> dict[int, int]:
    """A's ``n`` uploads at once, again and again until ``stop``: the answers' statuses."""
    body = mp3.read_bytes()
    answers: dict[int, int] = {}
    lock = threading.Lock()
    with _client(host, token) as client:
        mids = [_meeting(client, f"long {i}") for i in range(n)]

    def loop(mid: str) -> None:
        with _client(host, token) as client:
            while not stop.is_set():
                status = client.put(f"/v1/meetings/{mid}/tracks/p", content=body).status_code
                with lock:
                    answers[status] = answers.get(status, 0) + 1

    _until(stop, [threading.Thread(target=loop, args=(m,)) for m in mids])
    return answers


def heavy_files(
    host: str, token: str, stop: threading.Event, threads: int = FILE_THREADS
) -> dict[int, int]:
    """A's ``threads`` loops posting JFK to OpenAI's transcription route until ``stop``: the
    answers' statuses."""
    answers: dict[int, int] = {}
    lock = threading.Lock()
    audio = JFK.read_bytes()

    def loop() -> None:
        with _client(host, token) as client:
            while not stop.is_set():
                status = client.post("/v1/audio/transcriptions", data={"model": "whisper-1"},
                                     files={"file": ("jfk.flac", audio)}).status_code  # fmt: skip
                with lock:
                    answers[status] = answers.get(status, 0) + 1

    _until(stop, [threading.Thread(target=loop) for _ in range(threads)])
    return answers


async def _streams(
    host: str, token: str, mid: str, stop: threading.Event, n: int
) -> dict[int, int]:
    answers: dict[int, int] = {}
    limits = httpx.Limits(max_connections=n + 10)
    auth = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=f"http://{host}", timeout=None, limits=limits,
                                 headers=auth) as client:  # fmt: skip

        async def follow() -> None:
            async with client.stream("GET", f"/v1/meetings/{mid}/events") as reply:
                answers[reply.status_code] = answers.get(reply.status_code, 0) + 1
                if reply.status_code != 200:
                    return
                async for _ in reply.aiter_lines():
                    if stop.is_set():
                        return

        tasks = [asyncio.create_task(follow()) for _ in range(n)]
        while not stop.is_set():
            await asyncio.sleep(0.2)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return answers


def heavy_streams(host: str, token: str, stop: threading.Event, n: int = STREAMS) -> dict[int, int]:
    """A's ``n`` event streams on one meeting that waits to be run, until ``stop``: the
    answers' statuses."""
    with _client(host, token) as client:
        mid = _meeting(client, "pending")
        client.put(f"/v1/meetings/{mid}/tracks/p", content=JFK.read_bytes()).raise_for_status()
    return asyncio.run(_streams(host, token, mid, stop, n))


def _remember_many(client: httpx.Client, n: int = UTTERANCES) -> None:
    words = "ferry lisbon office april paint garden river budget launch".split()
    batch = 5000
    for start in range(0, n, batch):
        utterances = [{"id": f"u{i}", "speaker": "ana",
                       "text": f"note {i} about the {words[i % 9]} and the {words[i % 7]}"}
                      for i in range(start, min(n, start + batch))]  # fmt: skip
        while (r := client.post("/v1/memory/evidence",
                                json={"utterances": utterances})).status_code == 429:  # fmt: skip
            time.sleep(float(r.headers.get("Retry-After", "1")))
        r.raise_for_status()


def _transcribed(client: httpx.Client, title: str, participants: int = 1) -> str:
    """A meeting of ``participants`` (p0, p1...), JFK's speech each, transcribed."""
    names = [f"p{i}" for i in range(participants)]
    meeting = {"title": title, "participants": [{"name": n} for n in names]}
    made = client.post("/v1/meetings", json=meeting)
    made.raise_for_status()
    mid: str = made.json()["id"]
    for name in names:
        client.put(f"/v1/meetings/{mid}/tracks/{name}", content=JFK.read_bytes()).raise_for_status()
    client.post(f"/v1/meetings/{mid}/run").raise_for_status()
    while client.get(f"/v1/meetings/{mid}").json()["status"] not in ("complete", "partial",
                                                                     "failed"):  # fmt: skip
        time.sleep(0.5)
    return mid


def heavy_renames(
    host: str, token: str, stop: threading.Event, mid: str, loops: int = LOOPS
) -> dict[int, int]:
    """A's ``loops`` loops of rename then search (loop i renames participant i of meeting
    ``mid`` back and forth), until ``stop``: the answers' statuses."""
    answers: dict[int, int] = {}
    lock = threading.Lock()

    def loop(i: int) -> None:  # each loop its own participant: p{i} -> q{i} -> p{i}...
        with _client(host, token) as client:
            n = 0
            while not stop.is_set():
                names = (f"p{i}", f"q{i}") if n % 2 == 0 else (f"q{i}", f"p{i}")
                for r in (
                    client.put(
                        f"/v1/meetings/{mid}/participants/{names[0]}", json={"name": names[1]}
                    ),
                    client.get("/v1/search", params={"q": "ask not what your country"}),
                ):
                    with lock:
                        answers[r.status_code] = answers.get(r.status_code, 0) + 1
                n += 1

    _until(stop, [threading.Thread(target=loop, args=(i,)) for i in range(loops)])
    return answers


def say(what: str) -> None:
    """Progress on stderr: the whole run takes minutes."""
    print(f"[stall {time.strftime('%H:%M:%S')}] {what}", file=sys.stderr, flush=True)


def _beside(
    host: str,
    b: str,
    heavy: Callable[[threading.Event], Any],
    warm_s: float,
    paths: tuple[str, ...] = ("/v1/me",),
    times: int = 3,
) -> Any:
    """B measured while ``heavy`` runs (given ``warm_s`` to get going first)."""
    say(f"A's load starts; B is measured in {warm_s:g} s")
    stop, result = threading.Event(), []
    worker = threading.Thread(target=lambda: result.append(heavy(stop)))
    worker.start()
    try:
        time.sleep(warm_s)
        measured = measured_b(host, b, paths, times)
    finally:
        say("B measured; A's load stops")
        stop.set()
        worker.join()
    return {**measured, "a_answers": result[0] if result else None}


def run(
    src: Path | None,
    warm_s: float = 8.0,
    *,
    uploads: int = UPLOADS,
    mp3_s: float = LONG_MP3_S,
    streams: int = STREAMS,
    loops: int = LOOPS,
    utterances: int = UTTERANCES,
    times: int = 3,
    scenarios: tuple[str, ...] = SCENARIOS,
) -> dict[str, Any]:
    """The scenarios (smaller ones by the keywords: a test's short run)."""
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        mp3 = long_mp3(Path(tmp), mp3_s)
        out["mp3"] = {"mb": round(mp3.stat().st_size / 2**20, 1), "seconds": mp3_s}
        if {"uploads", "streams", "files"} & set(scenarios):
            with serving(["a", "b"], src) as (host, tokens, pid):
                a, b = tokens["a"], tokens["b"]
                measured_b(host, b, times=1)  # the model loaded, the socket warmed
                say("B alone")
                out["b_alone"] = measured_b(host, b, times=times)
                if "uploads" in scenarios:
                    say("beside A's uploads")
                    out["uploads"] = _beside(
                        host, b, lambda s: heavy_uploads(host, a, mp3, s, uploads), warm_s,
                        times=times,
                    )  # fmt: skip
                if "streams" in scenarios:
                    say("beside A's event streams")
                    out["streams"] = _beside(
                        host, b, lambda s: heavy_streams(host, a, s, streams), warm_s, times=times
                    )
                if "files" in scenarios:
                    say("beside A's files to transcribe")
                    out["files"] = _beside(
                        host, b, lambda s: heavy_files(host, a, s), warm_s, times=times
                    )
                out["peak_rss_mb"] = _peak_rss_mb(pid)
        if "renames" not in scenarios:
            return out
        with serving(["a", "b"], src) as (host, tokens, pid):
            a, b = tokens["a"], tokens["b"]
            say(f"A's meeting transcribed, {utterances} utterances remembered")
            with _client(host, a) as client:
                mid = _transcribed(client, "renamed", loops)
                _remember_many(client, utterances)
            with _client(host, b) as client:
                _transcribed(client, "bob's")
            both = ("/v1/me", SEARCH)
            measured_b(host, b, both, times=1)
            out["b_alone_2"] = measured_b(host, b, both, times)
            say("beside A's renames and searches")
            out["renames"] = _beside(
                host, b, lambda s: heavy_renames(host, a, s, mid, loops), warm_s, both, times
            )
            out["peak_rss_mb_2"] = _peak_rss_mb(pid)
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--src", type=Path, help="run the server from this src/ folder")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS),
                        help=f"which of A's: {', '.join(SCENARIOS)} (comma-separated)")  # fmt: skip
    args = parser.parse_args(argv)
    scenarios = tuple(args.scenarios.split(","))
    if unknown := set(scenarios) - set(SCENARIOS):
        parser.error(f"unknown scenario {sorted(unknown)[0]!r}: of {', '.join(SCENARIOS)}")
    result = run(args.src, scenarios=scenarios)
    print(json.dumps(result, indent=1) if args.json else "\n".join(
        f"{k:<12} {v}" for k, v in result.items()))  # fmt: skip
    return result


if __name__ == "__main__":
    main()
