"""Write ``tests/data/diarization/vectors.npz``: for every real recording of
``tests/data/diarization`` (the AMI excerpts, the falcon clip, the spliced LibriSpeech
conversations), the CAM++ vectors of the stretches ``OnnxDiarizer`` embeds, the reference
speaker of each (-1 where no one speaker holds 80% of it), how many people speak, and the
lower bound ``auto`` takes from the segmentation. The clustering tests count speakers on
them; ``tests/diarize/test_clusters.py`` checks one recording against the code of the day.

    python tools/make_diarization_vectors.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "tests" / "data" / "diarization" / "vectors.npz"
sys.path.insert(0, str(REPO / "bench"))


def stretch_vectors(samples: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """The stretches (frames), their vectors and ``auto``'s lower bound, as the diarizer
    makes them for ``auto``."""
    from heard.diarize.clusters import frame_count, local_speakers
    from heard.diarize.onnx import FRAME, LOCAL_SPEAKER_S, SAMPLE_RATE, OnnxDiarizer

    diarizer = OnnxDiarizer()
    frames = max(0, (len(samples) - 360) // FRAME + 1)
    activity, offsets = diarizer._segment(samples, None)
    count = frame_count(activity, offsets, frames)
    stretches = diarizer._stretches(count, None)
    pieces = [diarizer._alone(samples, count, int(a), int(b)) for a, b in stretches]
    vectors = diarizer.embedder.embed(pieces) if pieces else np.zeros((0, 192), np.float32)
    at_least = local_speakers(activity, int(LOCAL_SPEAKER_S * SAMPLE_RATE / FRAME))
    return stretches, vectors, at_least


def reference(truth: list[tuple[float, float, str]], stretches: np.ndarray) -> np.ndarray:
    """The index (in sorted order) of the one speaker who talks in 80% or more of each
    stretch, alone; -1 where none does."""
    from heard.diarize.onnx import FRAME, FRAME_CENTRE, SAMPLE_RATE

    names = sorted({k for _, _, k in truth})
    out = np.full(len(stretches), -1, dtype=np.int64)
    for i, (a, b) in enumerate(stretches):
        t = (FRAME_CENTRE + FRAME * np.arange(a, b)) / SAMPLE_RATE
        talking = np.zeros((len(t), len(names)), dtype=bool)
        for start, end, who in truth:
            talking[(t >= start) & (t < end), names.index(who)] = True
        alone = talking.sum(axis=1) == 1
        share = (talking & alone[:, None]).mean(axis=0)
        if share.max() >= 0.8:
            out[i] = int(np.argmax(share))
    return out


def main() -> None:
    from conversations import REAL, recordings, spliced

    arrays: dict[str, np.ndarray] = {}
    convs = [*recordings(REAL / "ami"), *recordings(REAL / "falcon"), *spliced()]
    for c in convs:
        stretches, vectors, at_least = stretch_vectors(c.samples)
        arrays[f"{c.name}/vectors"] = vectors.astype(np.float16)
        arrays[f"{c.name}/stretches"] = stretches
        arrays[f"{c.name}/speaker"] = reference(c.truth, stretches)
        arrays[f"{c.name}/people"] = np.array(c.speakers)
        arrays[f"{c.name}/at_least"] = np.array(at_least)
        print(f"{c.name}: {len(vectors)} stretches, {c.speakers} people, at least {at_least}")
    np.savez_compressed(OUT, allow_pickle=False, **arrays)
    print(f"{OUT}: {OUT.stat().st_size / 1e3:.0f} kB")


if __name__ == "__main__":
    main()
