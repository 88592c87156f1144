"""Counting and clustering speakers (``heard.diarize.clusters``): on CAM++ vectors taken from
real recordings (``tests/data/diarization/vectors.npz``, made by
``tools/make_diarization_vectors.py``) and on vectors made here."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from heard.diarize.clusters import (
    CAMPLUSPLUS_THRESHOLDS,
    Thresholds,
    cluster,
    count_speakers,
    frame_count,
    frame_speakers,
    local_speakers,
    spans,
)

DATA = Path(__file__).resolve().parents[1] / "data" / "diarization"


def real() -> dict[str, dict[str, np.ndarray]]:
    out: dict[str, dict[str, np.ndarray]] = {}
    with np.load(DATA / "vectors.npz") as data:
        for key in data.files:
            name, field = key.split("/")
            out.setdefault(name, {})[field] = data[key]
    return out


REAL = real()


def found(r: dict[str, np.ndarray]) -> int:
    return int(cluster(r["vectors"], None, int(r["at_least"])).max(initial=-1)) + 1


def heard(r: dict[str, np.ndarray], stretches: int = 3) -> int:
    """The people who hold ``stretches`` or more stretches alone (2.25 s of speech)."""
    mine = r["speaker"][r["speaker"] >= 0]
    return int((np.bincount(mine, minlength=1) >= stretches).sum())


def test_auto_counts_the_people_of_most_real_recordings() -> None:
    """The tuning set of bench/diarize.py: 13 AMI excerpts (people who say one word in 30 s
    among them), three people in a row, eight conversations of 2-9 LibriSpeech readers."""
    near = {name: abs(found(r) - int(r["people"])) <= 1 for name, r in REAL.items()}
    assert sum(near.values()) / len(near) >= 0.85, near
    right = {name: found(r) == int(r["people"]) for name, r in REAL.items()}
    assert sum(right.values()) / len(right) >= 0.55, right  # 13 of 22 (spectral: 10)
    assert found(REAL["picovoice_falcon_3spk"]) == 3


def test_auto_counts_the_readers_of_spliced_conversations_brief_ones_too() -> None:
    """In the spliced conversations of 2-9 real readers ``auto`` never counts more readers
    than there are and counts 7 of 8 conversations exactly, a reader heard in only two
    stretches among six people included (the spectral clustering of issue 55's first round
    counted 5 of 8: a reader of two stretches went to another's cluster)."""
    spliced = {name: r for name, r in REAL.items() if name.startswith("spliced")}
    assert max(int(r["people"]) for r in spliced.values()) == 9
    counted = {name: (found(r), int(r["people"])) for name, r in spliced.items()}
    assert all(f <= people for f, people in counted.values()), counted
    assert sum(f == people for f, people in counted.values()) >= 7, counted
    assert counted["spliced03-6spk"] == (6, 6)  # libri2414 talks in two stretches


def test_nine_real_people_are_counted_nine() -> None:
    """Eight LibriSpeech readers of one spliced conversation and a person of an AMI meeting,
    by their own stretches' CAM++ vectors: nine people (issue 55: ``auto`` never counted
    more than 8, and a TV news clip's nine people became one)."""
    readers = REAL["spliced04-9spk"]
    parts = [readers["vectors"][readers["speaker"] == k] for k in range(9)]
    parts = [p for p in parts if len(p) >= 3]
    meeting = REAL["ami_trn03"]
    parts.append(meeting["vectors"][meeting["speaker"] == 1])
    assert len(parts) == 9
    assert all(len(p) >= 6 for p in parts)
    vectors = np.vstack(parts)
    truth = np.repeat(np.arange(9), [len(p) for p in parts])
    labels = cluster(vectors, None)
    assert int(labels.max()) + 1 == 9
    # and each person is one cluster: every cluster is most of one person's stretches
    for k in range(9):
        assert np.bincount(truth[labels == k]).max() >= 0.9 * (labels == k).sum()


@pytest.mark.parametrize("people", [21, 25])
def test_more_than_twenty_people_are_all_counted(people: int) -> None:
    """Vectors made here: people whose stretches are like no one else's are each counted,
    however many (issue 55's first round looked for an eigengap among 20 clusters, which
    counted 21 people as one until it looked further)."""
    rng = np.random.default_rng(people)
    centres = rng.normal(size=(people, 192))
    vectors = np.vstack([c + 0.6 * np.linalg.norm(c) / np.sqrt(192) * rng.normal(size=(15, 192))
                         for c in centres])  # fmt: skip
    assert count_speakers(vectors) == people


def test_auto_never_finds_two_people_where_one_talks_for_long() -> None:
    """The stretches of each real speaker who talks for 10 s or more, alone: one person."""
    for name, r in REAL.items():
        for who in np.unique(r["speaker"][r["speaker"] >= 0]):
            mine = r["vectors"][r["speaker"] == who]
            if len(mine) >= 13:  # 10 s of 0.75 s steps
                assert count_speakers(mine) == 1, (name, who)


def test_clusters_of_a_number_given_are_the_people() -> None:
    """With the number of people given, the stretches one person holds land with the others
    of that person: pooled purity over every real recording."""
    agree = total = 0
    for r in REAL.values():
        labels = cluster(r["vectors"], int(r["people"]))
        held = r["speaker"] >= 0
        for k in np.unique(labels[held]):
            truth = r["speaker"][held][labels[held] == k]
            agree += int(np.bincount(truth).max())
            total += len(truth)
    assert agree / total >= 0.9


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 8])
@pytest.mark.parametrize("case", ["one voice", "few stretches", "real", "identical"])
def test_a_number_given_is_the_number_found(n: int, case: str) -> None:
    rng = np.random.default_rng(n)
    if case == "one voice":
        vectors = rng.normal(size=192) + rng.normal(size=(40, 192)) * 0.3
    elif case == "few stretches":  # what the old diarizer refused to split (under 10)
        vectors = rng.normal(size=(max(n, 3), 192))
    elif case == "identical":
        vectors = np.tile(rng.normal(size=192), (12, 1))
    else:
        vectors = REAL["ami-tst01"]["vectors"].astype(np.float64)
    labels = cluster(vectors, n)
    want = min(n, len(vectors)) if case != "identical" else 1
    assert sorted(set(labels.tolist())) == list(range(want if case != "identical" else
                                                      len(set(labels.tolist()))))  # fmt: skip
    if case != "identical":
        assert labels.max() + 1 == want


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 30), st.integers(1, 6), st.one_of(st.none(), st.integers(1, 6)))
def test_labels_are_numbered_without_gaps(count: int, voices: int, asked: int | None) -> None:
    rng = np.random.default_rng(count * 31 + voices)
    centres = rng.normal(size=(voices, 16))
    vectors = centres[rng.integers(voices, size=count)] + rng.normal(size=(count, 16)) * 0.2
    labels = cluster(vectors, asked)
    assert len(labels) == count
    assert set(labels.tolist()) == set(range(int(labels.max(initial=-1)) + 1))
    if asked is not None and count:
        assert labels.max() + 1 == min(asked, count)


