"""Streaming stabilization: heard's stable prefix against LocalAgreement-2 on the same stream.

Each audio file is streamed once through heard's streaming ASR (faster-whisper
tiny.en, 1000 ms chunks, simulated clock); both commit policies then read the same
partials and finals, so the difference is the policy alone:

* heard: ``TranscriptAccumulator`` (normalized agreement, last word never stable, a new
  reading adopted once two consecutive revisions confirm it); under these irrevocable
  commits, a revised stable prefix commits what it holds past the committed words;
* LocalAgreement-2, as whisper_streaming describes it (``bench/peers.py``).

For each policy: committed-word latency (from the first partial holding a word to
its commit; words first committed by the final count from the final) p50/p95; the WER
against an offline transcript (the whole file, beam 5) of the text as committed - words are
never taken back; each final is aligned with what was committed (``align_final``, the
accounting heard's captions use), adds the words never committed where it has them, and
leaves words committed past its end to the next utterance; and the stable-prefix precision,
the share of committed words the final kept. Also the WER of the finals themselves (what
heard's captions hold once corrections apply) and the stream's compute real-time factor
(decode time / audio time).

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
from typing import Protocol

import jiwer

from heard.asr import FasterWhisperTranscriber, load_audio
from heard.asr.streaming import stream_events
from heard.release.alignment import align_final, align_reading
from heard.release.cadence import nearest_rank
from heard.transcript.accumulator import TranscriptAccumulator
from heard.transcript.events import EventKind, TranscriptEvent, read_events
from peers import LocalAgreement2

REPO = Path(__file__).resolve().parents[1]
AUDIO = REPO / "tests" / "data" / "audio"


@dataclass
class Commits:
    words: list[str]
    """The text as committed: nothing taken back; each final adds, where it has them, the
    words never committed; committed words past a shorter final stay for the next one."""
    latencies: list[float]
    """Per word of ``words``: from the first partial holding it to its commit (or the final)."""
    made_stable: int = 0
    kept: int = 0
    """Committed words the final kept (an exact match after normalization)."""

    @property
    def precision(self) -> float:
        return self.kept / self.made_stable if self.made_stable else 1.0


class Policy(Protocol):
    def reset(self) -> None: ...
    def commit(self, text: str) -> list[str]:
        """Words of this utterance newly committed by this partial, in order."""
        ...


class HeardPolicy:
    """heard's stable prefix (``TranscriptAccumulator``): a word commits once it is stable.

    When the stable prefix takes a confirmed new reading (``revised``), the words already
    committed stay (nothing is taken back here), and what the new reading holds past them,
    by word alignment, commits: the captions' corrections are not counted."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.acc, self.done = TranscriptAccumulator(), 0
        self.committed: list[str] = []

    def commit(self, text: str) -> list[str]:
        hypothesis = self.acc.push_partial(text)
        stable = hypothesis.stable_prefix.split()
        if hypothesis.revised and self.committed:
            _, self.done = align_reading(self.committed, stable)
        new, self.done = stable[self.done :], max(self.done, len(stable))
        self.committed += new
        return new


class LocalAgreementPolicy:
    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.la = LocalAgreement2()

    def commit(self, text: str) -> list[str]:
        return self.la.insert(text)


def account(events: list[TranscriptEvent], policy: Policy) -> Commits:
    """What a policy commits over a stream, settled at each final by word alignment (the
    accounting heard's captions use, without their corrections: nothing is taken back)."""
    out = Commits([], [])
    pending: list[tuple[str, float]] = []  # committed since the last final: (word, latency)
    carried = 0  # of them, words committed past the previous final
    position = 0  # words of this utterance the policy has committed
    heard_at: dict[int, int] = {}
    policy.reset()
    for e in events:
        words = e.text.split()
        for i in range(len(words)):
            heard_at.setdefault(i, e.t_ms)
        if e.kind is EventKind.PARTIAL:
            for word in policy.commit(e.text):
                if position >= carried:  # the carried words were committed already
                    pending.append((word, e.t_ms - heard_at.get(position, e.t_ms)))
                    out.made_stable += 1
                position += 1
            continue
        alignment = align_final([w for w, _ in pending], words)
        settled: list[tuple[str, float]] = []
        at, final_index = 0, 0
        for edit in alignment.edits:
            settled += pending[at : edit.at]  # matched words, as committed
            final_index += edit.at - at
            out.kept += edit.at - at
            # contradicted words stay (nothing is taken back); the final's words beyond as many
            # as they stand for are added, where the final has them
            settled += pending[edit.at : edit.at + edit.replaces]
            for k in range(edit.replaces, len(edit.words)):
                lat = e.t_ms - heard_at.get(final_index + k, e.t_ms)
                settled.append((edit.words[k], lat))
            final_index += len(edit.words)
            at = edit.at + edit.replaces
        end = len(pending) - alignment.carried
        settled += pending[at:end]
        out.kept += end - at
        out.words += [w for w, _ in settled]
        out.latencies += [lat for _, lat in settled]
        pending = pending[end:]
        carried, position, heard_at = len(pending), 0, {}
        policy.reset()
    out.words += [w for w, _ in pending]
    out.latencies += [lat for _, lat in pending]
    return out


