"""The CAM++ speaker embedder (``heard.diarize.embedders``) against the reference that
PyTorch and Kaldi give (``tests/data/diarization/campplus_reference.npz``), and the seam."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from heard.asr.audio import load_audio
from heard.diarize.clusters import CAMPLUSPLUS_THRESHOLDS
from heard.diarize.embedders import (
    CamPlusPlus,
    SpeakerEmbedder,
    Thresholds,
    speaker_embedder,
    thresholds_of,
)
from heard.diarize.features import fbank
from heard.diarize.onnx import OnnxDiarizer
from heard.errors import MissingDependencyError, UnknownNameError

DATA = Path(__file__).resolve().parents[1] / "data" / "diarization"


def reference() -> dict[str, npt.NDArray[np.float32]]:
    with np.load(DATA / "campplus_reference.npz") as data:
        return {k: data[k] for k in data.files}


def test_fbank_is_kaldis() -> None:
    ref = reference()
    feats = fbank(ref["samples"])
    assert feats.shape == ref["fbank"].shape
    assert np.abs((feats - feats.mean(axis=0)) - ref["fbank"]).max() < 5e-3


def test_the_onnx_model_gives_pytorchs_embedding() -> None:
    ref = reference()
    got = CamPlusPlus().embed([ref["samples"]])[0]
    want = ref["embedding"] / np.linalg.norm(ref["embedding"])
    assert abs(float(np.linalg.norm(got)) - 1) < 1e-5
    assert float(got @ want) > 0.999


def test_a_reader_is_nearer_themselves_than_another() -> None:
    clips = {p.stem: load_audio(p) for p in sorted((DATA / "librispeech").glob("*.flac"))}
    names = sorted(clips)
    v = CamPlusPlus().embed([clips[n][: 16000 * 3] for n in names])
    reader = [n.split("-")[0] for n in names]
    similarity = v @ v.T
    for i in range(len(names)):
        same = [similarity[i, j] for j in range(len(names)) if j != i and reader[j] == reader[i]]
        other = [similarity[i, j] for j in range(len(names)) if reader[j] != reader[i]]
        assert min(same) > max(other), names[i]


def test_nothing_to_embed_is_a_zero_vector_and_a_few_frames_a_unit_one() -> None:
    speech = load_audio(DATA.parent / "audio" / "jfk.flac")[16000:16100]
    v = CamPlusPlus().embed([np.zeros(0, dtype=np.float32), speech])
    assert v.shape == (2, 192)
    assert not v[0].any()
    assert abs(float(np.linalg.norm(v[1])) - 1) < 1e-5


class LoudnessEmbedder:
    """Two "voices": loud and quiet stretches."""

    name = "loudness"
    dim = 2

    def __init__(self) -> None:
        self.pieces = 0

    def embed(self, pieces: list[npt.NDArray[np.float32]]) -> npt.NDArray[np.float32]:
        self.pieces += len(pieces)
        loud = np.array([float(np.sqrt(np.mean(p**2))) > 0.05 if len(p) else 0 for p in pieces])
        return np.stack([loud, 1 - loud], axis=1).astype(np.float32)


def test_the_embedder_is_swapped_at_the_seam() -> None:
    fake = LoudnessEmbedder()
    assert isinstance(fake, SpeakerEmbedder)
    assert isinstance(CamPlusPlus(), SpeakerEmbedder)
    diarizer = OnnxDiarizer(embedder=fake)
    assert diarizer.name == "segmentation-3.0+loudness"
    samples = load_audio(DATA.parent / "audio" / "jfk.flac")
    samples[len(samples) // 2 :] *= 0.1  # the second half, quiet: a second "voice"
    found = diarizer.diarize(samples, speakers=2)
    assert fake.pieces > 0
    assert found.speakers == 2


def test_the_embedder_chosen_by_name_carries_its_thresholds() -> None:
    """CAM++ by its name: the thresholds the clustering takes by default, so a diarizer
    given the name, or nothing, clusters as before."""
    chosen = speaker_embedder("campplus-sv-zh-en-common", threads=2)
    assert isinstance(chosen, CamPlusPlus)
    assert chosen.threads == 2
    assert chosen.thresholds == Thresholds(same_speaker=0.55, one_person=0.7)
    assert chosen.thresholds == CAMPLUSPLUS_THRESHOLDS
    for diarizer in (OnnxDiarizer(embedder="campplus-sv-zh-en-common", threads=2), OnnxDiarizer()):
        assert isinstance(diarizer.embedder, CamPlusPlus)
        assert diarizer.thresholds == CAMPLUSPLUS_THRESHOLDS
        assert diarizer.name == "segmentation-3.0+campplus-sv-zh-en-common"
    assert OnnxDiarizer(embedder="campplus-sv-zh-en-common", threads=2).embedder.threads == 2


def test_an_unknown_embedder_name_lists_the_known_ones() -> None:
    message = "unknown speaker embedder 'ecapa'; choose one of: campplus-sv-zh-en-common"
    with pytest.raises(UnknownNameError, match=message):
        speaker_embedder("ecapa")
    with pytest.raises(UnknownNameError, match=message):
        OnnxDiarizer(embedder="ecapa")


class LenientCamPlusPlus(CamPlusPlus):
    """CAM++ with thresholds that take any two stretches for one person."""

    name = "campplus-lenient"
    thresholds = Thresholds(same_speaker=-1.0, one_person=-1.0)


def test_a_custom_embedders_thresholds_are_the_ones_the_clustering_uses() -> None:
    """Three real people one after another: three with CAM++'s thresholds; with thresholds
    that join everything, only as many as one window heard at once (two)."""
    path = DATA / "falcon" / "picovoice_falcon_3spk.flac"
    assert OnnxDiarizer(embedder=CamPlusPlus()).diarize(path).speakers == 3
    lenient = OnnxDiarizer(embedder=LenientCamPlusPlus())
    assert lenient.thresholds == LenientCamPlusPlus.thresholds
    assert lenient.diarize(path).speakers == 2


def test_an_embedder_without_thresholds_is_clustered_by_campplus() -> None:
    assert thresholds_of(LoudnessEmbedder()) == CAMPLUSPLUS_THRESHOLDS
    assert OnnxDiarizer(embedder=LoudnessEmbedder()).thresholds == CAMPLUSPLUS_THRESHOLDS
    wrong = LoudnessEmbedder()
    wrong.thresholds = 0.5  # type: ignore[attr-defined]
    with pytest.raises(TypeError, match="'loudness' has thresholds of type float"):
        OnnxDiarizer(embedder=wrong)


def test_a_missing_model_file_is_named() -> None:
    missing = DATA / "no-such-model.onnx"
    with pytest.raises(MissingDependencyError, match=f"the speaker embedder {missing} is missing"):
        CamPlusPlus(path=missing).prepare()
