"""From local speakers to global ones, on embeddings made here (``heard.diarize.clusters``)."""

from __future__ import annotations

import numpy as np
import pytest

from heard.diarize.clusters import Local, assign, centred, cluster, count_speakers, reconstruct


def voices(rng: np.random.Generator, count: int, spread: float, dim: int = 64) -> np.ndarray:
    """``count`` voices sharing a common component (as one recording's all do)."""
    common = rng.normal(size=dim)
    return np.stack([common * 2 + rng.normal(size=dim) * spread for _ in range(count)])


def local_of(rng: np.random.Generator, centres: np.ndarray, windows: int) -> Local:
    """Windows where one voice (of ``centres``) talks alone as local speaker 0."""
    frames = 20
    activity = np.zeros((windows, frames, 3), dtype=np.float32)
    activity[:, :, 0] = 1
    embeddings = np.zeros((windows, 3, centres.shape[1]), dtype=np.float32)
    for w in range(windows):
        v = centres[w % len(centres)] + rng.normal(size=centres.shape[1]) * 0.3
        embeddings[w, 0] = v / np.linalg.norm(v)
    clean = np.zeros((windows, 3), dtype=bool)
    clean[:, 0] = True
    return Local(activity, embeddings, clean)


@pytest.mark.parametrize("count", [1, 2, 3, 4])
def test_auto_counts_voices_that_share_a_recording(count: int) -> None:
    rng = np.random.default_rng(count)
    local = centred(local_of(rng, voices(rng, count, spread=1.0), windows=60))
    assert len(cluster(local, None)) == count
    vectors = local.embeddings[local.clean]
    assert count_speakers(vectors) == count or count == 1


def test_a_number_given_is_the_number_found() -> None:
    rng = np.random.default_rng(7)
    local = centred(local_of(rng, voices(rng, 3, spread=1.0), windows=60))
    for n in (1, 2, 3):
        labels, found = assign(local, cluster(local, n), n)
        assert found == n
        assert set(labels[:, 0]) == set(range(n))


def test_two_talkers_in_one_window_prove_a_second_speaker_when_little_was_clustered() -> None:
    rng = np.random.default_rng(3)
    a, b = voices(rng, 2, spread=1.0)
    activity = np.zeros((2, 20, 3), dtype=np.float32)
    activity[0, :, 0] = 1  # window 0: voice a alone
    activity[1, :10, 0] = activity[1, 8:, 1] = 1  # window 1: a, then b over it
    embeddings = np.zeros((2, 3, len(a)), dtype=np.float32)
    embeddings[0, 0] = embeddings[1, 0] = a / np.linalg.norm(a)
    embeddings[1, 1] = b / np.linalg.norm(b)
    clean = np.array([[True, False, False], [False, False, False]])
    local = Local(activity, embeddings, clean)
    labels, found = assign(local, cluster(local, None), None)
    assert found == 2
    assert labels[1, 0] != labels[1, 1]
    active = reconstruct(local, labels, np.array([0, 20]), 40, found)
    assert active[28:30].all()  # both talk where they overlap in window 1 (frames 28-29)
    assert active[30:, labels[1, 1]].all()
    assert not active[30:, labels[1, 0]].any()


def test_frames_speak_by_the_windows_mean_count_of_talkers() -> None:
    activity = np.zeros((2, 4, 3), dtype=np.float32)
    activity[0, :, 0] = 1
    activity[1, :, 0] = 1
    activity[1, :2, 1] = 1  # only the second window hears a second talker in frames 2-3
    local = Local(activity, np.zeros((2, 3, 4), dtype=np.float32), np.zeros((2, 3), dtype=bool))
    labels = np.array([[0, -1, -1], [0, 1, -1]], dtype=np.int32)
    active = reconstruct(local, labels, np.array([0, 2]), 6, 2)
    assert active[:, 0].all()
    # frames 2-3: seen by both windows, with 1 and 2 talkers: 1.5 rounds to 2, so speaker 1
    # (heard by the second window only) talks there too
    assert active[2:4, 1].all()
    assert not active[4:, 1].any()