def test_auto_takes_at_least_the_people_one_window_heard() -> None:
    vectors = np.tile(np.random.default_rng(0).normal(size=192), (20, 1))
    vectors += np.random.default_rng(1).normal(size=vectors.shape) * 0.01
    assert cluster(vectors, None).max() + 1 == 1
    assert cluster(vectors, None, at_least=2).max() + 1 == 2
    activity = np.zeros((2, 100, 3), dtype=np.float32)
    activity[0, :60, 0] = activity[0, 40:, 1] = 1  # two talk for 60 frames each
    activity[1, :10, 2] = 1
    assert local_speakers(activity, 30) == 2
    assert local_speakers(activity, 61) == 0


def test_spans_cover_each_run_of_speech() -> None:
    count = np.array([0] * 5 + [1] * 20 + [0] * 3 + [2] * 4 + [0] * 2)
    assert spans(count, 8, 4).tolist() == [[5, 13], [9, 17], [13, 21], [17, 25], [28, 32]]
    assert spans(np.zeros(10, dtype=np.int64), 8, 4).shape == (0, 2)


def test_frames_speak_by_the_windows_mean_count_of_talkers() -> None:
    activity = np.zeros((2, 4, 3), dtype=np.float32)
    activity[0, :, 0] = 1
    activity[0, 2:, 1] = 1  # window 0: two talk in its frames 2-3
    activity[1, :, 0] = 1  # window 1 (frames 2-5): one talks
    count = frame_count(activity, np.array([0, 2]), 6)
    assert count.tolist() == [1, 1, 2, 2, 1, 1]  # 1.5 rounds to 2


def test_every_cluster_keeps_frames_and_an_overlap_gets_its_second_speaker() -> None:
    # frames 0-19 speaker A alone, 20-29 both, 30-49 B alone; one window sees it all
    activity = np.zeros((1, 50, 3), dtype=np.float32)
    activity[0, :30, 0] = 1
    activity[0, 20:, 1] = 1
    count = frame_count(activity, np.array([0]), 50)
    stretches = np.array([[0, 10], [10, 20], [20, 30], [30, 40], [40, 50], [26, 28]])
    labels = np.array([0, 0, 0, 1, 1, 2])  # a third cluster of one short stretch
    active = frame_speakers(activity, np.array([0]), count, stretches, labels, 3)
    assert active[:20, 0].all()
    assert not active[:20, 1:].any()
    assert active[32:, 1].all()
    assert not active[32:, 0].any()
    assert active[:, 2].any()  # the one-stretch cluster still speaks
    assert (active[20:30].sum(axis=1) == 2).all()  # the overlap: two talkers


def test_vectors_with_nothing_in_them_take_a_neighbours_label() -> None:
    """A run of one frame of speech gives a stretch too short to embed (a CAM++ vector of
    zeros): the linkage failed on it (seeded from a 6 s real clip)."""
    v = REAL["picovoice_falcon_3spk"]["vectors"].astype(np.float64)[:8].copy()
    v[0] = 0
    v[3] = np.nan
    labels = cluster(v, None)
    assert len(labels) == 8
    assert labels.min() >= 0
    assert cluster(v, 2).max() + 1 == 2


