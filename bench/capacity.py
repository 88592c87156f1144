"""Many live microphones on one machine: N real-time clients of /v1/live at once, beside
whisper_streaming's LocalAgreement-2 run as N processes, on the same calls.

Three sets of calls, real first:

* ``room``: real meetings as a room microphone hears them: four 30 s AMI excerpts
  (tests/data/diarization/ami: far-field, quiet, overlapping, short turns), scored against
  AMI's own word-level transcription (tests/data/conversations, CC BY 4.0), each word's
  end taken from it;
* ``phone``: real two-person conversations through a telephone line: four AMI excerpts with
  two talkers, band-limited to 300-3400 Hz, sampled at 8 kHz and coded as G.711 mu-law, as a
  phone call carries them, then back to 16 kHz (the line is simulated; the speech is real);
* ``mix`` (issue 29's call, about 35 s): JFK (11 s, tests/data/audio), the two speakers of
  stereo_diarization.wav one after the other (faster-whisper's test data), and a two-voice
  espeak-ng exchange made at run time, with short pauses between; its words' times come from
  an offline transcription (tiny.en, beam 5, word timestamps), its text is the known one
  (JFK's and espeak's scripts; the two speakers' sentences as tiny.en beam 5 reads each
  channel alone). Part synthetic;
* with ``--real DIR``: the recordings in DIR (audio with a ``.txt`` of what was said beside
  each; word times from tiny.en beam 5), e.g. pyannote's sample phone call, not shipped.

Stream i of N plays call i mod K of its set (the streams are different conversations, as a
server's are) and starts i/N s after the first (people do not connect in the same 100 ms).

heard: a real ``heard serve`` (one process, SQLite); N clients (one token each) stream their
call as 100 ms PCM16 frames at 1x, then 1.5 s of silence and ``{"type": "end"}``. The peer:
whisper_streaming's online processor re-implemented from its description
(``bench/peers.py``: faster-whisper tiny.en int8, beam 5 as it ships, a decode whenever 1 s of
new audio has arrived, computation-aware), one process per stream as its README runs it, on
the same audio at the same pace. Per set, N and system:

* lag: how far behind the audio the transcript shown runs: from a word's end in the audio to
  the first message that shows it or a misreading of it in its place, p50 and max;
* tail: the last commit after the audio ends;
* commit: from a word's end in the audio to when it was shown for good (heard: the stable
  prefix of /v1/live's hypotheses that no later message changed, or the final; the peer: its
  commits), p50 and p95 over every word of every stream;
* WER of what was committed against what was said, pooled over the streams (fillers such as
  "um" and "uh" left out on both sides); beside it, tiny.en offline on the same calls, each
  whole (greedy, as the streams decode, and beam 5; faster-whisper's defaults otherwise),
  pooled the same way; with fewer streams than calls, the streams play every call in turns;
* CPU seconds per audio second, over every stream (heard: the server process; the peer: its
  processes).

WhisperLiveKit (PyPI) needs torch and torchaudio, which heard's environment does not install;
it is not run here (see BENCHMARKS.md).

Usage: python bench/capacity.py [--sets room,phone,mix] [--streams 1,4,8,16] [--real DIR]
       [--src DIR] [--no-peer] [--spare off,wide] [--json]
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
AMI_AUDIO = REPO / "tests" / "data" / "diarization" / "ami"
AMI_WORDS = REPO / "tests" / "data" / "conversations" / "ami"
ROOM = ["ami_trn09", "ami_trn03", "ami-tst00", "ami_trn06"]
"""The AMI excerpts with the most speech (121, 104, 93 and 79 words; 2-4 talkers)."""
PHONE = ["ami-dev00", "ami-dev01", "ami_trn03", "ami_trn09"]
"""AMI excerpts of two people talking (a third laughs once in ami_trn09)."""
TUNING = ["ami-tst01", "ami_trn00", "ami_trn01", "ami_trn04", "ami_trn05", "ami_trn07", "ami_trn08"]
"""The other AMI excerpts, none in ``ROOM`` or ``PHONE``: where a streaming policy is tuned
(``tune-room``, ``tune-phone``), so the sets it is judged on stay held out."""
FILLERS = frozenset("um uh hmm mm mhm er erm ah eh uhm hm huh".split())
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
    """The call's words (normalized) with their end times: as said (a human transcription),
    or as offline tiny.en hears them."""
    name: str = "call"

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
    ends = [(normalized(w.word), w.end) for s in segments for w in s.words or ()]
    return Call(samples, truth, [(w, e) for w, e in ends if w], "mix")


def normalized(text: str) -> str:
    """What WER compares: lower case, no punctuation, no fillers ("um", "uh"), which Whisper
    leaves out and AMI's transcribers wrote; hyphens split ("to-do" is "to do")."""
    return " ".join(w for w in strip_punctuation(text).replace("-", " ").split()
                    if w not in FILLERS)  # fmt: skip


