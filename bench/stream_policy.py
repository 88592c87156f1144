"""Commit policies on real conversation: one simulated live stream per call, side by side.

``bench/capacity.py`` measures a whole server under load; this isolates the policy. Each call
of ``capacity``'s real sets (``room``: AMI as a room microphone hears it; ``phone``: AMI
through a simulated telephone line; ``--real DIR``: recordings of your own) is streamed
through ``WhisperStreamingRecognizer`` (tiny.en, one thread, the step fixed at each of
``--steps``, as a server's pace would set it) in 100 ms frames, then 1.5 s of silence, once
per commit rule (``heard.asr.commits.CommitRule``):

* ``heard``: what streams use: two decodes agree, or a decode heard ``SETTLED_S`` (1 s) after
  the word, ``CONFIDENT_SETTLED_S`` (0.3 s) after a word read with ``CONFIDENT`` probability;
* ``no-confident``: the same without the confident rule;
* ``agreement``: LocalAgreement-2 alone (whisper_streaming's rule, on heard's buffers);
* ``endpoint``: nothing final until the utterance ends (VAD silence, or ``max_utterance_s``):
  each utterance read once whole, the most right context a commit rule can give these
  buffers (a reference for what a rule can read, not a strict bound).

Per rule and step: WER of the committed text against what was said (AMI's words, fillers
left out), pooled over the calls, beside tiny.en offline on each whole call (greedy,
faster-whisper's defaults, the mean of ``OFFLINE_RUNS`` readings, as ``capacity`` reports
it); commit latency from a word's end as said to its commit (the decode's CPU time added to
the audio time of its step), p50 and p95; and the decoding CPU seconds per audio second. One
thread: a stream's cost, not a server's.

Usage: python bench/stream_policy.py [--sets room,phone] [--steps 500,1500] [--real DIR]
       [--rules heard,agreement] [--contexts 0,4] [--beams 1,5] [--trims 3,15] [--json]

Each of ``--contexts``, ``--beams`` and ``--trims`` is crossed with the others: the seconds of
audio each decode hears again before its buffer, Whisper's beam, and the buffer length at
which it is cut in a pause (``heard.asr.streaming.StreamOptions``).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from heard.asr import decoder
from heard.asr.audio import SAMPLE_RATE
from heard.asr.commits import CommitRule
from heard.asr.streaming import (
    FORCE_TRIM_S,
    TRIM_S,
    Decoded,
    SpareRule,
    StreamOptions,
    WhisperStreamingRecognizer,
)
from heard.asr.whisper import WhisperOptions
from heard.release.cadence import nearest_rank

sys.path.insert(0, str(Path(__file__).resolve().parent))
from capacity import (
    FRAME,
    OFFLINE_RUNS,
    TAIL_SILENCE_S,
    Call,
    call_sets,
    matched_ends,
    normalized,
    offline_texts,
    offline_wer,
    pooled_wer,
)

RULES: dict[str, CommitRule] = {
    "heard": CommitRule(),
    "no-confident": CommitRule(confident=math.inf),
    "agreement": CommitRule(settled_s=math.inf, confident=math.inf),
    "endpoint": CommitRule.endpoint_only(),
    "patient": CommitRule(settled_s=1.5, confident_settled_s=0.6),
    "patient2": CommitRule(settled_s=2.0, confident_settled_s=1.0),
    "settled": CommitRule(agreement=False, settled_s=1.5, confident_settled_s=0.6),
}


@dataclass(frozen=True, slots=True)
class Decoding:
    """How each live decode reads its buffer: audio before it heard again, Whisper's beam,
    and how long the buffer grows before it is cut in a pause (cut anyway 5 s later, at
    least ``FORCE_TRIM_S``)."""

    context_s: float = 0.0
    beam: int = 1
    trim_s: float = TRIM_S
    silence_rule: bool = True
    """Whisper's no-speech rule on each reading (``heard.asr.decoder.NO_SPEECH_PROB``); off,
    the live decoder as it was before issue 58 took it from the files' path."""

    def options(self, step_ms: int, rule: CommitRule) -> StreamOptions:
        return StreamOptions(
            chunk_ms=step_ms, commit=rule, spare=SpareRule(context_s=self.context_s),
            beam_size=self.beam, trim_s=self.trim_s,
            force_trim_s=max(FORCE_TRIM_S, self.trim_s + 5),
        )  # fmt: skip


def stream(
    call: Call, step_ms: int, rule: CommitRule, decoding: Decoding | None = None
) -> tuple[list[tuple[str, float]], float]:
    """The words ``call`` commits as one live stream, each with when (seconds of the call,
    plus the decoding time so far in that step); and the CPU seconds spent decoding."""
    decoding = decoding or Decoding()
    with _silence_rule(on=decoding.silence_rule):
        return _stream(call, decoding.options(step_ms, rule))


@contextmanager
def _silence_rule(*, on: bool) -> Iterator[None]:
    kept = decoder.NO_SPEECH_PROB
    decoder.NO_SPEECH_PROB = kept if on else math.inf
    try:
        yield
    finally:
        decoder.NO_SPEECH_PROB = kept


