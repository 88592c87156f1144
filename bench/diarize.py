"""Who spoke when: heard's diarizer beside senko on the same audio, in the same run.

Real speech first (``tests/data/diarization``, sources and licences in its READMEs), in two
groups, each pooled on its own:

* **held out** (``test: ...``), never looked at while the clustering was set:
  ``test/`` (real recordings from sources no other set draws on, and conversations spliced
  from real people no other set holds, gathered for issue 55's second round and scored
  once, after the clustering was settled); ``--real DIR``
  (repeatable) adds any folder of FLAC or WAV files with an RTTM of the same name to this
  group;
* **tuning**, where the thresholds were set: 13 AMI excerpts (30 s each, far-field,
  overlapping), three people one after another (Picovoice's falcon clip), conversations of
  2-9 of ten LibriSpeech test-other readers (``spliced``: real people, a made-up
  conversation), and the first round's held-out set (``heldout/``: an AMI minute, a radio
  phone-in, German prompts, conversations of twenty other LibriSpeech readers), which joined
  the tuning set once its figures had been reported.

Then the synthetic sets, labelled so: ``stereo_diarization.wav`` mixed to mono, espeak-ng
conversations of 2-4 voices (``--seed``; 30-32 tuned the old diarizer), and one person
talking alone (``auto`` should find one).

Scores, per set and pooled over the real sets: DER from pyannote.metrics (collar 0.25 s,
overlapped speech scored; pooled: every recording's errors over all their speech) and its
parts (missed speech, false alarm, confusion), with the number of speakers given and with
``auto``; how often ``auto`` counts the speakers right; CPU seconds per hour of audio and wall
time against the audio's. The peer is senko 0.2.2 (CAM++ embeddings, pyannote segmentation
on PyTorch, so it runs in the Python given by ``--senko-python``, in a process of its own, on
the same WAV files); it cannot be told the number of speakers. ``--cpwer N`` also transcribes
N espeak-ng conversations (tiny.en): the diarized transcript against each speaker's own track
transcribed alone, by meeteval's cpWER (``pip install meeteval``: it is not in heard[dev],
since PyPI has no wheel of it and it builds only with a C++ compiler).

    python bench/diarize.py [--senko-python /path/to/python] [--real DIR] [--cpwer 4]
    python bench/diarize.py --no-synthetic --sets "test"   # the held-out figures only
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conversations import (
    HELD_OUT,
    RATE,
    REAL,
    TEST,
    TEST55,
    Conversation,
    conversations,
    held_out_spliced,
    monologues,
    recordings,
    spliced,
    stereo_mixed,
)

SENKO = """
import json, sys, time, senko
d = senko.Diarizer(device="cpu", warmup=True, quiet=True)
out, cpu = {}, 0.0
for path in sys.argv[1:]:
    t0 = time.process_time()
    r = d.diarize(path)
    cpu += time.process_time() - t0
    segs = (r or {}).get("merged_segments") or []
    out[path] = [[s["start"], s["end"], str(s["speaker"])] for s in segs]
