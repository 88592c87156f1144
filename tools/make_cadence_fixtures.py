"""Make the cadence fixtures: espeak-ng speech streamed through heard's real streaming ASR.

Writes ``tests/data/cadence/{natural,continuous,unpunctuated,mixed,alternating}.jsonl``
(transcript events, simulated clock, 1000 ms chunks). Needs espeak-ng and sox.

* natural: six sentences, each followed by 1.6 s of silence (each its own utterance);
* continuous: a 170-word punctuated monologue with no pause long enough to end it;
* unpunctuated: the same audio, the recognizer's punctuation stripped (``--strip-punctuation``);
* mixed: short exchanges around a punctuated monologue;
* alternating: the monologue, punctuation stripped in every other 15 s window.

Usage: python tools/make_cadence_fixtures.py [OUT_DIR]
"""

from __future__ import annotations

import json
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from heard.asr.streaming import StreamOptions, stream_events, strip_punctuation
from heard.transcript.events import TranscriptEvent
from make_meeting import RATE, Voice, speak

VOICE = Voice("en-us", 160)
NATURAL = [
    "Good morning. I looked at the numbers from last week.",
    "Sales went up in the north, but the south was flat.",
    "I think we should move two people to the southern team.",
    "Let's decide that on Friday.",
    "Any questions?",
    "Okay, thank you all.",
]
MONOLOGUE = (
    "Let me walk you through the plan for the next quarter. We start with the mobile app, "
    "because the beta testers found three problems with battery use. The first problem is the "
    "location service, which wakes the phone far too often. The second is the image cache, "
    "which grows without limit on older devices. The third is a bug in the sync code. After "
    "that we move to the web dashboard, where customers asked for better charts and an export "
    "button. Maria will lead that work, and she needs one more engineer. In the second month we "
    "hire for support, since the ticket queue doubled after the launch. Finally, we want to "
    "test the new pricing with a small group of customers before we change anything for "
    "everyone. I will send the written plan tonight, so please read it before our meeting on "
    "Thursday."
)
MIXED = ["Hi everyone.", "Can you hear me?", MONOLOGUE, "Great.", "Let's move on to the budget."]
GAP_S = 1.6
ALTERNATE_MS = 15_000


def synthesize(pieces: list[str], workdir: Path) -> np.ndarray:
    parts = []
    silence = np.zeros(int(GAP_S * RATE), dtype=np.int16)
    for i, text in enumerate(pieces):
        parts += [speak(text, VOICE, workdir, i), silence]
    return np.concatenate(parts).astype(np.float32) / 32768


def events(samples: np.ndarray, strip: bool = False) -> list[TranscriptEvent]:
    return list(stream_events(samples, options=StreamOptions(strip_punctuation=strip)))


def alternate(evs: list[TranscriptEvent]) -> list[TranscriptEvent]:
    return [
        replace(e, text=strip_punctuation(e.text)) if (e.t_ms // ALTERNATE_MS) % 2 else e
        for e in evs
    ]


def write(path: Path, evs: list[TranscriptEvent]) -> None:
    path.write_text("".join(e.to_json() + "\n" for e in evs), encoding="utf-8")
    print(f"{path}: {len(evs)} events", file=sys.stderr)


def main() -> None:
    out = (
        Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parents[1] / "tests/data/cadence"
    )
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        natural = synthesize(NATURAL, work)
        monologue = synthesize([MONOLOGUE], work)
        mixed = synthesize(MIXED, work)
    write(out / "natural.jsonl", events(natural))
    continuous = events(monologue)
    write(out / "continuous.jsonl", continuous)
    write(out / "unpunctuated.jsonl", events(monologue, strip=True))
    write(out / "mixed.jsonl", events(mixed))
    write(out / "alternating.jsonl", alternate(continuous))
    (out / "README.md").write_text(
        "Made by `python tools/make_cadence_fixtures.py` (espeak-ng voice en-us at 160 wpm,\n"
        "heard's streaming faster-whisper tiny.en, 1000 ms chunks, simulated clock).\n"
        + json.dumps({"natural": NATURAL, "monologue": MONOLOGUE, "mixed": MIXED}, indent=1)
        + "\n",
        encoding="utf-8",
    )


if __name__ == "__main__":
    main()
