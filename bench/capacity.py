"""Many live microphones on one machine: N real-time clients of /v1/live at once, beside
whisper_streaming's LocalAgreement-2 run as N processes, on the same call.

The call (about 35 s): JFK (11 s, tests/data/audio), the two speakers of
stereo_diarization.wav one after the other (faster-whisper's test data), and a two-voice
espeak-ng exchange made at run time, with short pauses between. Its words' times come from an
offline transcription (tiny.en, beam 5, word timestamps); its text is the known one (JFK's
and espeak's scripts; the two speakers' sentences as tiny.en beam 5 reads each channel alone).

heard: a real ``heard serve`` (one process, SQLite); N clients (one token each) stream the
call as 100 ms PCM16 frames at 1x, all starting together, then 1.5 s of silence and
``{"type": "end"}``. The peer: whisper_streaming's online processor re-implemented from its
description (``bench/peers.py``: faster-whisper tiny.en int8, beam 5 as it ships, a decode
whenever 1 s of new audio has arrived, computation-aware), one process per stream as its
README runs it, on the same audio at the same pace. Per N and system:

* lag: how far behind the audio the transcript shown runs: from a word's end in the audio to
  the first message that shows it or a misreading of it in its place, p50 and max;
* tail: the last commit after the audio ends;
* commit: from a word's end in the audio to when it was shown for good (heard: the stable
  prefix of /v1/live's hypotheses that no later message changed, or the final; the peer: its
  commits), p50 and p95 over every word of every stream;
* WER of what was committed against the text; for scale, tiny.en offline (the whole call at
  once, greedy as the streams decode, and beam 5);
* CPU seconds per audio second, over every stream (heard: the server process; the peer: its
  processes).

WhisperLiveKit (PyPI) needs torch and torchaudio, which heard's environment does not install;
it is not run here (see BENCHMARKS.md).

Usage: python bench/capacity.py [--streams 1,2,4,8,16] [--no-peer] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import difflib
import json
import multiprocessing as mp
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jiwer
import numpy as np
import websockets

from heard.asr.audio import SAMPLE_RATE, load_audio
from heard.asr.streaming import strip_punctuation
from heard.release.cadence import nearest_rank

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO / "tools"))
from make_meeting import Voice, speak  # noqa: E402
from served import cpu_seconds, serving  # noqa: E402

AUDIO = REPO / "tests" / "data" / "audio"
JFK = ("And so my fellow Americans, ask not what your country can do for you, ask what you can "
       "do for your country.")  # fmt: skip
STEREO = [
    "He began a confused complaint against the wizard, who had vanished behind the curtain on "
    "the left.",
    "The horizon seems extremely distant.",
]
EXCHANGE = [
    (Voice("en-us+f3", 160), "Can you send me the numbers before lunch?"),
    (Voice("en+m3", 165), "Sure, I will share the sheet in ten minutes."),
    (Voice("en-us+f3", 160), "Great, then we can review the budget together this afternoon."),
]
PAUSE_S = 0.8
TAIL_SILENCE_S = 1.5
FRAME = SAMPLE_RATE // 10


@dataclass
class Call:
    samples: np.ndarray
    truth: str
    word_ends: list[tuple[str, float]]
    """The call's words (normalized) as offline tiny.en hears them, with their end times."""

    @property
    def seconds(self) -> float:
        return len(self.samples) / SAMPLE_RATE


def _speech_only(x: np.ndarray) -> np.ndarray:
    from faster_whisper.vad import VadOptions, get_speech_timestamps

    spans = get_speech_timestamps(x, VadOptions(speech_pad_ms=200))
    return x[spans[0]["start"] : spans[-1]["end"]] if spans else x


def make_call() -> Call:
    import soundfile as sf  # type: ignore[import-untyped]

    pause = np.zeros(int(PAUSE_S * SAMPLE_RATE), dtype=np.float32)
    stereo, _ = sf.read(AUDIO / "stereo_diarization.wav", dtype="float32")
    parts: list[Any] = [load_audio(AUDIO / "jfk.flac"), pause]
    for channel in range(2):
        parts += [_speech_only(np.ascontiguousarray(stereo[:, channel])), pause]
    with tempfile.TemporaryDirectory() as tmp:
        for i, (voice, text) in enumerate(EXCHANGE):
            parts += [speak(text, voice, Path(tmp), i).astype(np.float32) / 32768, pause[:8000]]
    samples = np.concatenate(parts).astype(np.float32)
    truth = strip_punctuation(" ".join([JFK, *STEREO, *(t for _, t in EXCHANGE)]))
    from heard.asr.whisper import WhisperOptions, load_model

    model = load_model(WhisperOptions()).whisper
    segments, _ = model.transcribe(samples, language="en", beam_size=5, word_timestamps=True,
                                   condition_on_previous_text=False)  # fmt: skip
    ends = [(strip_punctuation(w.word), w.end) for s in segments for w in s.words or ()]
    return Call(samples, truth, [(w, e) for w, e in ends if w])


