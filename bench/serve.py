"""heard serve under load: 16 live conversations at once on loopback, and one audio stream.

A real ``heard serve`` (uvicorn, SQLite) runs in its own process. N clients
(``websockets``) connect to /v1/live at the same time and each streams a LoCoMo
dev conversation as transcript events: every turn grows word by word (a partial
every ``--partial-ms``), then its final. For every event the client measures the
time from sending it to receiving its hypothesis (loopback round trip: the server's
event-in to hypothesis-out plus two local socket hops). The server process's CPU
time over the run gives CPU per conversation.

Then one audio stream: JFK (11 s) as PCM16 frames through heard's streaming
recognizer as the server runs it (100 ms pieces, as fast as it can decode), against
raw faster-whisper transcribing the same audio once, side by side: compute real-time
factors (compute seconds / audio seconds).

``--abuse`` measures instead what one client's misbehaviour costs the others (a flooder, 50
live clients, 30 clients of recall and writes, beside another user's REST recall; see
bench/abuse.py); ``--src DIR`` runs that server from another checkout's src/ (an older commit).

Usage: python bench/serve.py [--conversations 16] [--turns 20] [--partial-ms 150] [--json]
       python bench/serve.py --abuse [--src DIR] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import websockets

from heard.asr.audio import load_audio
from heard.asr.streaming import StreamingRecognizer
from heard.release.cadence import nearest_rank

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from locomo import conversations, turns_of  # noqa: E402
from served import serving  # noqa: E402

JFK = HERE.parent / "tests" / "data" / "audio" / "jfk.flac"


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def script(conv: dict[str, Any], turns: int) -> list[dict[str, Any]]:
    events, t = [], 0
    for turn in turns_of(conv)[:turns]:
        words = turn["text"].split()
        for n in range(1, len(words) + 1):
            events.append({"t_ms": t, "type": "partial", "text": " ".join(words[:n]),
                           "speaker": turn["speaker"]})  # fmt: skip
            t += 150
        events.append(
            {"t_ms": t, "type": "final", "text": turn["text"], "speaker": turn["speaker"]}
        )
        t += 300
    return events


async def converse(url: str, events: list[dict[str, Any]], gap_s: float) -> list[float]:
    latencies = []
    async with websockets.connect(url, max_size=None) as ws:
        for event in events:
            started = time.perf_counter()
            await ws.send(json.dumps(event))
            while True:
                message = json.loads(await ws.recv())
                if message["type"] == "hypothesis":
                    break
            latencies.append((time.perf_counter() - started) * 1000)
            await asyncio.sleep(gap_s)
    return latencies


def run_load(n: int, turns: int, partial_ms: int) -> dict[str, Any]:
    data = conversations()
    with serving([f"u{i}" for i in range(n)]) as (host, tokens, pid):
        scripts = [script(data[i % len(data)], turns) for i in range(n)]
        cpu0, wall0 = cpu_seconds(pid), time.perf_counter()

        async def everyone() -> list[list[float]]:
            return await asyncio.gather(*(
                converse(f"ws://{host}/v1/live?token={tokens[f'u{i}']}", scripts[i],
                         partial_ms / 1000)
                for i in range(n)
            ))  # fmt: skip

        results = asyncio.run(everyone())
        cpu, wall = cpu_seconds(pid) - cpu0, time.perf_counter() - wall0
    latencies = [ms for r in results for ms in r]
    return {
        "conversations": n,
        "events": len(latencies),
        "wall_s": round(wall, 2),
        "events_per_s": round(len(latencies) / wall),
        "latency_p50_ms": round(nearest_rank(latencies, 50), 2),
        "latency_p95_ms": round(nearest_rank(latencies, 95), 2),
        "latency_max_ms": round(max(latencies), 2),
        "server_cpu_s": round(cpu, 2),
        "cpu_per_conversation_pct": round(100 * cpu / wall / n, 2),
    }


def run_audio() -> dict[str, Any]:
    samples = load_audio(JFK)
    audio_s = len(samples) / 16_000
    from faster_whisper import WhisperModel  # noqa: F401 - loaded by heard; warm it first

    recognizer = StreamingRecognizer(speaker="jfk")
    recognizer.push(samples[:1600])  # warm-up (model load)
    recognizer = StreamingRecognizer(speaker="jfk")
    started = time.perf_counter()
    for i in range(0, len(samples), 1600):
        recognizer.push(samples[i : i + 1600])
    recognizer.finish()
    streaming = time.perf_counter() - started

    from heard.asr.whisper import WhisperOptions, load_model

    model = load_model(WhisperOptions()).whisper
    started = time.perf_counter()
    segments, _ = model.transcribe(samples, language="en", beam_size=1)
    list(segments)
    offline = time.perf_counter() - started
    return {
        "audio_s": round(audio_s, 2),
        "streaming_compute_s": round(streaming, 2),
        "streaming_rtf": round(streaming / audio_s, 3),
        "faster_whisper_once_s": round(offline, 2),
        "faster_whisper_rtf": round(offline / audio_s, 3),
        "ratio": round(streaming / offline, 2),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--conversations", type=int, default=16)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--partial-ms", type=int, default=150)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--abuse", action="store_true", help="the abuse scenarios instead")
    parser.add_argument("--src", type=Path, help="with --abuse: the server's src/ folder")
    args = parser.parse_args(argv)
    if args.abuse:
        import abuse

        return abuse.main([*(["--src", str(args.src)] if args.src else []),
                           *(["--json"] if args.json else [])])  # fmt: skip
    result = {
        "load": run_load(args.conversations, args.turns, args.partial_ms),
        "audio": run_audio(),
    }
    if args.json:
        print(json.dumps(result, indent=1))
        return result
    load, audio = result["load"], result["audio"]
    print(f"{load['conversations']} conversations, {load['events']} events in {load['wall_s']} s "
          f"({load['events_per_s']}/s)")  # fmt: skip
    print(f"event in -> hypothesis out (loopback round trip): p50 {load['latency_p50_ms']} ms, "
          f"p95 {load['latency_p95_ms']} ms, max {load['latency_max_ms']} ms")  # fmt: skip
    print(f"server CPU {load['server_cpu_s']} s: {load['cpu_per_conversation_pct']}% of a core "
          "per conversation")  # fmt: skip
    print(f"audio ({audio['audio_s']} s of JFK): streaming recognizer RTF "
          f"{audio['streaming_rtf']} ({audio['streaming_compute_s']} s), faster-whisper once RTF "
          f"{audio['faster_whisper_rtf']} ({audio['faster_whisper_once_s']} s): "
          f"x{audio['ratio']}")  # fmt: skip
    return result


if __name__ == "__main__":
    main()
