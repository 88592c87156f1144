"""From the segmentation model's frames and short stretches' speaker vectors to who speaks
in each frame of one recording. Pure NumPy and SciPy.

1. The segmentation model says, per 17 ms frame of each 10 s window, which of up to three
   *local* speakers talk. Averaged over the windows that see a frame, the rounded number of
   talkers is that frame's count (``frame_count``); where it is 0 nobody speaks.
2. The speech is cut into short stretches (``spans``: 1.5 s every 0.75 s), each embedded
   (``heard.diarize.embedders``) from its frames with one talker.
3. The stretches' vectors are clustered (``cluster``): agglomeratively, joining the two
   groups most alike on average while that average is over ``Thresholds.same_speaker`` (no
   cap on the count); stray clusters of a few stretches go to their nearest unless they are
   unlike every other; clusters whose centroids are alike enough to be one person are
   joined. With ``auto`` that is the count, never fewer than the most local speakers one
   window heard talking for half a second or more each; with a number given, the clusters are
   then joined or split to exactly that many (the closest joined, or the stretch least like
   its cluster split off, one at a time).
4. Each frame goes to the speaker of the stretch centred nearest it; where the count says
   two talk at once, the second is the speaker whose local speakers (mapped to speakers by
   the frames they talk alone in) are most active there (``frame_speakers``).
5. A second look (``OnnxDiarizer``, issue 72): a 1.5 s stretch across a quick exchange holds
   both voices, and two similar voices trading short turns then cluster as one person. The
   stretches are cut again where a window hears one local speaker give way to another
   (``speaker_changes``) and clustered; that answer is kept when it counts the same people
   and the windows' local speakers disagree with it less (``window_disagreement``).
6. A speaker's pause of up to half a second with nobody else talking is part of the turn
   (``bridge_pauses``).

Short stretches rather than the segmentation's own local speakers carry the identity: on
far-field meetings the segmentation model often hears two similar voices in one window as
one local speaker (bench/diarize.py's real recordings), which no clustering can undo.
The clustering was set on bench/diarize.py's tuning set only (issue 55's second round:
13 AMI excerpts, Picovoice's three-in-a-row clip, an AMI minute, a radio phone-in, German
prompts, conversations spliced from thirty LibriSpeech readers); its test set
(``tests/data/diarization/test``), scored once afterwards, judges it. The first round's
spectral clustering (eigengap of a pruned affinity graph) counted 16 of those 33 recordings
right and scored DER 12.7% pooled; average linkage and brief speakers kept, 22 and 11.4%:
it had merged people whose voices its k-means split across clusters of one person.

The two cosines the clustering decides by depend on the embedder's vector space, so they
are the embedder's (``Thresholds``; ``SpeakerEmbedder.thresholds``); CAM++'s are the default.
The counts and shares here do not depend on it.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass
from itertools import pairwise

import numpy as np
import numpy.typing as npt

__all__ = [
    "CAMPLUSPLUS_THRESHOLDS",
    "Thresholds",
    "bridge_pauses",
    "cluster",
    "count_speakers",
    "frame_count",
    "frame_speakers",
    "local_speakers",
    "spans",
    "speaker_changes",
    "window_disagreement",
]

STRAY = 3
STRAY_SHARE = 0.1
FEW = 12
"""A small cluster is a stray (a laugh, a cough, a cross-talk stretch), not a person: one of
at most 3 stretches that also holds at most 10% of them (rounded down), and always one of a
single stretch, or of two where there are ``FEW`` or more (average linkage leaves a long
far-field talker in several such pieces). A stray goes to the nearest other cluster, while
more clusters are left than ``auto``'s bound or the number given, unless it is unlike every
other (its centroid under ``Thresholds.same_speaker`` to each) and holds two or more
stretches, or the recording has fewer than ``FEW``: a person heard briefly, whom issue 55's
recordings lost (a reader of two stretches in a conversation of six). One stretch among
many is never enough: in the tuning set as many single stretches of nobody new (cross-talk,
a cough) were that unlike the rest as of a person who spoke once."""
MAX_CLUSTERED = 1500
"""Stretches clustered at most (evenly picked, the rest go to the nearest centroid), which
bounds the linkage's n x n distances on long recordings (an hour has about 4,800)."""