def ami_call(name: str, *, phone: bool = False) -> Call:
    """An AMI excerpt, its words and their ends as AMI's transcribers timed them."""
    said = json.loads((AMI_WORDS / f"{name}.json").read_text())["words"]
    samples = load_audio(AMI_AUDIO / f"{name}.flac").astype(np.float32)
    if phone:
        samples = telephone(samples)
    ends = [(w, end) for _, end, _, text in said for w in normalized(text).split()]
    return Call(samples, normalized(" ".join(w[3] for w in said)), ends,
                f"{name} by phone" if phone else name)  # fmt: skip


def telephone(x: np.ndarray) -> np.ndarray:
    """16 kHz speech as a phone line carries it: 300-3400 Hz, 8 kHz, G.711 mu-law (8 bits),
    back at 16 kHz."""
    from scipy.signal import butter, resample_poly, sosfilt

    band = sosfilt(butter(6, [300, 3400], "bandpass", fs=SAMPLE_RATE, output="sos"), x)
    narrow = np.clip(resample_poly(band, 1, 2), -1, 1)
    mu = 255.0
    coded = np.sign(narrow) * np.log1p(mu * np.abs(narrow)) / np.log1p(mu)
    coded = np.round(coded * 127) / 127  # 8 bits a sample
    decoded = np.sign(coded) * ((1 + mu) ** np.abs(coded) - 1) / mu
    wide: np.ndarray = resample_poly(decoded, 2, 1).astype(np.float32)
    return wide


def local_call(path: Path) -> Call:
    """A recording with a ``.txt`` (or an STM) of what was said beside it; word ends from
    tiny.en beam 5."""
    stm = path.with_suffix(".stm")
    if path.with_suffix(".txt").exists():
        said = path.with_suffix(".txt").read_text()
    else:
        said = " ".join(" ".join(line.split()[5:]) for line in stm.read_text().splitlines())
    samples = load_audio(path).astype(np.float32)
    return Call(samples, normalized(said), _offline_ends(samples), path.stem)


def _offline_ends(samples: np.ndarray) -> list[tuple[str, float]]:
    from heard.asr.whisper import WhisperOptions, load_model

    model = load_model(WhisperOptions()).whisper
    segments, _ = model.transcribe(samples, language="en", beam_size=5, word_timestamps=True,
                                   condition_on_previous_text=False)  # fmt: skip
    ends = [(normalized(w.word), w.end) for s in segments for w in s.words or ()]
    return [(w, e) for w, e in ends if w]


def call_sets(names: list[str], real: Path | None) -> dict[str, list[Call]]:
    sets: dict[str, list[Call]] = {}
    for name in names:
        if name == "room":
            sets[name] = [ami_call(n) for n in ROOM]
        elif name == "phone":
            sets[name] = [ami_call(n, phone=True) for n in PHONE]
        elif name == "tune-room":
            sets[name] = [ami_call(n) for n in TUNING]
        elif name == "tune-phone":
            sets[name] = [ami_call(n, phone=True) for n in TUNING]
        elif name == "mix":
            sets[name] = [make_call()]
        else:
            raise SystemExit(f"unknown set {name!r}: room, phone, mix, tune-room or tune-phone")
    if real is not None:
        found = sorted(p for p in real.iterdir()
                       if p.suffix in (".wav", ".flac") and _transcribed(p))  # fmt: skip
        if not found:
            raise SystemExit(f"{real}: no .wav or .flac with a .txt or .stm beside it")
        sets["real"] = [local_call(p) for p in found]
    return sets


def _transcribed(path: Path) -> bool:
    return path.with_suffix(".txt").exists() or path.with_suffix(".stm").exists()


