"""Synthesize a multi-track meeting with espeak-ng and sox: one FLAC track per participant.

A script is a list of turns ``(participant, text, start)`` where ``start`` is a
number of seconds on the meeting timeline, or a string relative to an earlier
turn: ``"after N +0.8"`` (0.8 s after turn N ends) or ``"before N 1.0"`` (1.0 s
before turn N ends: overlapping speech). A participant's track starts at their
``join_s`` (a late joiner's file begins when they join), and ``meeting.json``
records that offset, so the tracks replay on one timeline.

The bundled demo meeting (``src/heard/samples/meeting/``) was made with
``python tools/make_meeting.py src/heard/samples/meeting``; tests make fresh ones.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
import wave
from dataclasses import dataclass
from pathlib import Path

import numpy as np

RATE = 16_000


@dataclass(frozen=True)
class Voice:
    espeak: str
    speed: int = 150
    join_s: float | None = 0.0
    """When the participant's track starts; None: half a second before their first turn."""


DEMO_VOICES = {
    "alice": Voice("en-us+f3", 150),
    "bob": Voice("en+m3", 155, join_s=None),  # joins late
    "carol": Voice("en-gb+f4", 140),
}
DEMO_SCRIPT: list[tuple[str, str, float | str]] = [
    ("alice", "Good morning everyone. Let's go over the launch plan for the mobile app.", 0.5),
    ("carol", "Uh-huh.", "after 0 +0.3"),
    (
        "alice",
        "The beta went out on Monday, and we have two hundred testers so far.",
        "after 0 +1.2",
    ),
    ("bob", "Sorry I'm late. I can take the battery problem on older phones.", "before 2 1.0"),
    ("alice", "Great, thank you Bob. Let's meet again on Friday.", "after 3 +0.8"),
]
DEMO_TITLE = "Mobile app launch sync"


def speak(text: str, voice: Voice, workdir: Path, index: int) -> np.ndarray:
    raw, resampled = workdir / f"u{index}.wav", workdir / f"u{index}_16k.wav"
    subprocess.run(["espeak-ng", "-v", voice.espeak, "-s", str(voice.speed), "-w", str(raw), text],
                   check=True)  # fmt: skip
    subprocess.run(["sox", str(raw), "-r", str(RATE), "-c", "1", "-b", "16", str(resampled)],
                   check=True)  # fmt: skip
    with wave.open(str(resampled)) as w:
        return np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16)


def resolve_start(spec: float | str, spans: list[tuple[float, float]]) -> float:
    if isinstance(spec, int | float):
        return float(spec)
    kind, ref, amount = spec.split()
    _, end = spans[int(ref)]
    if kind == "after":
        return end + float(amount)
    if kind == "before":
        return end - float(amount)
    raise ValueError(f"bad start {spec!r}")


def make_meeting(
    out_dir: Path,
    script: list[tuple[str, str, float | str]] = DEMO_SCRIPT,
    voices: dict[str, Voice] = DEMO_VOICES,
    title: str = DEMO_TITLE,
) -> dict[str, object]:
    """Write one FLAC per participant and ``meeting.json``; return the manifest."""
    out_dir.mkdir(parents=True, exist_ok=True)
    spans: list[tuple[float, float]] = []
    placed: list[tuple[str, float, np.ndarray, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, (who, text, start_spec) in enumerate(script):
            audio = speak(text, voices[who], Path(tmp), i)
            start = resolve_start(start_spec, spans)
            spans.append((start, start + len(audio) / RATE))
            placed.append((who, start, audio, text))
        tracks = []
        turns = []
        for who in dict.fromkeys(w for w, *_ in placed):
            mine = [(s, a) for w, s, a, _ in placed if w == who]
            join = voices[who].join_s
            offset = round(mine[0][0] - 0.5, 2) if join is None else join
            length = max(round((s - offset) * RATE) + len(a) for s, a in mine) + RATE // 2
            track = np.zeros(length, dtype=np.int16)
            for s, a in mine:
                at = round((s - offset) * RATE)
                track[at : at + len(a)] = a
            wav = Path(tmp) / f"{who}.wav"
            with wave.open(str(wav), "wb") as w:
                w.setnchannels(1)
                w.setsampwidth(2)
                w.setframerate(RATE)
                w.writeframes(track.tobytes())
            flac = out_dir / f"{who}.flac"
            subprocess.run(["sox", str(wav), str(flac)], check=True)
            tracks.append({"participant": who, "file": flac.name, "offset_s": offset})
        for (who, _start, _audio, text), (s, e) in zip(placed, spans, strict=True):
            turns.append(
                {"participant": who, "start": round(s, 2), "end": round(e, 2), "text": text}
            )
    manifest: dict[str, object] = {"title": title, "tracks": tracks, "script": turns}
    (out_dir / "meeting.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("out_dir", type=Path)
    args = parser.parse_args()
    manifest = make_meeting(args.out_dir)
    print(json.dumps(manifest, indent=1))


if __name__ == "__main__":
    main()