def offline_wer(call: Call) -> dict[str, float]:
    from heard.asr.whisper import WhisperOptions, load_model

    model = load_model(WhisperOptions()).whisper
    out = {}
    for beam in (1, 5):
        segments, _ = model.transcribe(call.samples, language="en", beam_size=beam,
                                       condition_on_previous_text=False)  # fmt: skip
        text = strip_punctuation(" ".join(s.text for s in segments))
        out[f"beam{beam}"] = round(jiwer.wer(call.truth, text), 3)
    return out


def _matched_ends(words: list[str], call: Call) -> list[float | None]:
    """For each of ``words``, the end time of the call's word it aligns with (or None)."""
    ref = [w for w, _ in call.word_ends]
    out: list[float | None] = [None] * len(words)
    matcher = difflib.SequenceMatcher(a=words, b=ref, autojunk=False)
    for block in matcher.get_matching_blocks():
        for k in range(block.size):
            out[block.a + k] = call.word_ends[block.b + k][1]
    return out


@dataclass
class StreamResult:
    lags: list[float] = field(default_factory=list)
    commits: list[float] = field(default_factory=list)
    """Per committed word matched to the call: commit time minus the word's end."""
    tail_s: float = 0.0
    text: str = ""
    steps: list[tuple[float, int]] = field(default_factory=list)
    """(when, step ms) each time the server said the step moved."""
    late: list[tuple[float, str, float]] = field(default_factory=list)
    """The words shown latest: (lag, word, its end in the audio)."""


def _score(
    shown: list[tuple[float, list[str]]],
    committed: list[tuple[float, str]],
    call: Call,
    audio_end_s: float,
) -> StreamResult:
    """``shown``: (arrival, the whole transcript shown then) while the audio plays;
    ``committed``: (when, word) for each word as finally committed, in order."""
    result = StreamResult()
    first_shown: dict[int, float] = {}  # index of the call's word -> when first shown
    ref = [w for w, _ in call.word_ends]
    for at, words in shown:
        # a word is reached once the transcript holds it, or a reading of it ("plane to get
        # to" for "complaint against"): lag is how far behind the audio the transcript runs
        matcher = difflib.SequenceMatcher(a=words, b=ref, autojunk=False)
        for op, a1, a2, b1, b2 in matcher.get_opcodes():
            if op in ("equal", "replace"):
                for b in range(b1, b1 + min(a2 - a1, b2 - b1)):
                    first_shown.setdefault(b, at)
    result.lags = [at - call.word_ends[i][1] for i, at in first_shown.items()]
    result.late = sorted(((round(at - call.word_ends[i][1], 2), call.word_ends[i][0],
                           round(call.word_ends[i][1], 2)) for i, at in first_shown.items()),
                         reverse=True)[:3]  # fmt: skip
    words = [w for _, w in committed]
    for (at, _), end in zip(committed, _matched_ends(words, call), strict=True):
        if end is not None:
            result.commits.append(at - end)
    result.tail_s = max((at for at, _ in committed), default=audio_end_s) - audio_end_s
    result.text = " ".join(words)
    return result


# -- heard: clients of /v1/live -------------------------------------------------------------


