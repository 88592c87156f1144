"""Streaming stabilization: heard's stable prefix against LocalAgreement-2 on the same stream.

Each audio file is streamed once through heard's streaming ASR (faster-whisper
tiny.en, 1000 ms chunks, simulated clock); both commit policies then read the same
partials and finals, so the difference is the policy alone:

* heard: ``TranscriptAccumulator`` (normalized agreement, last word never stable,
  never retracts, re-alignment after a contradiction);
* LocalAgreement-2, as whisper_streaming describes it (``bench/peers.py``).

For each policy: committed-word latency (from the first partial holding a word to
its commit; words first committed by the final count from the final) p50/p95,
and the WER against an offline transcript (the whole file, beam 5) of the text as
committed - words are never taken back, and each utterance's final supplies the
words the policy had not committed yet. Also the stream's compute real-time
factor (decode time / audio time).

Usage: python bench/streaming.py [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import jiwer

from heard.asr import FasterWhisperTranscriber, load_audio
from heard.asr.streaming import stream_events
from heard.release.cadence import nearest_rank
from heard.transcript.accumulator import TranscriptAccumulator
from heard.transcript.events import EventKind, TranscriptEvent
from peers import LocalAgreement2

REPO = Path(__file__).resolve().parents[1]
AUDIO = REPO / "tests" / "data" / "audio"


@dataclass
class Commits:
    words: list[str]
    latencies: list[float]


def commit_heard(events: list[TranscriptEvent]) -> Commits:
    out: list[str] = []
    lat: list[float] = []
    heard_at: dict[int, int] = {}
    acc, done = TranscriptAccumulator(), 0
    for e in events:
        for i in range(len(e.text.split())):
            heard_at.setdefault(i, e.t_ms)
        if e.kind is EventKind.FINAL:
            words = e.text.split()
            for i in range(done, len(words)):
                out.append(words[i])
                lat.append(e.t_ms - heard_at.get(i, e.t_ms))
            acc, heard_at, done = TranscriptAccumulator(), {}, 0
            continue
        stable = acc.push_partial(e.text).stable_prefix.split()
        for i in range(done, len(stable)):
            out.append(stable[i])
            lat.append(e.t_ms - heard_at[i])
        done = max(done, len(stable))
    return Commits(out, lat)


def commit_la2(events: list[TranscriptEvent]) -> Commits:
    out: list[str] = []
    lat: list[float] = []
    heard_at: dict[int, int] = {}
    la = LocalAgreement2()
    for e in events:
        for i in range(len(e.text.split())):
            heard_at.setdefault(i, e.t_ms)
        if e.kind is EventKind.FINAL:
            words = e.text.split()
            for i in range(len(la.committed), len(words)):
                out.append(words[i])
                lat.append(e.t_ms - heard_at.get(i, e.t_ms))
            la, heard_at = LocalAgreement2(), {}
            continue
        before = len(la.committed)
        new = la.insert(e.text)
        for k, w in enumerate(new):
            out.append(w)
            lat.append(e.t_ms - heard_at.get(before + k, e.t_ms))
    return Commits(out, lat)


def wer(reference: str, words: list[str]) -> float:
    clean = jiwer.Compose(
        [
            jiwer.ToLowerCase(),
            jiwer.RemovePunctuation(),
            jiwer.RemoveMultipleSpaces(),
            jiwer.Strip(),
            jiwer.ReduceToListOfListOfWords(),
        ]
    )
    return float(
        jiwer.wer(reference, " ".join(words), reference_transform=clean, hypothesis_transform=clean)
    )


def audio_files(tmp: Path) -> list[tuple[str, Path]]:
    sys.path.insert(0, str(REPO / "tools"))
    import wave

    import numpy as np

    from make_cadence_fixtures import MONOLOGUE, synthesize

    samples = synthesize([MONOLOGUE], tmp)
    path = tmp / "monologue.wav"
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16_000)
        w.writeframes((samples * 32767).astype(np.int16).tobytes())
    return [("jfk", AUDIO / "jfk.flac"), ("espeak monologue", path)]


def main(argv: list[str] | None = None) -> list[dict[str, object]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    rows: list[dict[str, object]] = []
    offline = FasterWhisperTranscriber()
    with tempfile.TemporaryDirectory() as tmp:
        for name, path in audio_files(Path(tmp)):
            samples = load_audio(path)
            reference = " ".join(s.text for s in offline.transcribe(samples))
            started = time.perf_counter()
            events = list(stream_events(samples))
            rtf = (time.perf_counter() - started) / (len(samples) / 16_000)
            for policy, commits in (
                ("heard", commit_heard(events)),
                ("LocalAgreement-2", commit_la2(events)),
            ):
                rows.append(
                    {
                        "audio": name,
                        "policy": policy,
                        "words": len(commits.words),
                        "p50_ms": nearest_rank(commits.latencies, 50),
                        "p95_ms": nearest_rank(commits.latencies, 95),
                        "wer": round(wer(reference, commits.words), 3),
                        "stream_rtf": round(rtf, 3),
                    }
                )
    if args.json:
        print(json.dumps(rows, indent=1))
        return rows
    print(
        f"{'audio':<18}{'policy':<18}{'words':>6}{'p50 ms':>8}{'p95 ms':>8}{'WER':>7}"
        f"{'stream RTF':>12}"
    )
    for r in rows:
        print(
            f"{r['audio']!s:<18}{r['policy']!s:<18}{r['words']!s:>6}{r['p50_ms']:>8.0f}"
            f"{r['p95_ms']:>8.0f}{r['wer']!s:>7}{r['stream_rtf']!s:>12}"
        )
    return rows


if __name__ == "__main__":
    main()
