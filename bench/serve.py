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

Then the same audio at real-time pace (100 ms frames, then 2 s of silence) over heard's own
socket and over the Deepgram-compatible one, one after the other on the same server: the time
from the first frame sent to the first interim result (/v1/live: a hypothesis; /v1/listen:
``Results`` with ``is_final`` false), and from the end of the speech to the last final
(/v1/live: the ``final`` message, sent once stored as evidence; /v1/listen: the last
``Results`` with ``is_final``).

``--abuse`` measures instead what one client's misbehaviour costs the others (a flooder, 50
live clients, 30 clients of recall and writes, beside another user's REST recall; see
bench/abuse.py); ``--src DIR`` runs that server from another checkout's src/ (an older commit).

Usage: python bench/serve.py [--conversations 16] [--turns 20] [--partial-ms 150] [--json]
       python bench/serve.py --protocols-only [--json]
       python bench/serve.py --abuse [--src DIR] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

import websockets

from heard.asr.audio import load_audio
from heard.asr.streaming import WhisperStreamingRecognizer
from heard.release.cadence import nearest_rank

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from locomo import conversations, turns_of  # noqa: E402
from served import cpu_seconds, serving  # noqa: E402

JFK = HERE.parent / "tests" / "data" / "audio" / "jfk.flac"


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

    recognizer = WhisperStreamingRecognizer(speaker="jfk")
    recognizer.push(samples[:1600])  # warm-up (model load)
    recognizer = WhisperStreamingRecognizer(speaker="jfk")
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


async def stream_pace(
    url: str, pcm: bytes, speech_s: float, headers: dict[str, str]
) -> dict[str, Any]:
    """Stream ``pcm`` at real-time pace to ``url``; when the first interim and the last final
    came (seconds after the first frame, after the speech's end), and the finals' text."""
    first_interim: float | None = None
    last_final: float | None = None
    finals: list[str] = []
    async with websockets.connect(url, additional_headers=headers, max_size=None) as ws:
        started = time.monotonic()

        async def read() -> None:
            nonlocal first_interim, last_final
            async for raw in ws:
                m = json.loads(raw)
                at = time.monotonic() - started
                interim = m.get("type") == "hypothesis" or (
                    m.get("type") == "Results" and not m["is_final"]
                )
                final = m.get("type") == "final" or (m.get("type") == "Results" and m["is_final"])
                if interim and first_interim is None:
                    first_interim = at
                if final:
                    last_final = at
                    text = m["text"] if m["type"] == "final" else (
                        m["channel"]["alternatives"][0]["transcript"])  # fmt: skip
                    finals.append(text)
                if m.get("type") in ("end", "Metadata"):
                    return

        reader = asyncio.create_task(read())
        for i in range(0, len(pcm), 3200):
            await ws.send(pcm[i : i + 3200])
            await asyncio.sleep(max(0.0, started + (i + 3200) / 32_000 - time.monotonic()))
        closing = {"type": "end"} if "/v1/live" in url else {"type": "CloseStream"}
        await ws.send(json.dumps(closing))
        await asyncio.wait_for(reader, 60)
    return {
        "first_interim_s": round(first_interim, 2) if first_interim is not None else None,
        "final_after_speech_s": round(last_final - speech_s, 2) if last_final else None,
        "finals": " ".join(finals),
    }


def run_protocols(speech_s: float = 11.0) -> dict[str, Any]:
    """JFK's first ``speech_s`` seconds, then 2 s of silence, over /v1/live and /v1/listen."""
    samples = load_audio(JFK)[: int(speech_s * 16_000)]
    speech_s = len(samples) / 16_000
    pcm = (samples * 32767).astype("<i2").tobytes() + b"\x00\x00" * 32_000
    with serving(["stream"]) as (host, tokens, _):
        token = tokens["stream"]
        out = {}
        for name, url, headers in (
            ("live", f"ws://{host}/v1/live?token={token}", {}),
            ("listen", f"ws://{host}/v1/listen?interim_results=true&punctuate=true",
             {"Authorization": f"Token {token}"}),
        ):  # fmt: skip
            out[name] = asyncio.run(stream_pace(url, pcm, speech_s, headers))
    return {"speech_s": round(speech_s, 2), **out}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--conversations", type=int, default=16)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--partial-ms", type=int, default=150)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--abuse", action="store_true", help="the abuse scenarios instead")
    parser.add_argument("--protocols-only", action="store_true",
                        help="only /v1/live beside /v1/listen at real-time pace")  # fmt: skip
    parser.add_argument("--src", type=Path, help="with --abuse: the server's src/ folder")
    args = parser.parse_args(argv)
    if args.abuse:
        import abuse

        return abuse.main([*(["--src", str(args.src)] if args.src else []),
                           *(["--json"] if args.json else [])])  # fmt: skip
    if args.protocols_only:
        result: dict[str, Any] = {"protocols": run_protocols()}
    else:
        result = {
            "load": run_load(args.conversations, args.turns, args.partial_ms),
            "audio": run_audio(),
            "protocols": run_protocols(),
        }
    if args.json:
        print(json.dumps(result, indent=1))
        return result
    if not args.protocols_only:
        _print_load(result["load"], result["audio"])
    protocols = result["protocols"]
    for name in ("live", "listen"):
        p = protocols[name]
        print(f"/v1/{name:6} at 1x: first interim {p['first_interim_s']} s after the first frame, "
              f"last final {p['final_after_speech_s']} s after the speech ends")  # fmt: skip
    return result


def _print_load(load: dict[str, Any], audio: dict[str, Any]) -> None:
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


if __name__ == "__main__":
    main()