def pooled_wer(pairs: list[tuple[str, str]]) -> float:
    """Errors over words said, over every (said, heard) pair."""
    said = [normalized(a) for a, _ in pairs]
    heard = [normalized(b) for _, b in pairs]
    found = jiwer.process_words(said, heard)
    return round(found.wer, 3)


OFFLINE_RUNS = 5
"""Offline greedy tiny.en is read this many times per call and its WER averaged: with
faster-whisper's temperature fallback, which samples, one reading of the four room calls
scored 0.264, 0.295 and 0.315 in three runs of one process (beam 5: 0.261 each time), more
than the gaps a live policy is judged by."""


def offline_texts(calls: list[Call], runs: int = OFFLINE_RUNS) -> dict[str, dict[str, list[str]]]:
    """What tiny.en offline hears in each whole call, greedy ("beam1", as the streams decode;
    ``runs`` readings) and with beam 5 (one), faster-whisper's other settings as they ship."""
    from heard.asr.whisper import WhisperOptions, load_model

    model = load_model(WhisperOptions()).whisper
    out: dict[str, dict[str, list[str]]] = {}
    for call in {c.name: c for c in calls}.values():
        for beam, times in ((1, runs), (5, 1)):
            for _ in range(times):
                # as faster-whisper runs by default (temperature fallback, previous text)
                segments, _ = model.transcribe(call.samples, language="en", beam_size=beam)
                text = " ".join(s.text for s in segments)
                out.setdefault(call.name, {}).setdefault(f"beam{beam}", []).append(text)
    return out


def offline_wer(calls: list[Call], texts: dict[str, dict[str, list[str]]]) -> dict[str, float]:
    """Pooled WER of tiny.en offline on ``calls`` (with repeats, as streamed): each beam's
    mean over its readings, and greedy's lowest and highest reading."""
    out: dict[str, float] = {}
    for beam in ("beam1", "beam5"):
        runs = len(texts[calls[0].name][beam])
        wers = [pooled_wer([(c.truth, texts[c.name][beam][k]) for c in calls])
                for k in range(runs)]  # fmt: skip
        out[beam] = round(sum(wers) / runs, 3)
        if beam == "beam1":
            out["beam1_low"], out["beam1_high"] = min(wers), max(wers)
    return out


def matched_ends(words: list[str], call: Call) -> list[float | None]:
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
    for (at, _), end in zip(committed, matched_ends(words, call), strict=True):
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
                    stable = normalized(m["stable"]).split()
                    old = stable_since.get(turn, [])
                    keep = 0
                    while keep < min(len(old), len(stable)) and old[keep][0] == stable[keep]:
                        keep += 1
                    stable_since[turn] = old[:keep] + [(w, at) for w in stable[keep:]]
                    current[turn] = stable + normalized(m["unstable"]).split()
                    open_words = [w for ws_ in current.values() for w in ws_]
                    shown.append((at, " ".join(finals).split() + open_words))
                elif kind == "final":
                    turn = m["turn"]
                    words = normalized(m["text"]).split()
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


def _pcm(call: Call) -> bytes:
    pcm_audio: bytes = (np.clip(call.samples, -1, 1) * 32767).astype("<i2").tobytes()
    return pcm_audio + b"\x00\x00" * int(TAIL_SILENCE_S * SAMPLE_RATE)


def run_heard(
    calls: list[Call],
    counts: list[int],
    offline: dict[str, dict[str, list[str]]],
    src: Path | None = None,
    spare: str = "off",
) -> dict[int, dict[str, Any]]:
    users = [f"mic{i}" for i in range(max(counts))]
    out = {}
    with serving(users, src, settings={"HEARD_SPARE_CPU": spare}) as (host, tokens, pid):
        # warm up: the model loads on the first stream
        warm = Call(calls[0].samples[: 2 * SAMPLE_RATE], "", [], "warm-up")
        asyncio.run(_clients(host, tokens, users[:1], [warm]))
        for n in counts:
            before = cpu_seconds(pid)
            results, mine = [], []
            for group in rounds(calls, n):  # fewer streams than calls: every call, in turns
                results += asyncio.run(_clients(host, tokens, users[:n], group))
                mine += group
            cpu = cpu_seconds(pid) - before
            out[n] = _summary(results, mine, cpu, offline)
            print(f"  {system(spare)} {n:2d} streams: {_line(out[n])}", file=sys.stderr)
    return out