def _stream(call: Call, options: StreamOptions) -> tuple[list[tuple[str, float]], float]:
    recognizer = WhisperStreamingRecognizer(options=options, whisper=WhisperOptions(cpu_threads=1))
    silence = np.zeros(round(TAIL_SILENCE_S * SAMPLE_RATE), dtype=np.float32)
    audio = np.concatenate([call.samples.astype(np.float32), silence])
    committed: list[tuple[str, float]] = []
    cpu = 0.0
    steps: list[tuple[float, Callable[[], list[Decoded]]]] = [
        (min(i + FRAME, len(audio)) / SAMPLE_RATE, partial(recognizer.push, audio[i : i + FRAME]))
        for i in range(0, len(audio), FRAME)
    ]
    steps.append((len(audio) / SAMPLE_RATE, recognizer.finish))
    for at, step in steps:
        started = time.process_time()
        found = step()
        spent = time.process_time() - started
        cpu += spent
        committed += [(w, at + spent) for d in found if d.kind.value == "final"
                      for w in normalized(d.text).split()]  # fmt: skip
    return committed, cpu


def measure(
    calls: list[Call], step_ms: int, rule: CommitRule, decoding: Decoding | None = None
) -> dict[str, Any]:
    pairs: list[tuple[str, str]] = []
    delays: list[float] = []
    cpu = seconds = 0.0
    for call in calls:
        committed, spent = stream(call, step_ms, rule, decoding)
        words = [w for w, _ in committed]
        pairs.append((call.truth, " ".join(words)))
        for (_, at), end in zip(committed, matched_ends(words, call), strict=True):
            if end is not None:
                delays.append(at - end)
        cpu += spent
        seconds += call.seconds
    return {
        "wer": pooled_wer(pairs),
        "commit_p50_s": round(nearest_rank(delays, 50), 2),
        "commit_p95_s": round(nearest_rank(delays, 95), 2),
        "cpu_s_per_s": round(cpu / seconds, 3),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default="room,phone", help="room, phone, mix (comma-separated)")
    parser.add_argument("--steps", default="500,1500", help="steps in ms (comma-separated)")
    parser.add_argument("--rules", default=",".join(RULES), help=f"of {', '.join(RULES)}")
    parser.add_argument("--contexts", default="0", help="seconds of audio before each buffer")
    parser.add_argument("--beams", default="1", help="Whisper beam sizes (comma-separated)")
    parser.add_argument("--trims", default=f"{TRIM_S:g}", help="buffer lengths at which a "
                        "buffer is cut in a pause, seconds (comma-separated)")  # fmt: skip
    parser.add_argument("--silence-rule", default="on", help="Whisper's no-speech rule on "
                        "each live reading: on, off or on,off")  # fmt: skip
    parser.add_argument("--real", type=Path, help="a folder of recordings with a .txt each")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args(argv)
    rules = args.rules.split(",")
    if unknown := [r for r in rules if r not in RULES]:
        parser.error(f"unknown rule {unknown[0]!r}: one of {', '.join(RULES)}")
    try:
        steps = [int(s) for s in args.steps.split(",")]
    except ValueError:
        steps = []
    if not steps or min(steps) <= 0:
        parser.error(f"--steps takes milliseconds over 0, e.g. 500,1500, not {args.steps!r}")
    guards = args.silence_rule.split(",")
    if not guards or set(guards) - {"on", "off"}:
        parser.error(f"--silence-rule takes on, off or on,off, not {args.silence_rule!r}")
    decodings = [Decoding(float(c), int(b), float(t), g == "on")
                 for g in guards for c in args.contexts.split(",")
                 for b in args.beams.split(",") for t in args.trims.split(",")]  # fmt: skip
    sets = call_sets([s for s in args.sets.split(",") if s], args.real)
    results: dict[str, Any] = {}
    for name, calls in sets.items():
        read = offline_wer(calls, offline_texts(calls))
        offline = read["beam1"]
        seconds = sum(c.seconds for c in calls)
        print(f"{name}: {', '.join(c.name for c in calls)} ({seconds:.0f} s); offline tiny.en "
              f"WER {offline} (mean of {OFFLINE_RUNS}: {read['beam1_low']}-{read['beam1_high']})",
              file=sys.stderr, flush=True)  # fmt: skip
        rows = results[name] = {"offline_wer": offline, "offline": read, "rows": []}
        for step in steps:
            for decoding in decodings:
                for rule in rules:
                    row = {
                        "rule": rule,
                        "step_ms": step,
                        "context_s": decoding.context_s,
                        "beam": decoding.beam,
                        "trim_s": decoding.trim_s,
                        "silence_rule": decoding.silence_rule,
                        **measure(calls, step, RULES[rule], decoding),
                    }
                    rows["rows"].append(row)
                    print(f"  {rule:13} step {step:>5} ms  context {decoding.context_s:g} s  "
                          f"beam {decoding.beam}  trim {decoding.trim_s:g} s  "
                          f"silence rule {'on' if decoding.silence_rule else 'off'}  "
                          f"WER {row['wer']:.3f} ({row['wer'] - offline:+.3f})  "
                          f"commit p50 {row['commit_p50_s']:.2f} "
                          f"p95 {row['commit_p95_s']:.2f} s  CPU {row['cpu_s_per_s']:.3f} s/s",
                          file=sys.stderr, flush=True)  # fmt: skip
    if args.json:
        print(json.dumps(results, indent=2))
    return results


if __name__ == "__main__":
    main()