@dataclass(frozen=True, slots=True)
class Thresholds:
    """The cosines of one embedder's vectors that the clustering decides by."""

    same_speaker: float
    """Groups of stretches more alike than this on average (average linkage) are one
    person's; a small cluster less alike than this to every other is a person of its own
    (``STRAY``)."""
    one_person: float
    """Clusters whose centroids are more alike than this are one person (never joined below
    the segmentation's bound; with a number given, split again afterwards if too few)."""


CAMPLUSPLUS_THRESHOLDS = Thresholds(same_speaker=0.55, one_person=0.7)
"""CAM++'s, measured on 1.5 s stretches. ``same_speaker``: set on bench/diarize.py's tuning
set of issue 55's second round (auto, pooled: 0.5 scored DER 11.6% and 21 of 33 counts
right; 0.55 11.4-11.5% and 21-22, by the rule for strays, 11.4% and 22 in the final run;
0.6 12.5% and 18; 0.65 14.0% and 17); of pairs of stretches of one speaker in the same real
recording (13 AMI excerpts and a call) about 9% fall below 0.5, of two speakers' 1% above.
``one_person``: in the tuning set two people's clusters were at most 0.65 alike, one
person's split clusters 0.74-0.87 (0.75 scored the same; 0.8 and senko's 0.875 kept split
people apart)."""


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