async def live_client(url: str, pcm: bytes, start: float, call: Call) -> StreamResult:
    shown: list[tuple[float, list[str]]] = []
    finals: list[str] = []  # texts of finished turns
    stable_since: dict[str, list[tuple[str, float]]] = {}  # per turn: stable words, since
    committed: list[tuple[float, str]] = []
    current: dict[str, list[str]] = {}
    steps: list[tuple[float, int]] = []
    async with websockets.connect(url, max_size=None) as ws:

        async def read() -> None:
            async for raw in ws:
                m = json.loads(raw)
                at = time.monotonic() - start
                kind = m.get("type")
                if kind == "hypothesis":
                    turn = m["turn"]
                    stable = strip_punctuation(m["stable"]).split()
                    old = stable_since.get(turn, [])
                    keep = 0
                    while keep < min(len(old), len(stable)) and old[keep][0] == stable[keep]:
                        keep += 1
                    stable_since[turn] = old[:keep] + [(w, at) for w in stable[keep:]]
                    current[turn] = stable + strip_punctuation(m["unstable"]).split()
                    open_words = [w for ws_ in current.values() for w in ws_]
                    shown.append((at, " ".join(finals).split() + open_words))
                elif kind == "final":
                    turn = m["turn"]
                    words = strip_punctuation(m["text"]).split()
                    since = stable_since.pop(turn, [])
                    current.pop(turn, None)
                    for i, w in enumerate(words):
                        ok = i < len(since) and since[i][0] == w
                        committed.append((since[i][1] if ok else at, w))
                    finals.append(" ".join(words))
                elif kind == "degraded":
                    steps.append((round(at, 1), m["chunk_ms"]))
                elif kind == "end":
                    return

        reader = asyncio.create_task(read())
        frame_bytes = FRAME * 2
        for i in range(0, len(pcm), frame_bytes):
            await ws.send(pcm[i : i + frame_bytes])
            due = start + (i + frame_bytes) / (2 * SAMPLE_RATE)
            await asyncio.sleep(max(0.0, due - time.monotonic()))
        await ws.send(json.dumps({"type": "end"}))
        await asyncio.wait_for(reader, 120)
    scored = _score(shown, committed, call, call.seconds)
    scored.steps = steps
    return scored


def run_heard(call: Call, counts: list[int]) -> dict[int, dict[str, Any]]:
    pcm_audio = (np.clip(call.samples, -1, 1) * 32767).astype("<i2").tobytes()
    pcm = pcm_audio + b"\x00\x00" * int(TAIL_SILENCE_S * SAMPLE_RATE)
    users = [f"mic{i}" for i in range(max(counts))]
    out = {}
    with serving(users) as (host, tokens, pid):
        # warm up: the model loads on the first stream
        asyncio.run(_clients(host, tokens, users[:1], pcm[: 2 * SAMPLE_RATE * 2], call))
        for n in counts:
            before = cpu_seconds(pid)
            results = asyncio.run(_clients(host, tokens, users[:n], pcm, call))
            cpu = cpu_seconds(pid) - before
            out[n] = _summary(results, call, cpu)
            print(f"  heard {n:2d} streams: {_line(out[n])}", file=sys.stderr)
    return out


async def _clients(
    host: str, tokens: dict[str, str], users: list[str], pcm: bytes, call: Call
) -> list[StreamResult]:
    start = time.monotonic() + 0.5
    await asyncio.sleep(0)
    tasks = [live_client(f"ws://{host}/v1/live?token={tokens[u]}&speaker={u}", pcm, start, call)
             for u in users]  # fmt: skip
    return list(await asyncio.gather(*tasks))


def _summary(results: list[StreamResult], call: Call, cpu_s: float) -> dict[str, Any]:
    lags = [x for r in results for x in r.lags]
    commits = [x for r in results for x in r.commits]
    wers = [jiwer.wer(call.truth, r.text) if r.text else 1.0 for r in results]
    return {
        "streams": len(results),
        "lag_p50_s": round(nearest_rank(lags, 50), 2),
        "lag_p95_s": round(nearest_rank(lags, 95), 2),
        "lag_max_s": round(max(lags, default=0.0), 2),
        "tail_max_s": round(max(r.tail_s for r in results), 2),
        "commit_p50_s": round(nearest_rank(commits, 50), 2),
        "commit_p95_s": round(nearest_rank(commits, 95), 2),
        "wer_mean": round(float(np.mean(wers)), 3),
        "cpu_per_audio_s": round(cpu_s / (len(results) * call.seconds), 3),
        "steps": results[0].steps,
        "wers": [round(w, 3) for w in wers],
        "latest_shown": max(results, key=lambda r: max(r.lags, default=0)).late,
        "worst": max(results, key=lambda r: jiwer.wer(call.truth, r.text) if r.text else 1).text,
    }


def _line(s: dict[str, Any]) -> str:
    return (f"lag p50 {s['lag_p50_s']} p95 {s['lag_p95_s']} max {s['lag_max_s']} s, "
            f"tail {s['tail_max_s']} s, "
            f"commit p50 {s['commit_p50_s']} p95 {s['commit_p95_s']} s, WER {s['wer_mean']}, "
            f"CPU {s['cpu_per_audio_s']} s/s")  # fmt: skip


# -- the peer: whisper_streaming's online processor, one process per stream -----------------