def commit_heard(events: list[TranscriptEvent]) -> Commits:
    return account(events, HeardPolicy())


def commit_la2(events: list[TranscriptEvent]) -> Commits:
    return account(events, LocalAgreementPolicy())


def wer(reference: str | list[str], words: list[str] | list[str]) -> float:
    """WER of ``words`` (or, pooled, of several texts) against ``reference`` (or references)."""
    clean = jiwer.Compose(
        [
            jiwer.ToLowerCase(),
            jiwer.RemovePunctuation(),
            jiwer.RemoveMultipleSpaces(),
            jiwer.Strip(),
            jiwer.ReduceToListOfListOfWords(),
        ]
    )
    hypothesis = words if isinstance(reference, list) else " ".join(words)
    return float(
        jiwer.wer(reference, hypothesis, reference_transform=clean, hypothesis_transform=clean)
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


FIXTURES = REPO / "tests" / "data" / "cadence"


def fixture_scripts() -> dict[str, str]:
    """What was spoken in each committed cadence fixture (the scripts in its README)."""
    readme = (FIXTURES / "README.md").read_text(encoding="utf-8")
    scripts = json.loads(readme[readme.index("{") :])
    monologue = scripts["monologue"]
    return {
        "natural": " ".join(scripts["natural"]),
        "continuous": monologue,
        "unpunctuated": monologue,
        "mixed": " ".join(scripts["mixed"]),
        "alternating": monologue,
    }


def fixture_rows() -> list[dict[str, object]]:
    """Both policies on the committed fixtures' streams, scored against what was spoken:
    deterministic (the streams are on disk), and pooled over all five at the end."""
    rows: list[dict[str, object]] = []
    pooled: dict[str, tuple[list[str], list[str]]] = {
        "heard": ([], []),
        "LocalAgreement-2": ([], []),
    }
    for name, script in fixture_scripts().items():
        events = read_events(FIXTURES / f"{name}.jsonl")
        for policy, commits in (
            ("heard", commit_heard(events)),
            ("LocalAgreement-2", commit_la2(events)),
        ):
            pooled[policy][0].append(script)
            pooled[policy][1].append(" ".join(commits.words))
            rows.append({"audio": name, "policy": policy, "words": len(commits.words),
                         "p50_ms": nearest_rank(commits.latencies, 50),
                         "p95_ms": nearest_rank(commits.latencies, 95),
                         "wer": round(wer(script, commits.words), 3),
                         "precision": round(commits.precision, 3)})  # fmt: skip
    for policy, (scripts, texts) in pooled.items():
        rows.append({"audio": "all five", "policy": policy, "wer": round(wer(scripts, texts), 4)})
    return rows


def main(argv: list[str] | None = None) -> list[dict[str, object]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    rows: list[dict[str, object]] = []
    offline = FasterWhisperTranscriber()
    with tempfile.TemporaryDirectory() as tmp:
        for name, path in audio_files(Path(tmp)):
            samples = load_audio(path)
            reference = offline.transcribe(samples).text
            started = time.perf_counter()
            events = list(stream_events(samples))
            rtf = (time.perf_counter() - started) / (len(samples) / 16_000)
            finals = [w for e in events if e.kind is EventKind.FINAL for w in e.text.split()]
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
                        "precision": round(commits.precision, 3),
                        "stream_rtf": round(rtf, 3),
                        "finals_wer": round(wer(reference, finals), 3),
                    }
                )
    if args.json:
        print(json.dumps(rows, indent=1))
        return rows
    print(
        f"{'audio':<18}{'policy':<18}{'words':>6}{'p50 ms':>8}{'p95 ms':>8}{'WER':>7}"
        f"{'precision':>11}{'stream RTF':>12}"
    )
    for r in rows:
        print(
            f"{r['audio']!s:<18}{r['policy']!s:<18}{r['words']!s:>6}{r['p50_ms']:>8.0f}"
            f"{r['p95_ms']:>8.0f}{r['wer']!s:>7}{r['precision']!s:>11}{r['stream_rtf']!s:>12}"
        )
    for r in rows[::2]:
        print(f"{r['audio']}: the finals themselves (heard's captions, corrections applied):"
              f" WER {r['finals_wer']}")  # fmt: skip
    print("\nThe committed cadence fixtures' streams, against what was spoken:")
    print(f"{'fixture':<18}{'policy':<18}{'words':>6}{'p50 ms':>8}{'p95 ms':>8}{'WER':>7}"
          f"{'precision':>11}")  # fmt: skip
    for r in fixture_rows():
        if "words" in r:
            print(f"{r['audio']!s:<18}{r['policy']!s:<18}{r['words']!s:>6}{r['p50_ms']:>8.0f}"
                  f"{r['p95_ms']:>8.0f}{r['wer']!s:>7}{r['precision']!s:>11}")  # fmt: skip
        else:
            print(f"{r['audio']!s:<18}{r['policy']!s:<18}{'':>22}{r['wer']!s:>7}")
    return rows


if __name__ == "__main__":
    main()
