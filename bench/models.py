"""Word error rate and real-time factor per Whisper model, on the same real recordings.

For each model at hand (tiny.en, bundled; base, heard[multilingual]; any other named with
``--model``), CPU, int8, in this process:

* **offline**: heard's ``FasterWhisperTranscriber`` (beam 5, Silero VAD, word timestamps,
  the hallucination guards) beside raw faster-whisper called with the same model and
  decoding options and no guards, on jfk.flac and on each channel of
  stereo_diarization.wav: WER against the reference text, and compute / audio duration
  (RTF), best of ``--repeat``;
* **streaming**: heard's ``WhisperStreamingRecognizer`` (re-decode every second, greedy) over the
  same audio fed in 100 ms pieces: WER of its finals and its RTF.

Also the language each model detects on each recording (English-only models say en).
The recordings are tests/data/audio (licences in tests/data/README.md), and, for multilingual
models, a Spanish sentence spoken by espeak-ng (made here, when espeak-ng is installed).

Usage: python bench/models.py [--model base] [--repeat 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from heard.asr import FasterWhisperTranscriber, WhisperOptions, installed_models, load_audio
from heard.asr.streaming import WhisperStreamingRecognizer
from heard.transcript.events import EventKind
from streaming import wer

AUDIO = Path(__file__).resolve().parents[1] / "tests" / "data" / "audio"
RECORDINGS = [
    ("jfk.flac", None, "And so my fellow Americans, ask not what your country can do for you, "
     "ask what you can do for your country."),
    ("stereo_diarization.wav", 0, "He began a confused complaint against the wizard, who had "
     "vanished behind the curtain on the left."),
    ("stereo_diarization.wav", 1, "The horizon seems extremely distant."),
]  # fmt: skip


SPANISH = "Buenos días a todos. Vamos a revisar el plan de lanzamiento de la aplicación móvil."


def spanish(folder: Path) -> Path | None:
    if shutil.which("espeak-ng") is None:
        return None
    path = folder / "es.wav"
    subprocess.run(["espeak-ng", "-v", "es", "-s", "140", "-w", str(path), SPANISH], check=True)
    return path


def best_of(repeat: int, run: Any) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(repeat):
        started = time.perf_counter()
        result = run()
        best = min(best, time.perf_counter() - started)
    return best, result


def raw_faster_whisper(model: Any, samples: Any, language: str | None) -> str:
    segments, _ = model.transcribe(
        samples, language=language, beam_size=5, word_timestamps=True,
        condition_on_previous_text=False, vad_filter=True,
        vad_parameters={"min_silence_duration_ms": 500},
    )  # fmt: skip
    return " ".join(s.text.strip() for s in segments)


def streamed(whisper: WhisperOptions, samples: Any) -> str:
    recognizer = WhisperStreamingRecognizer(whisper=whisper)
    finals: list[str] = []
    for i in range(0, len(samples), 1600):
        finals += [
            d.text for d in recognizer.push(samples[i : i + 1600]) if d.kind is EventKind.FINAL
        ]
    finals += [d.text for d in recognizer.finish() if d.kind is EventKind.FINAL]
    return " ".join(finals)


def measure(name: str, repeat: int, extra: Path | None) -> list[dict[str, Any]]:
    whisper = WhisperOptions(model=name, device="cpu", compute_type="int8")
    heard = FasterWhisperTranscriber(whisper)
    loaded = heard.model
    recordings = [(AUDIO / file, channel, text) for file, channel, text in RECORDINGS]
    if extra is not None and loaded.multilingual:
        recordings.append((extra, None, SPANISH))
    rows = []
    for path, channel, reference in recordings:
        samples = load_audio(path, channel)
        audio_s = len(samples) / 16_000
        heard.transcribe(samples)  # warm
        heard_s, heard_out = best_of(repeat, lambda s=samples: heard.transcribe(s))
        raw_s, raw_text = best_of(
            repeat, lambda s=samples: raw_faster_whisper(loaded.whisper, s, loaded.language(None))
        )
        stream_s, stream_text = best_of(1, lambda s=samples: streamed(whisper, s))
        rows.append({
            "model": name,
            "recording": path.name + ("", "#left", "#right")[0 if channel is None else channel + 1],
            "audio_s": round(audio_s, 2),
            "language": heard_out.language,
            "language_probability": heard_out.language_probability,
            "heard_wer": round(wer(reference, heard_out.text.split()), 3),
            "heard_rtf": round(heard_s / audio_s, 3),
            "raw_wer": round(wer(reference, raw_text.split()), 3),
            "raw_rtf": round(raw_s / audio_s, 3),
            "heard_over_raw": round(heard_s / raw_s, 2),
            "streaming_wer": round(wer(reference, stream_text.split()), 3),
            "streaming_rtf": round(stream_s / audio_s, 3),
        })  # fmt: skip
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", action="append", help="a model to add (repeatable)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    names = [m.name for m in installed_models() if m.name in ("tiny.en", "base")]
    names += [n for n in args.model or [] if n not in names]
    with tempfile.TemporaryDirectory() as tmp:
        extra = spanish(Path(tmp))
        rows = [row for name in names for row in measure(name, args.repeat, extra)]
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    print("model    recording                     lang        WER heard/raw/stream    "
          "RTF heard/raw/stream   heard/raw")  # fmt: skip
    for r in rows:
        prob = "" if r["language_probability"] is None else f" {r['language_probability']:.2f}"
        print(
            f"{r['model']:<8} {r['recording']:<29} {r['language'] + prob:<10}  "
            f"{r['heard_wer']:.3f} / {r['raw_wer']:.3f} / {r['streaming_wer']:.3f}    "
            f"{r['heard_rtf']:.3f} / {r['raw_rtf']:.3f} / {r['streaming_rtf']:.3f}   "
            f"{r['heard_over_raw']:.2f}x"
        )
    for name in names:
        mine = [r for r in rows if r["model"] == name and r["recording"] != "es.wav"]
        audio = sum(r["audio_s"] for r in mine)
        mean = {k: sum(r[k] * r["audio_s"] for r in mine) / audio for k in
                ("heard_wer", "heard_rtf", "streaming_wer", "streaming_rtf")}  # fmt: skip
        print(
            f"{name}: over the {audio:.1f} s of English, WER {mean['heard_wer']:.3f} offline, "
            f"{mean['streaming_wer']:.3f} streaming; RTF {mean['heard_rtf']:.3f} offline, "
            f"{mean['streaming_rtf']:.3f} streaming"
        )


if __name__ == "__main__":
    main()