def system(spare: str) -> str:
    """heard's name in the tables, by its server's ``--spare-cpu`` rule."""
    return "heard" if spare == "off" else f"heard-{spare}"


def rounds(calls: list[Call], n: int) -> list[list[Call]]:
    """What ``n`` streams play: call i mod K on stream i, in as many turns as it takes to play
    every call once (1 stream: each call in turn)."""
    turns = max(1, -(-len(calls) // n))
    return [[calls[(t * n + i) % len(calls)] for i in range(n)] for t in range(turns)]


def offsets(n: int) -> list[float]:
    """When each of ``n`` streams starts, after the first: spread over one second."""
    return [i / n for i in range(n)]


async def _clients(
    host: str, tokens: dict[str, str], users: list[str], calls: list[Call]
) -> list[StreamResult]:
    start = time.monotonic() + 0.5
    await asyncio.sleep(0)
    tasks = [live_client(f"ws://{host}/v1/live?token={tokens[u]}&speaker={u}", _pcm(call),
                         start + lead, call)
             for u, call, lead in zip(users, calls, offsets(len(users)), strict=True)]  # fmt: skip
    return list(await asyncio.gather(*tasks))


def _summary(
    results: list[StreamResult],
    calls: list[Call],
    cpu_s: float,
    offline: dict[str, dict[str, list[str]]],
) -> dict[str, Any]:
    lags = [x for r in results for x in r.lags]
    commits = [x for r in results for x in r.commits]
    wers = [jiwer.wer(c.truth, normalized(r.text) or "-") for r, c in zip(results, calls,
                                                                         strict=True)]  # fmt: skip
    return {
        "streams": len(results),
        "lag_p50_s": round(nearest_rank(lags, 50), 2),
        "lag_p95_s": round(nearest_rank(lags, 95), 2),
        "lag_max_s": round(max(lags, default=0.0), 2),
        "tail_max_s": round(max(r.tail_s for r in results), 2),
        "commit_p50_s": round(nearest_rank(commits, 50), 2),
        "commit_p95_s": round(nearest_rank(commits, 95), 2),
        "wer": pooled_wer([(c.truth, r.text) for r, c in zip(results, calls, strict=True)]),
        "offline_wer": offline_wer(calls, offline)["beam1"],
        "cpu_per_audio_s": round(cpu_s / sum(c.seconds for c in calls), 3),
        "steps": results[0].steps,
        "wers": [round(w, 3) for w in wers],
        "latest_shown": max(results, key=lambda r: max(r.lags, default=0)).late,
    }


def _line(s: dict[str, Any]) -> str:
    return (f"lag p50 {s['lag_p50_s']} p95 {s['lag_p95_s']} max {s['lag_max_s']} s, "
            f"tail {s['tail_max_s']} s, "
            f"commit p50 {s['commit_p50_s']} p95 {s['commit_p95_s']} s, WER {s['wer']}, "
            f"(offline {s['offline_wer']}), CPU {s['cpu_per_audio_s']} s/s, "
            f"steps {[ms for _, ms in s['steps']]}")  # fmt: skip


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
        committed += [(at, w) for _, _, t in done for w in normalized(t).split()]
        shown.append((at, [w for _, w in committed] + normalized(" ".join(pending)).split()))
    at = time.time() - start
    committed += [(at, w) for _, _, t in online.finish() for w in normalized(t).split()]
    queue.put((start, shown, committed, time.process_time() - cpu0))


def run_peer(
    calls: list[Call], counts: list[int], offline: dict[str, dict[str, list[str]]]
) -> dict[int, dict[str, Any]]:
    ctx = mp.get_context("spawn")
    out = {}
    for n in counts:
        results: list[StreamResult] = []
        mine: list[Call] = []
        cpu = 0.0
        for group in rounds(calls, n):
            queue = ctx.Queue()
            start = time.time() + 8.0  # the processes load their models first
            procs = [ctx.Process(target=_peer_stream, args=(call.samples, start + lead, queue))
                     for call, lead in zip(group, offsets(n), strict=True)]  # fmt: skip
            for p in procs:
                p.start()
            got = sorted((queue.get(timeout=900) for _ in procs), key=lambda g: g[0])
            for p in procs:
                p.join()
            for (_, shown, committed, _), call in zip(got, group, strict=True):
                results.append(_score(shown, committed, call, call.seconds))
            mine += group
            cpu += sum(c for *_, c in got)
        out[n] = _summary(results, mine, cpu, offline)
        print(f"  LA-2  {n:2d} streams: {_line(out[n])}", file=sys.stderr)
    return out


def sustained(rows: dict[int, dict[str, Any]], lag: str = "lag_p95_s") -> int:
    """The most streams with lag at most 2 s and tail at most 3 s (issue 29's bar), lag taken
    at its p95 (or ``lag_max_s``: the single latest word of every stream)."""
    ok = [n for n, r in rows.items() if r[lag] <= 2.0 and r["tail_max_s"] <= 3.0]
    return max(ok, default=0)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--sets",
        default="room,phone,mix",
        help="which calls: room, phone, mix (default: all three)",
    )
    parser.add_argument("--streams", default="1,4,8,16")
    parser.add_argument(
        "--real",
        type=Path,
        metavar="DIR",
        help="also stream the recordings in DIR (each with a .txt or .stm)",
    )
    parser.add_argument("--no-peer", action="store_true", help="heard only")
    parser.add_argument("--spare", default="off", help="heard serve --spare-cpu rules to run "
                        "heard with, each in turn (comma-separated: off,wide)")  # fmt: skip
    parser.add_argument("--src", type=Path, help="run the server from this src/ folder")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    counts = [int(n) for n in args.streams.split(",")]
    result: dict[str, Any] = {"cores": os.cpu_count(), "sets": {}}
    for name, calls in call_sets(args.sets.split(","), args.real).items():
        seconds = sum(c.seconds for c in calls)
        words = sum(len(c.truth.split()) for c in calls)
        print(f"{name}: {len(calls)} calls, {seconds:.1f} s, {words} words", file=sys.stderr)
        texts = offline_texts(calls)
        found: dict[str, Any] = {
            "calls": [c.name for c in calls],
            "seconds": round(seconds, 1),
            "words": words,
            "offline_wer": offline_wer(calls, texts),
        }
        for spare in args.spare.split(","):
            found[system(spare)] = run_heard(calls, counts, texts, args.src, spare)
        if not args.no_peer:
            found["localagreement2"] = run_peer(calls, counts, texts)
        result["sets"][name] = found
    if args.json:
        print(json.dumps(result, indent=1))
        return result
    for name, found in result["sets"].items():
        offline = found["offline_wer"]
        print(f"\n{name}: {', '.join(found['calls'])} ({found['seconds']} s, {found['words']} "
              f"words) on {result['cores']} cores; offline tiny.en WER {offline['beam1']} "
              f"(greedy, mean of {OFFLINE_RUNS}: {offline['beam1_low']}-{offline['beam1_high']}), "
              f"{offline['beam5']} (beam 5)")  # fmt: skip
        print(f"{'system':10} {'N':>3} {'lag p50':>8} {'p95':>6} {'max':>6} {'tail':>6} "
              f"{'commit p50':>11} {'p95':>6} {'WER':>6} {'offline':>8} "
              f"{'CPU s/s':>8}")  # fmt: skip
        systems = [*(system(s) for s in args.spare.split(",")), "localagreement2"]
        for name_ in systems:
            for n, r in found.get(name_, {}).items():
                cells = [r[k] for k in ("lag_p50_s", "lag_p95_s", "lag_max_s", "tail_max_s")]
                cells += [r[k] for k in ("commit_p50_s", "commit_p95_s", "wer", "offline_wer")]
                widths = [8, 6, 6, 6, 11, 6, 6, 8]
                row = " ".join(f"{c:>{w}}" for c, w in zip(cells, widths, strict=True))
                print(f"{name_[:10]:10} {n:>3} {row} {r['cpu_per_audio_s']:>8}")
        for name_ in systems:
            if name_ in found:
                strict = sustained(found[name_], "lag_max_s")
                print(f"{name_} sustains {sustained(found[name_])} streams (lag p95 <= 2 s, "
                      f"tail <= 3 s); {strict} with every word's lag <= 2 s")  # fmt: skip
    return result


if __name__ == "__main__":
    main()