print(json.dumps({"turns": out, "cpu_s": cpu}))
"""
"""senko in a process of its own; ``cpu_s``: its CPU time in ``diarize`` calls (all its
threads, model load and warm-up left out, as heard's is)."""
PARTS = ("missed detection", "false alarm", "confusion", "total")


def errors(truth: list[tuple[float, float, str]], found: list[tuple[float, float, str]],
           duration_s: float) -> dict[str, float]:  # fmt: skip
    """pyannote.metrics' DER parts, in seconds (collar 0.25 s, overlap scored)."""
    from pyannote.core import Annotation, Segment
    from pyannote.metrics.diarization import DiarizationErrorRate

    ref, hyp = Annotation(), Annotation()
    for i, (a, b, k) in enumerate(truth):
        ref[Segment(a, b), i] = k
    for i, (a, b, k) in enumerate(found):
        hyp[Segment(a, b), i] = k
    metric = DiarizationErrorRate(collar=0.25, skip_overlap=False)
    detail = metric(ref, hyp, uem=Segment(0, duration_s), detailed=True)
    return {k: float(detail[k]) for k in PARTS}


def der(truth: list[tuple[float, float, str]], found: list[tuple[float, float, str]],
        duration_s: float) -> float:  # fmt: skip
    e = errors(truth, found, duration_s)
    return (e["missed detection"] + e["false alarm"] + e["confusion"]) / max(e["total"], 1e-9)


def _row(c: Conversation, turns: list[tuple[float, float, str]]) -> dict[str, Any]:
    e = errors(c.truth, turns, c.duration_s)
    return {"name": c.name, "speakers": c.speakers, "found": len({k for _, _, k in turns}),
            "der": (e["missed detection"] + e["false alarm"] + e["confusion"])
            / max(e["total"], 1e-9), **e}  # fmt: skip


def heard_run(convs: list[Conversation], known: bool) -> dict[str, Any]:
    from heard.diarize.onnx import OnnxDiarizer

    diarizer = OnnxDiarizer()
    diarizer.prepare()
    rows, diarizations = [], []
    cpu = wall = 0.0
    for c in convs:
        t0, w0 = time.process_time(), time.perf_counter()
        found = diarizer.diarize(c.samples, speakers=c.speakers if known else None)
        cpu += time.process_time() - t0
        wall += time.perf_counter() - w0
        rows.append(_row(c, [(t.start, t.end, str(t.speaker)) for t in found.turns]))
        diarizations.append(found)
    return {"rows": rows, "cpu_s": cpu, "wall_s": wall, "found": diarizations}


_MODELS: dict[str, Any] = {}
_HEARD: dict[str, Any] = {}
"""Each recording's segments, transcribed once for both of its diarizations."""


def transcript_rows(convs: list[Conversation], found: list[Any]) -> list[dict[str, Any]]:
    """The transcript a user reads, scored like the diarizer: each word's span under the
    speaker ``heard.diarize.speaker_words`` gives it, from the same diarization. tiny.en for
    English, base (multilingual, language detected) for recordings in other languages."""
    from heard.asr.whisper import FasterWhisperTranscriber, WhisperOptions
    from heard.diarize import speaker_words

    for model in ("tiny.en", "base"):
        _MODELS.setdefault(model, FasterWhisperTranscriber(WhisperOptions(model=model)))
    rows = []
    for c, diarization in zip(convs, found, strict=True):
        if c.name not in _HEARD:
            spoken, _, _ = _MODELS["base"].model.whisper.detect_language(c.samples)
            model = "tiny.en" if spoken == "en" else "base"
            _HEARD[c.name] = _MODELS[model].transcribe(c.samples).segments
        words = speaker_words(_HEARD[c.name], diarization)
        rows.append(_row(c, [(w.start, w.end, str(k)) for w, k in words]))
    return rows


def senko_run(convs: list[Conversation], python: str, folder: Path) -> dict[str, Any] | None:
    import soundfile as sf  # type: ignore[import-untyped]

    paths = []
    for c in convs:
        wav = folder / f"{len(list(folder.glob('*.wav'))):03d}.wav"
        sf.write(wav, c.samples, RATE, subtype="PCM_16")
        paths.append(str(wav))
    t0 = time.time()
    done = subprocess.run([python, "-c", SENKO, *paths], capture_output=True, text=True,
                          check=False)  # fmt: skip
    wall = time.time() - t0
    if done.returncode != 0:
        print(f"senko did not run ({python}): {done.stderr.strip()[-400:]}", file=sys.stderr)
        return None
    result = json.loads(done.stdout.strip().splitlines()[-1])
    rows = [_row(c, [(float(a), float(b), k) for a, b, k in result["turns"][path]])
            for c, path in zip(convs, paths, strict=True)]  # fmt: skip
    return {"rows": rows, "wall_s": wall, "cpu_s": result["cpu_s"]}


def cpwer(convs: list[Conversation]) -> float:
    """meeteval's cpWER of the diarized transcript against the per-track transcripts."""
    try:
        from meeteval.wer.wer.cp import cp_word_error_rate
    except ImportError:  # not in heard[dev]: PyPI has no wheel, it builds with a C++ compiler
        raise SystemExit(
            "--cpwer needs meeteval: pip install meeteval (a C++ compiler builds it)"
        ) from None

    from heard.asr.whisper import FasterWhisperTranscriber, WhisperOptions
    from heard.diarize import split_words
    from heard.diarize.onnx import OnnxDiarizer

    whisper = FasterWhisperTranscriber(WhisperOptions(language="en"))
    diarizer = OnnxDiarizer()
    errors_ = length = 0
    for c in convs:
        ref = {name: " ".join(s.text for s in whisper.transcribe(track).segments)
               for name, track in c.tracks.items()}  # fmt: skip
        spoken = split_words(whisper.transcribe(c.samples).segments, diarizer.diarize(c.samples))
        hyp = {str(k): " ".join(s.text for s in segs) for k, segs in spoken.items()}
        score = cp_word_error_rate(_norm(ref), _norm(hyp))
        errors_ += score.errors
        length += score.length
    return errors_ / max(length, 1)


def _norm(texts: dict[str, str]) -> dict[str, str]:
    import re

    return {k: re.sub(r"[^a-z0-9' ]+", " ", v.lower()) for k, v in texts.items()}


def summary(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Pooled DER and its parts (each over all the set's speech), speakers counted right."""
    total = sum(r["total"] for r in rows) or 1e-9
    parts = {k: sum(r[k] for r in rows) / total for k in PARTS[:3]}
    return {"der": sum(parts.values()), "missed": parts["missed detection"],
            "false_alarm": parts["false alarm"], "confusion": parts["confusion"],
            "der_worst": max(r["der"] for r in rows),
            "count_right": sum(r["found"] == r["speakers"] for r in rows) / len(rows)}  # fmt: skip


def run_set(convs: list[Conversation], senko: str | None, folder: Path,
            transcript: bool = False) -> dict[str, Any]:  # fmt: skip
    audio_s = sum(c.duration_s for c in convs)
    auto, known = heard_run(convs, False), heard_run(convs, True)
    entry: dict[str, Any] = {
        "recordings": len(convs), "audio_s": audio_s,
        "heard_auto": summary(auto["rows"]), "heard_known": summary(known["rows"]),
        "heard_cpu_s_per_hour": auto["cpu_s"] / audio_s * 3600,
        "heard_wall_x": auto["wall_s"] / audio_s,
        "rows": {"auto": auto["rows"], "known": known["rows"]},
    }  # fmt: skip
    if transcript:
        for key, run in (("words_auto", auto), ("words_known", known)):
            entry["rows"][key] = transcript_rows(convs, run["found"])
            entry[f"heard_{key}"] = summary(entry["rows"][key])
    if senko:
        peer = senko_run(convs, senko, folder)
        if peer is not None:
            entry["senko_auto"] = summary(peer["rows"])
            entry["senko_wall_s_per_hour"] = peer["wall_s"] / audio_s * 3600
            entry["senko_cpu_s_per_hour"] = peer["cpu_s"] / audio_s * 3600
            entry["rows"]["senko"] = peer["rows"]
    return entry


def _line(label: str, s: dict[str, float]) -> str:
    return (f"  {label:<22} DER {s['der']:.3f} (missed {s['missed']:.3f}, false alarm "
            f"{s['false_alarm']:.3f}, confusion {s['confusion']:.3f}; worst {s['der_worst']:.2f})"
            f", speakers counted right {s['count_right']:.0%}")  # fmt: skip


def report(result: dict[str, Any]) -> None:
    for label, e in result["sets"].items():
        print(f"{label}: {e['recordings']} recordings, {e['audio_s']:.0f} s of audio")
        print(_line("heard, speakers given:", e["heard_known"]))
        print(_line("heard, auto:", e["heard_auto"]))
        for key, label in (("heard_words_known", "words, speakers given:"),
                           ("heard_words_auto", "words, auto:")):  # fmt: skip
            if key in e:
                print(_line(label, e[key]))
        if "senko_auto" in e:
            print(_line("senko, auto:", e["senko_auto"]))
        print(f"  heard: {e['heard_cpu_s_per_hour']:.0f} CPU s per hour of audio, wall "
              f"{e['heard_wall_x']:.3f}x the audio's"
              + (f"; senko {e['senko_cpu_s_per_hour']:.0f} CPU s per hour, wall "
                 f"{e['senko_wall_s_per_hour']:.0f} s per hour (model load included)"
                 if "senko_wall_s_per_hour" in e else ""))  # fmt: skip
    for group, title in (
        ("held_out_pooled", "TEST SET, HELD OUT (never tuned on), pooled:"),
        ("tuning_pooled", "tuning set (thresholds set here), pooled:"),
    ):
        if result.get(group):
            print(title)
            for key, label in (("heard_known", "heard, speakers given:"), ("heard_auto",
                               "heard, auto:"), ("heard_words_known", "words, speakers given:"),
                               ("heard_words_auto", "words, auto:"),
                               ("senko_auto", "senko, auto:")):  # fmt: skip
                if key in result[group]:
                    print(_line(label, result[group][key]))
    if "cpwer" in result:
        print(f"cpWER, diarized vs per-track transcripts: {result['cpwer']:.3f}")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--real", type=Path, action="append", default=[],
                        help="a folder of FLAC/WAV files with RTTMs beside them")  # fmt: skip
    parser.add_argument("--count", type=int, default=24, help="espeak-ng conversations")
    parser.add_argument("--seed", type=int, default=33, help="of the espeak-ng conversations")
    parser.add_argument("--senko-python", default=None, help="a Python with senko installed")
    parser.add_argument("--cpwer", type=int, default=0, help="conversations to transcribe")
    parser.add_argument(
        "--transcript",
        action="store_true",
        help="also score the transcript's words under their speakers",
    )
    parser.add_argument("--no-synthetic", action="store_true", help="the real sets only")
    parser.add_argument("--sets", default="", help="only the sets whose label holds this")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        tuning = {"tuning: AMI meetings": recordings(REAL / "ami"),
                  "tuning: three in a row": recordings(REAL / "falcon"),
                  "tuning: real voices, spliced": spliced(),
                  "tuning: round 1's held-out recordings": recordings(HELD_OUT),
                  "tuning: round 1's held-out voices, spliced": held_out_spliced(),
                  "tuning: issue 55's test calls": recordings(TEST55, below=False),
                  "tuning: issue 55's test voices, spliced":
                      recordings(TEST55 / "spliced")}  # fmt: skip
        held_out = {"test: real phone calls": recordings(TEST, below=False),
                    "test: real callers, spliced": recordings(TEST / "spliced")}  # fmt: skip
        for extra in args.real:
            held_out[f"test: {extra.name}"] = recordings(extra)
        sets = {**held_out, **tuning}
        if not args.no_synthetic:
            sets |= {"synthetic: stereo_diarization mono": [stereo_mixed()],
                     "synthetic: espeak-ng conversations": conversations(folder, args.count,
                                                                         args.seed),
                     "synthetic: one speaker": monologues(folder)}  # fmt: skip
        result: dict[str, Any] = {"sets": {}}
        for label, convs in sets.items():
            if convs and args.sets in label:
                result["sets"][label] = run_set(convs, args.senko_python, folder,
                                                args.transcript)  # fmt: skip
        for group, labels in (("held_out_pooled", held_out), ("tuning_pooled", tuning)):
            pooled: dict[str, Any] = {}
            for key, which in (("heard_auto", "auto"), ("heard_known", "known"),
                               ("heard_words_auto", "words_auto"),
                               ("heard_words_known", "words_known"),
                               ("senko_auto", "senko")):  # fmt: skip
                rows = [r for label in labels if label in result["sets"]
                        for r in result["sets"][label]["rows"].get(which, [])]  # fmt: skip
                if rows:
                    pooled[key] = summary(rows)
            result[group] = pooled
        if args.cpwer:
            result["cpwer"] = cpwer(conversations(folder, args.count, args.seed)[: args.cpwer])
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        report(result)
    return result


if __name__ == "__main__":
    main()