def _peer_stream(samples: np.ndarray, start: float, queue: Any) -> None:
    from faster_whisper import WhisperModel

    from heard.asr.models import model_files
    from peers import OnlineLocalAgreement

    model = WhisperModel(str(model_files("tiny.en")), device="cpu", compute_type="int8")
    online = OnlineLocalAgreement(model)
    cpu0 = time.process_time()
    shown: list[tuple[float, list[str]]] = []
    committed: list[tuple[float, str]] = []
    fed = 0
    while time.time() < start:
        time.sleep(0.005)
    total = len(samples)
    while fed < total:
        now = time.time() - start
        available = min(total, int(now * SAMPLE_RATE))
        if available - fed < SAMPLE_RATE and available < total:
            time.sleep(0.01)
            continue
        done, pending = online.step(samples[fed:available])
        fed = available
        at = time.time() - start
        committed += [(at, strip_punctuation(t)) for _, _, t in done if strip_punctuation(t)]
        shown.append((at, [w for _, w in committed] + strip_punctuation(" ".join(pending)).split()))
    at = time.time() - start
    committed += [(at, strip_punctuation(t)) for _, _, t in online.finish() if strip_punctuation(t)]
    queue.put((shown, committed, time.process_time() - cpu0))


def run_peer(call: Call, counts: list[int]) -> dict[int, dict[str, Any]]:
    ctx = mp.get_context("spawn")
    out = {}
    for n in counts:
        queue = ctx.Queue()
        start = time.time() + 8.0  # the processes load their models first
        procs = [ctx.Process(target=_peer_stream, args=(call.samples, start, queue))
                 for _ in range(n)]  # fmt: skip
        for p in procs:
            p.start()
        got = [queue.get(timeout=600) for _ in procs]
        for p in procs:
            p.join()
        results = [_score(shown, committed, call, call.seconds) for shown, committed, _ in got]
        out[n] = _summary(results, call, sum(cpu for _, _, cpu in got))
        print(f"  LA-2  {n:2d} streams: {_line(out[n])}", file=sys.stderr)
    return out


def sustained(rows: dict[int, dict[str, Any]], lag: str = "lag_p95_s") -> int:
    """The most streams with lag at most 2 s and tail at most 3 s (issue 29's bar), lag taken
    at its p95 (or ``lag_max_s``: the single latest word of every stream)."""
    ok = [n for n, r in rows.items() if r[lag] <= 2.0 and r["tail_max_s"] <= 3.0]
    return max(ok, default=0)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--streams", default="1,2,4,8,16")
    parser.add_argument("--no-peer", action="store_true", help="heard only")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    counts = [int(n) for n in args.streams.split(",")]
    call = make_call()
    print(f"call: {call.seconds:.1f} s, {len(call.truth.split())} words", file=sys.stderr)
    result: dict[str, Any] = {
        "call_s": round(call.seconds, 1),
        "cores": os.cpu_count(),
        "offline_wer": offline_wer(call),
        "heard": run_heard(call, counts),
    }
    if not args.no_peer:
        result["localagreement2"] = run_peer(call, counts)
    if args.json:
        print(json.dumps(result, indent=1))
        return result
    print(
        f"call {result['call_s']} s on {result['cores']} cores; offline tiny.en WER "
        f"{result['offline_wer']['beam1']} (greedy), {result['offline_wer']['beam5']} (beam 5)"
    )
    header = (f"{'system':8} {'N':>3} {'lag p50':>8} {'p95':>6} {'max':>6} {'tail':>6} "
              f"{'commit p50':>11} {'p95':>6} {'WER':>6} {'CPU s/s':>8}")  # fmt: skip
    print(header)
    for system in ("heard", "localagreement2"):
        for n, r in result.get(system, {}).items():
            cells = [r[k] for k in ("lag_p50_s", "lag_p95_s", "lag_max_s", "tail_max_s")]
            cells += [r[k] for k in ("commit_p50_s", "commit_p95_s", "wer_mean")]
            widths = [8, 6, 6, 6, 11, 6, 6]
            row = " ".join(f"{c:>{w}}" for c, w in zip(cells, widths, strict=True))
            print(f"{system[:8]:8} {n:>3} {row} {r['cpu_per_audio_s']:>8}")
    for system in ("heard", "localagreement2"):
        if system in result:
            strict = sustained(result[system], "lag_max_s")
            print(f"{system} sustains {sustained(result[system])} streams (lag p95 <= 2 s, "
                  f"tail <= 3 s); {strict} with every word's lag <= 2 s")  # fmt: skip
    return result


if __name__ == "__main__":
    main()