def test_the_stored_vectors_are_what_the_code_makes_today() -> None:
    import sys

    sys.path.insert(0, str(DATA.parents[2] / "tools"))
    sys.path.insert(0, str(DATA.parents[2] / "bench"))
    from heard.asr.audio import load_audio
    from make_diarization_vectors import stretch_vectors

    stored = REAL["picovoice_falcon_3spk"]
    stretches, vectors, at_least = stretch_vectors(
        load_audio(DATA / "falcon" / "picovoice_falcon_3spk.flac")
    )
    assert stretches.tolist() == stored["stretches"].tolist()
    assert at_least == int(stored["at_least"])
    cosine = (vectors * stored["vectors"].astype(np.float32)).sum(axis=1)
    assert cosine.min() > 0.99


def test_vectors_that_are_all_nothing_are_one_speaker() -> None:
    """Stretches whose vectors are all zero (nothing the embedder could hear) cannot be told
    apart: one speaker, not an error from the clustering."""
    for speakers in (None, 2):
        assert cluster(np.zeros((5, 192)), speakers).tolist() == [0] * 5


def two_people(stretches: int, alike: float) -> np.ndarray:
    """``stretches`` vectors of each of two people whose voices are ``alike`` (cosine)."""
    rng = np.random.default_rng(stretches)
    a, b = np.linalg.qr(rng.normal(size=(192, 2)))[0].T
    second = alike * a + np.sqrt(1 - alike**2) * b
    return np.vstack([v + 0.02 * rng.normal(size=(stretches, 192)) for v in (a, second)])


@pytest.mark.parametrize(
    ("stretches", "thresholds", "people"),
    [
        (4, CAMPLUSPLUS_THRESHOLDS, 1),  # linked while over same_speaker (0.55)
        (4, Thresholds(same_speaker=0.7, one_person=0.7), 2),
        (30, CAMPLUSPLUS_THRESHOLDS, 1),
        (30, Thresholds(same_speaker=0.65, one_person=0.7), 2),
        (30, Thresholds(same_speaker=0.65, one_person=0.5), 1),  # centroids over one_person
    ],
)
def test_the_thresholds_given_are_the_ones_the_clustering_decides_by(
    stretches: int, thresholds: Thresholds, people: int
) -> None:
    """Two people whose vectors are 0.6 alike: one person or two, as the embedder's
    thresholds say; CAM++'s when none are given."""
    vectors = two_people(stretches, 0.6)
    assert int(cluster(vectors, None, thresholds=thresholds).max()) + 1 == people
    assert count_speakers(vectors, thresholds=thresholds) == people
    if thresholds is CAMPLUSPLUS_THRESHOLDS:
        assert count_speakers(vectors) == people


def test_a_short_pause_with_nobody_else_is_bridged() -> None:
    from heard.diarize.clusters import bridge_pauses

    a = np.zeros((20, 2), dtype=bool)
    a[0:5, 0] = a[8:12, 0] = True  # a 3-frame pause: bridged
    a[15:18, 0] = True  # a 3-frame pause in which speaker 1 talks: kept
    a[13, 1] = True
    out = bridge_pauses(a, 3)
    assert out[:12, 0].all()
    assert not out[12:15, 0].any()
    assert (out[:, 1] == a[:, 1]).all()
    assert not bridge_pauses(a, 2)[5:8, 0].any()  # longer than asked: kept


def test_speaker_changes_are_where_a_window_hears_another_local_speaker() -> None:
    from heard.diarize.clusters import speaker_changes

    act = np.zeros((1, 30, 3), dtype=np.float32)
    act[0, 2:10, 0] = 1  # local speaker 0, a pause, 0 again, then 1, both, 1 alone, then 2
    act[0, 12:15, 0] = 1
    act[0, 15:20, 1] = 1
    act[0, 18:20, 0] = 1  # over local speaker 1: nobody alone there
    act[0, 24:28, 2] = 1
    changes = speaker_changes(act, np.array([0]), 30)
    assert np.flatnonzero(changes).tolist() == [15, 24]
    first = np.zeros((1, 10, 3), dtype=np.float32)
    first[0, 0, 0] = 1  # heard alone only at the window's first frame, then someone else
    first[0, 3:6, 1] = 1
    assert np.flatnonzero(speaker_changes(first, np.array([0]), 10)).tolist() == [3]


def test_window_disagreement_is_zero_when_the_speakers_follow_the_local_ones() -> None:
    from heard.diarize.clusters import window_disagreement

    act = np.zeros((1, 100, 3), dtype=np.float32)
    act[0, :50, 0] = act[0, 50:, 1] = 1
    apart = np.zeros((100, 2), dtype=bool)
    apart[:50, 0] = apart[50:, 1] = True
    assert window_disagreement(act, np.array([0]), apart) == 0.0
    one = np.zeros((100, 2), dtype=bool)
    one[:, 0] = True  # both local speakers as one person: half of the frames against it
    assert window_disagreement(act, np.array([0]), one) == 0.5