def speaker_changes(
    activity: npt.NDArray[np.float32], offsets: npt.NDArray[np.int64], frames: int
) -> npt.NDArray[np.bool_]:
    """(frames,) True where the window centred nearest a frame hears a different one of its
    local speakers talk alone than the last one it heard alone before it."""
    changes = np.zeros(frames, dtype=bool)
    if activity.shape[0] == 0 or frames == 0:
        return changes
    span = activity.shape[1]
    centres = offsets + span // 2
    bounds = np.concatenate([[0], (centres[1:] + centres[:-1]) // 2, [frames]])
    for w in range(activity.shape[0]):
        lo, hi = int(max(bounds[w], offsets[w] + 1)), int(min(bounds[w + 1], offsets[w] + span))
        if hi <= lo:
            continue
        act = activity[w]
        alone = act.sum(axis=1) == 1
        label = np.where(alone, np.argmax(act, axis=1), -1)
        seen = np.where(label >= 0, np.arange(span), -1)
        np.maximum.accumulate(seen, out=seen)
        filled = np.where(seen >= 0, label[np.maximum(seen, 0)], -1)  # the last heard alone
        change = np.zeros(span, dtype=bool)
        change[1:] = (filled[1:] != filled[:-1]) & (filled[:-1] >= 0) & (label[1:] >= 0)
        changes[lo:hi] = change[lo - int(offsets[w]) : hi - int(offsets[w])]
    return changes


def spans(
    count: npt.NDArray[np.int64],
    length: int,
    step: int,
    cuts: npt.NDArray[np.bool_] | None = None,
) -> npt.NDArray[np.int64]:
    """(n, 2) [start, end) frames of stretches of speech: each run of frames with a talker
    (cut also where ``cuts`` is True) cut into ``length`` frames every ``step`` (the last one
    ending at the run's end; a shorter run is one stretch)."""
    talking = np.concatenate([[0], (count > 0).astype(np.int8), [0]])
    edges = np.flatnonzero(np.diff(talking))
    runs = list(zip(edges[::2].tolist(), edges[1::2].tolist(), strict=True))
    if cuts is not None:
        at = np.flatnonzero(cuts & (count > 0)).tolist()
        pieces = []
        for a, b in runs:
            bounds = [a, *at[bisect_left(at, a + 1) : bisect_left(at, b)], b]
            pieces += list(pairwise(bounds))
        runs = pieces
    out: list[tuple[int, int]] = []
    for a, b in runs:
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
    tree = linkage(v, method="average", metric="cosine")
    labels = fcluster(tree, t=1 - thresholds.same_speaker, criterion="distance")
    labels = _renumber(labels.astype(np.int64) - 1)
    floor = at_least if speakers is None else speakers
    labels = _absorb_strays(v, labels, floor, thresholds.same_speaker)
    labels = _join_alike(v, labels, min(floor, at_least), thresholds.one_person)
    wanted = speakers if speakers is not None else max(at_least, int(np.max(labels)) + 1)
    return _renumber(_to_count(v, labels, min(wanted, n)))


def _absorb_strays(
    v: npt.NDArray[np.float64], labels: npt.NDArray[np.int64], floor: int, apart: float
) -> npt.NDArray[np.int64]:
    """Stray clusters (``STRAY``) given to the nearest cluster that is not one, the smallest
    first, while more than ``floor`` clusters are left; one whose nearest is less alike than
    ``apart`` stays a person if it holds two stretches or more, or there are under ``FEW``."""
    sizes = np.bincount(labels)
    most = min(STRAY, int(STRAY_SHARE * len(labels)))
    stray = sizes <= max(2 if len(labels) >= FEW else 1, most)
    if stray.all():
        return labels
    c = _centroids(v, labels)
    kept = np.flatnonzero(~stray)
    out = labels.copy()
    for k in np.argsort(sizes, kind="stable")[: max(0, len(sizes) - floor)]:
        if not stray[k]:
            continue
        nearest = kept[np.argmax(c[kept] @ c[k])]
        if (sizes[k] >= 2 or len(labels) < FEW) and float(c[nearest] @ c[k]) < apart:
            continue  # a person heard briefly
        out[labels == k] = nearest
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


def window_disagreement(
    activity: npt.NDArray[np.float32],
    offsets: npt.NDArray[np.int64],
    active: npt.NDArray[np.bool_],
    heard_for: int = 30,
) -> float:
    """How much who talks in each frame (``active``) goes against the segmentation's windows,
    which tell their local speakers apart well even where speaker vectors do not (similar
    voices, telephone audio): of the frames where a window hears one local speaker alone (one
    heard alone for ``heard_for`` frames or more), the share not given to that local
    speaker's usual speaker in the window, or given to the same speaker as another local
    speaker's (the fewer of the two). 0 when every window agrees."""
    frames = active.shape[0]
    first = np.where(active.any(axis=1), np.argmax(active, axis=1), -1)
    against = total = 0
    for w in range(activity.shape[0]):
        lo = int(offsets[w])
        act = activity[w][: max(0, min(activity.shape[1], frames - lo))]
        alone = act * (act.sum(axis=1, keepdims=True) == 1)
        mine = first[lo : lo + len(act)]
        usual: dict[int, int] = {}  # speaker: frames of the local speaker it is usual for
        for j in range(act.shape[1]):
            got = mine[(alone[:, j] > 0) & (mine >= 0)]
            if len(got) < heard_for:
                continue
            counts = np.bincount(got)
            k = int(np.argmax(counts))
            total += len(got)
            against += len(got) - int(counts[k])
            if k in usual:  # two local speakers, one speaker
                against += min(int(counts[k]), usual[k])
            usual[k] = max(int(counts[k]), usual.get(k, 0))
    return against / max(total, 1)


def bridge_pauses(active: npt.NDArray[np.bool_], most: int) -> npt.NDArray[np.bool_]:
    """``active`` (frames, speakers) with each speaker's pauses of at most ``most`` frames
    filled where nobody else talks in them."""
    out = active.copy()
    anyone: npt.NDArray[np.bool_] = np.asarray(active.any(axis=1))
    for k in range(active.shape[1]):
        col = np.concatenate([[False], active[:, k], [False]])
        edges = np.flatnonzero(np.diff(col.astype(np.int8)))
        for b, a in zip(edges[1:-1:2], edges[2::2], strict=True):  # a pause: frames [b, a)
            if a - b <= most and not anyone[b:a].any():
                out[b:a, k] = True
    return out
