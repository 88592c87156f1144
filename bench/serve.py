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

Then the same audio at real-time pace (100 ms frames, then 2 s of silence) over each live
protocol, one after the other on the same server: heard's own socket, Deepgram's and OpenAI's
Realtime transcription session (24 kHz base64 appends, server VAD). The time from the first
frame sent to the first interim result (/v1/live: a hypothesis; /v1/listen: ``Results`` with
``is_final`` false; /v1/realtime: a transcription ``delta``), and from the end of the speech
to the last final (/v1/live: the ``final`` message, sent once stored as evidence; /v1/listen:
the last ``Results`` with ``is_final``; /v1/realtime: ``completed``). And the whole file over
the two REST protocols: OpenAI's ``stream=true`` (the first ``transcript.text.delta`` and the
``done`` after the upload began) and Deepgram's pre-recorded ``POST /v1/listen`` (its answer).

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
import base64
import json
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np
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


INTERIM = {"hypothesis", "conversation.item.input_audio_transcription.delta"}
FINAL = {"final", "conversation.item.input_audio_transcription.completed"}


def _said(m: dict[str, Any]) -> str | None:
    """A final's text (None: not a final)."""
    kind = m.get("type")
    if kind == "Results":
        return str(m["channel"]["alternatives"][0]["transcript"]) if m["is_final"] else None
    if kind in FINAL:
        return str(m.get("text", m.get("transcript", "")))
    return None


async def stream_pace(
    url: str, frames: list[bytes | str], speech_s: float, headers: dict[str, str], closing: str
) -> dict[str, Any]:
    """Send ``frames`` (each 100 ms of audio) at real-time pace to ``url``, then ``closing``;
    when the first interim and the last final came (seconds after the first frame, after the
    speech's end), and the finals' text."""
    first_interim: float | None = None
    last_final: float | None = None
    finals: list[str] = []
    closed = asyncio.Event()
    async with websockets.connect(url, additional_headers=headers, max_size=None) as ws:
        started = time.monotonic()

        async def read() -> None:
            nonlocal first_interim, last_final
            async for raw in ws:
                m = json.loads(raw)
                at = time.monotonic() - started
                kind = m.get("type")
                interim = kind in INTERIM or (kind == "Results" and not m["is_final"])
                if interim and first_interim is None:
                    first_interim = at
                said = _said(m)
                if said:
                    last_final = at
                    finals.append(said)
                if kind in ("end", "Metadata") or (closed.is_set() and kind in FINAL):
                    return

        reader = asyncio.create_task(read())
        for i, frame in enumerate(frames):
            await ws.send(frame)
            await asyncio.sleep(max(0.0, started + (i + 1) / 10 - time.monotonic()))
        closed.set()
        await ws.send(closing)
        await asyncio.wait_for(reader, 60)
    return {
        "first_interim_s": round(first_interim, 2) if first_interim is not None else None,
        "final_after_speech_s": round(last_final - speech_s, 2) if last_final else None,
        "finals": " ".join(finals),
    }


def _at_rate(samples: np.ndarray, rate: int) -> bytes:
    at = np.arange(0, len(samples), 16_000 / rate)
    pcm = (np.interp(at, np.arange(len(samples)), samples) * 32767).astype("<i2")
    return bytes(pcm.tobytes())


def _rest(host: str, token: str, audio: bytes) -> dict[str, Any]:
    """The whole file over OpenAI's streamed transcription and Deepgram's pre-recorded route:
    seconds from the upload's start to the first delta and to the end."""
    out: dict[str, Any] = {}
    with httpx.Client(base_url=f"http://{host}/v1", timeout=120) as http:
        started = time.monotonic()
        first: float | None = None
        text = ""
        with http.stream("POST", "/audio/transcriptions",
                         headers={"Authorization": f"Bearer {token}"},
                         data={"model": "gpt-4o-transcribe", "stream": "true"},
                         files={"file": ("jfk.flac", audio)}) as response:  # fmt: skip
            for line in response.iter_lines():
                if not line.startswith("data: {"):
                    continue
                event = json.loads(line[6:])
                if event["type"] == "transcript.text.delta" and first is None:
                    first = time.monotonic() - started
                if event["type"] == "transcript.text.done":
                    text = event["text"]
        done = round(time.monotonic() - started, 2)
        out["openai_stream"] = {"first_delta_s": round(first or 0.0, 2), "done_s": done,
                                "text": text}  # fmt: skip
        started = time.monotonic()
        answer = http.post("/listen", content=audio, headers={"Authorization": f"Token {token}"})
        transcript = answer.json()["results"]["channels"][0]["alternatives"][0]["transcript"]
        out["deepgram_prerecorded"] = {"answer_s": round(time.monotonic() - started, 2),
                                       "text": transcript}  # fmt: skip
    return out


def run_protocols(speech_s: float = 11.0) -> dict[str, Any]:
    """JFK's first ``speech_s`` seconds, then 2 s of silence, over each live protocol; the
    whole file over the REST ones."""
    samples = load_audio(JFK)[: int(speech_s * 16_000)]
    speech_s = len(samples) / 16_000
    padded = np.concatenate([samples, np.zeros(32_000, dtype=samples.dtype)])
    pcm = _at_rate(padded, 16_000)
    pcm24 = _at_rate(padded, 24_000)
    frames16: list[bytes | str] = [pcm[i : i + 3200] for i in range(0, len(pcm), 3200)]
    appends: list[bytes | str] = [
        json.dumps({"type": "input_audio_buffer.append",
                    "audio": base64.b64encode(pcm24[i : i + 4800]).decode()})
        for i in range(0, len(pcm24), 4800)
    ]  # fmt: skip
    with serving(["stream"]) as (host, tokens, _):
        token = tokens["stream"]
        out: dict[str, Any] = {}
        for name, url, headers, frames, closing in (
            ("live", f"ws://{host}/v1/live?token={token}", {}, frames16,
             json.dumps({"type": "end"})),
            ("listen", f"ws://{host}/v1/listen?interim_results=true&punctuate=true",
             {"Authorization": f"Token {token}"}, frames16, json.dumps({"type": "CloseStream"})),
            ("realtime", f"ws://{host}/v1/realtime?intent=transcription",
             {"Authorization": f"Bearer {token}"}, appends,
             json.dumps({"type": "input_audio_buffer.commit"})),
        ):  # fmt: skip
            out[name] = asyncio.run(stream_pace(url, frames, speech_s, headers, closing))
        out.update(_rest(host, token, JFK.read_bytes()))
    return {"speech_s": round(speech_s, 2), **out}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--conversations", type=int, default=16)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--partial-ms", type=int, default=150)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--abuse", action="store_true", help="the abuse scenarios instead")
    parser.add_argument("--protocols-only", action="store_true",
                        help="only the protocols: each live socket at real-time pace, "
                        "the REST ones on the whole file")  # fmt: skip
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
    for name in ("live", "listen", "realtime"):
        p = protocols[name]
        print(f"/v1/{name:8} at 1x: first interim {p['first_interim_s']} s after the first "
              f"frame, last final {p['final_after_speech_s']} s after the speech ends")  # fmt: skip
    o, d = protocols["openai_stream"], protocols["deepgram_prerecorded"]
    print(
        f"/v1/audio/transcriptions stream=true: first delta {o['first_delta_s']} s, done "
        f"{o['done_s']} s after the upload began; POST /v1/listen: answer {d['answer_s']} s"
    )
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
