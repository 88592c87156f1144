"""From local speakers in overlapping windows to global speakers on one timeline. Pure NumPy.

The segmentation model sees ten seconds at a time and says, per frame, which of up to three
*local* speakers talk (two at most at once). The same person is local speaker 0 in one window
and 2 in the next, so:

1. each (window, local speaker) with enough speech of its own (no one else talking) gets a
   speaker embedding;
2. those embeddings are clustered: into N speakers when the user says N, else cut at a
   distance (``AUTO_THRESHOLD``) and clusters smaller than ``MIN_CLUSTER`` merged into their
   nearest larger one;
3. in each window its local speakers are matched one-to-one to the clusters' centroids (no
   two local speakers of a window are the same person);
4. the windows are laid back on the recording's frame grid: per frame, the number of
   speakers is the windows' mean local count, rounded, and those with the most activation
   speak.

The approach is pyannote.audio's speaker-diarization pipeline as its papers describe it
(Bredin, "pyannote.audio 2.1 speaker diarization pipeline", Interspeech 2023), written here
for NumPy and SciPy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = [
    "AUTO_THRESHOLD",
    "Local",
    "assign",
    "cluster",
    "reconstruct",
]

AUTO_THRESHOLD = 0.25
"""Average-linkage cosine distance at which ``--speakers auto`` stops merging clusters. Chosen
on bench/diarize.py's tuning conversations (seed 30; 0.22-0.28 count 16-22 of 25 right, 0.5
only 11) and reported on others (BENCHMARKS.md)."""
MIN_CLUSTER = 5
"""With ``auto``, a cluster of fewer (window, speaker) embeddings is merged into its nearest
larger one: a few odd windows are not a new person."""
MAX_CLUSTERED = 2000
"""Embeddings clustered at most (evenly picked, the rest matched to the centroids), which
bounds the distance matrix on long recordings."""


@dataclass(frozen=True, slots=True)
class Local:
    """Every window's local speakers: activity and, where there was enough, embeddings."""

    activity: npt.NDArray[np.float32]
    """(windows, frames, 3) 0/1: local speaker k talks in frame f of window w."""
    embeddings: npt.NDArray[np.float32]
    """(windows, 3, dim) unit vectors; rows of zeros where none could be made."""
    clean: npt.NDArray[np.bool_]
    """(windows, 3): the embedding rests on enough solo speech to be clustered."""


def _unit(x: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    norm = np.linalg.norm(x, axis=-1, keepdims=True)
    return np.where(norm > 0, x / np.maximum(norm, 1e-12), 0).astype(np.float32)


def cluster(local: Local, speakers: int | None) -> npt.NDArray[np.float32]:
    """(clusters, dim) unit centroids of the clean embeddings: ``speakers`` of them, or as many
    as ``AUTO_THRESHOLD`` finds when None. None clean: no centroid."""
    from scipy.cluster.hierarchy import fcluster, linkage

    vectors = local.embeddings[local.clean]
    if len(vectors) == 0:
        return np.zeros((0, local.embeddings.shape[-1]), dtype=np.float32)
    if len(vectors) > MAX_CLUSTERED:
        vectors = vectors[np.linspace(0, len(vectors) - 1, MAX_CLUSTERED).astype(int)]
    if speakers == 1 or len(vectors) == 1:
        return _unit(vectors.mean(axis=0, keepdims=True))
    tree = linkage(vectors, method="average", metric="cosine")
    if speakers is not None:
        labels = fcluster(tree, t=min(speakers, len(vectors)), criterion="maxclust")
    else:
        labels = fcluster(tree, t=AUTO_THRESHOLD, criterion="distance")
        labels = _merge_small(vectors, labels)
    centroids = np.stack([vectors[labels == k].mean(axis=0) for k in np.unique(labels)])
    return _unit(centroids)


def _merge_small(
    vectors: npt.NDArray[np.float32], labels: npt.NDArray[np.int32]
) -> npt.NDArray[np.int32]:
    ids, sizes = np.unique(labels, return_counts=True)
    large = ids[sizes >= MIN_CLUSTER]
    if len(large) == 0 or len(large) == len(ids):
        return labels
    centroids = _unit(np.stack([vectors[labels == k].mean(axis=0) for k in large]))
    out = labels.copy()
    small = ~np.isin(labels, large)
    out[small] = large[np.argmax(vectors[small] @ centroids.T, axis=1)]
    return out


def assign(
    local: Local, centroids: npt.NDArray[np.float32], speakers: int | None = None
) -> tuple[npt.NDArray[np.int32], int]:
    """(windows, 3) the global speaker of each local one (-1 for none), and how many global
    speakers there are: each window's embedded, active local speakers are matched one to one
    to the most similar centroids. A window with more talkers than centroids proves another
    speaker: the one left over becomes a new centroid, while ``speakers`` allows one (any
    number with ``auto``); else it goes to its nearest."""
    from scipy.optimize import linear_sum_assignment

    windows = local.activity.shape[0]
    out = np.full((windows, 3), -1, dtype=np.int32)
    found = [c for c in centroids]
    active = local.activity.sum(axis=1) > 0
    embedded = np.linalg.norm(local.embeddings, axis=-1) > 0
    for w in range(windows):
        ks = np.flatnonzero(active[w] & embedded[w])
        if len(ks) == 0:
            continue
        while len(ks) > len(found) and (speakers is None or len(found) < speakers):
            similarity = local.embeddings[w, ks] @ np.array(found).T if found else None
            newest = ks[0] if similarity is None else ks[int(np.argmin(similarity.max(axis=1)))]
            found.append(local.embeddings[w, newest])
        similarity = local.embeddings[w, ks] @ np.array(found).T
        rows, cols = linear_sum_assignment(-similarity)
        out[w, ks[rows]] = cols
        rest = np.setdiff1d(np.arange(len(ks)), rows)
        if len(rest):
            out[w, ks[rest]] = np.argmax(similarity[rest], axis=1)
    return out, len(found)


def reconstruct(
    local: Local,
    labels: npt.NDArray[np.int32],
    offsets: npt.NDArray[np.int64],
    frames: int,
    speakers: int,
) -> npt.NDArray[np.bool_]:
    """(frames, speakers) who talks in each frame of the recording. Window w's frame f is
    the recording's frame ``offsets[w] + f``."""
    if speakers == 0:
        return np.zeros((frames, 0), dtype=bool)
    span = local.activity.shape[1]
    activation = np.zeros((frames + span, speakers), dtype=np.float32)
    count = np.zeros(frames + span, dtype=np.float32)
    seen = np.zeros(frames + span, dtype=np.float32)
    for w in range(local.activity.shape[0]):
        lo = int(offsets[w])
        act = local.activity[w]
        count[lo : lo + span] += act.sum(axis=1)
        seen[lo : lo + span] += 1
        for k in range(3):
            s = labels[w, k]
            if s >= 0:
                activation[lo : lo + span, s] += act[:, k]
    activation, count, seen = activation[:frames], count[:frames], seen[:frames]
    talkers = np.rint(count / np.maximum(seen, 1)).astype(int)
    talkers = np.minimum(talkers, speakers)
    order = np.argsort(-activation, axis=1, kind="stable")
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(speakers)[None, :].repeat(frames, 0), axis=1)
    active: npt.NDArray[np.bool_] = (ranks < talkers[:, None]) & (activation > 0)
    return active
