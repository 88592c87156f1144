"""Make the spliced multi-speaker conversations in this folder (a record of how they were made).

Each conversation is real recorded utterances of 3 to 9 people (LibriSpeech, VCTK, AISHELL-1
and CSS10 clips found in public GitHub repositories; README.md lists every source, commit and
licence), cut at pauses, put one after another in a random order (fixed seeds) with 0.2-0.8 s
of digital silence between turns and no overlap, and written as ``<name>.flac`` (16 kHz mono
16-bit) with ``<name>.rttm`` beside it. The RTTM turns are the voiced spans of the spliced
pieces, found on each source clip by an energy threshold, so pauses inside a piece are not
counted as speech.

The source clips are not kept in this repository. To run this again, copy each file of
``CLIPS`` (path relative to the source folder) out of the repository and commit named in
README.md, e.g. ``git -C <repo> show <commit>:samples/1320_00000.mp3 > rtvc/1320_00000.mp3``,
one folder per repository: ``rtvc/`` (CorentinJ/Real-Time-Voice-Cloning ``samples/``),
``librosa/`` (librosa/data ``audio/``), ``wlk/`` (QuentinFuxa/WhisperLiveKit
``tests/fixtures/sortformer_2spk/``), ``wenet/`` (wenet-e2e/wenet ``test/resources/``),
``voskjs/`` (solyarisoftware/voskJs ``audio/``), ``autovc/`` (auspicious3000/autovc
``wavs/p2xx/``), ``s3tok/`` (xingchensong/S3Tokenizer ``s3tokenizer/assets/``) and ``css10/``
(Kyubyong/css10 ``MOS/ref/<lang>/<file>``, saved as ``<lang>_<file>``), then::

    python make.py [SOURCE_FOLDER]        # default /tmp/spliced_src

Needs numpy, scipy and soundfile (libsndfile >= 1.1 for the MP3 clips). Output is
deterministic for the same inputs.

How the audio is treated, per source clip:

* mono, DC removed, resampled to 16 kHz (``scipy.signal.resample_poly``) where it was not;
* frame levels: RMS of 25 ms frames every 10 ms, in dBFS. A frame is speech when it is above
  both ``peak - 35 dB`` (peak: the clip's loudest frame) and ``floor + 8 dB`` (floor: the 3rd
  percentile of the clip's frame levels; this only matters for the few noisy clips, where
  35 dB below the peak is still in the noise). Speech runs are joined across gaps shorter than
  0.3 s; runs shorter than 0.1 s are dropped. These runs are the clip's voiced spans;
* loudness: the clip is scaled so that the RMS over its voiced frames is -23 dBFS, unless that
  would push its peak over -0.5 dBFS, in which case the peak is set to -0.5 dBFS instead;
* pieces: a clip whose voiced extent is longer than the person's ``max_len`` is cut at
  pauses (gaps between voiced spans, so >= 0.3 s) into pieces of at least
  ``min_len`` and at most ``max_len`` seconds where the pauses allow it (balanced halves,
  recursively). A piece runs from its first voiced span's start to its last one's end, plus
  40 ms of the clip's own signal on each side (10 ms fades), so leading and trailing silence
  is trimmed. People marked ``brief`` are cut into 0.6-3 s pieces and only the first one or
  two are used (an interjection-sized turn); for them a pause may be as short as 0.1 s
  (their clips are short, often without a 0.3 s pause), and the piece's voiced spans are then
  joined across gaps < 0.3 s as everywhere else.

Then, per conversation: the people's pieces (each person's in their original order) are
ordered at random (``random.Random(seed)``), never the same person twice in a row and no brief
person in the first two turns; 0.5 s of silence opens and closes the file, and the distance
from one piece's last voiced sample to the next piece's first is drawn from U(0.2, 0.8) s.
"""

from __future__ import annotations

import random
import sys
from dataclasses import dataclass
from math import gcd
from pathlib import Path

import numpy as np
import soundfile as sf
from scipy.signal import resample_poly

SR = 16000
WIN, HOP = 400, 160  # 25 ms frames every 10 ms
BELOW_PEAK_DB = 35.0
ABOVE_FLOOR_DB = 8.0
JOIN_GAP_S = 0.3
BRIEF_JOIN_S = 0.1
MIN_RUN_S = 0.1
TARGET_RMS_DBFS = -23.0
PEAK_LIMIT_DBFS = -0.5
PAD_S = 0.04
FADE_S = 0.01
EDGE_S = 0.5
GAP_S = (0.2, 0.8)

# clip key -> (speaker id used in the RTTM, path below the source folder)
CLIPS: dict[str, tuple[str, str]] = {
    # LibriSpeech readers (CC BY 4.0)
    "ls1320": ("ls1320", "rtvc/1320_00000.mp3"),
    "ls3575": ("ls3575", "rtvc/3575_00000.mp3"),
    "ls6829": ("ls6829", "rtvc/6829_00000.mp3"),
    "ls8230": ("ls8230", "rtvc/8230_00000.mp3"),
    "ls198": ("ls198", "librosa/198-209-0000.hq.ogg"),
    "ls3436": ("ls3436", "librosa/3436-172162-0000.hq.ogg"),
    "ls5703": ("ls5703", "librosa/5703-47212-0000.hq.ogg"),
    "ls6930": ("ls6930", "wlk/6930-75918-0000.flac"),
    "ls7902": ("ls7902", "wlk/7902-96591-0000.flac"),
    "ls1995": ("ls1995", "wenet/librispeech-1995-1837-0001.wav"),
    "ls2830": ("ls2830", "voskjs/2830-3980-0043.wav"),
    "ls4507": ("ls4507", "voskjs/4507-16021-0012.wav"),
    "ls8455": ("ls8455", "voskjs/8455-210777-0068.wav"),
    # VCTK speakers (CC BY 4.0)
    "p240": ("vctk_p240", "rtvc/p240_00000.mp3"),
    "p260": ("vctk_p260", "rtvc/p260_00000.mp3"),
    **{
        f"p{s}_{u:03d}": (f"vctk_p{s}", f"autovc/p{s}_{u:03d}.wav")
        for s in (225, 226, 227, 228)
        for u in (3, 5, 8, 11, 16, 19, 20, 21, 22, 23, 24)
        if u != (5 if s == 225 else 20)
    },  # autovc holds p225_020 but not p225_005, and
    # p226-p228 _005 but not _020
    # AISHELL-1 speakers (Apache 2.0)
    "S0724": ("aishell_S0724", "wenet/aishell-BAC009S0724W0121.wav"),
    "S0764_W0121": ("aishell_S0764", "s3tok/BAC009S0764W0121.wav"),
    "S0764_W0122": ("aishell_S0764", "s3tok/BAC009S0764W0122.wav"),
    # CSS10 LibriVox readers, one per language (public domain recordings; CSS10 Apache 2.0)
    "css10_de": ("css10_de", "css10/de_achtgesichterambiwasse_0044.wav"),
    "css10_el": ("css10_el", "css10/el_Paramythi_horis_onoma_0027.wav"),
    "css10_es": ("css10_es", "css10/es_19demarzo_0008.wav"),
    "css10_fi": ("css10_fi", "css10/fi_ensimmaisetnovellit_0040.wav"),
    "css10_fr": ("css10_fr", "css10/fr_lesmis_0153.wav"),
    "css10_hu": ("css10_hu", "css10/hu_egri_csillagok_0032.wav"),
    "css10_it": ("css10_it", "css10/it_karolystria_0550.wav"),
    "css10_ja": ("css10_ja", "css10/jp_meian_0051.wav"),
    "css10_nl": ("css10_nl", "css10/nl_20000_mijlen_0029.wav"),
    "css10_ru": ("css10_ru", "css10/ru_early_short_stories_0021.wav"),
    "css10_zh": ("css10_zh", "css10/zh_call_to_arms_0023.wav"),
}


@dataclass
class Part:
    """One person in a conversation: which clips, how they are cut, brief or not."""

    clips: tuple[str, ...]
    max_len: float = 8.0
    min_len: float = 2.0
    brief: int = 0  # > 0: an interjection-sized speaker, this many 0.6-3 s pieces


# name -> (seed, parts). No clip is used twice across conversations.
CONVERSATIONS: dict[str, tuple[int, list[Part]]] = {
    "spliced_3p_en_de": (
        103,
        [
            Part(("ls3436",), max_len=6.0),
            Part(("p225_003", "p225_011", "p225_016", "p225_020")),
            Part(("css10_de",), max_len=4.5),
        ],
    ),
    "spliced_4p_en_zh": (
        104,
        [
            Part(("ls5703",), max_len=6.0),
            Part(("p226_003", "p226_005", "p226_008")),
            Part(("S0764_W0121", "S0764_W0122")),
            Part(("ls2830",), brief=1),
        ],
    ),
    "spliced_5p_en_fr": (
        105,
        [
            Part(("ls198",), max_len=6.0),
            Part(("p227_003", "p227_005")),
            Part(("css10_fr",), max_len=4.5),
            Part(("ls1995",), max_len=5.0),
            Part(("ls7902",), brief=1),
        ],
    ),
    "spliced_6p_en_es_ru": (
        106,
        [
            Part(("p228_003", "p228_005", "p228_008")),
            Part(("css10_es",), max_len=4.5),
            Part(("css10_ru",), max_len=4.5),
            Part(("ls1320",), max_len=3.5, min_len=1.5),
            Part(("ls3575",), max_len=3.5, min_len=1.5),
            Part(("ls4507",), brief=2),
        ],
    ),
    "spliced_7p_en_nl_hu_fi": (
        107,
        [
            Part(("css10_nl",), max_len=4.5),
            Part(("css10_hu",), max_len=4.5),
            Part(("css10_fi",), max_len=3.5, min_len=1.5),
            Part(("p240",), max_len=3.5, min_len=1.5),
            Part(("ls6829",), max_len=3.5, min_len=1.5),
            Part(("p225_019", "p225_021")),
            Part(("ls8455",), brief=1),
        ],
    ),
    "spliced_9p_multi": (
        109,
        [
            Part(("css10_el",), max_len=3.5, min_len=1.5),
            Part(("css10_it",), max_len=3.5, min_len=1.5),
            Part(("css10_ja",), max_len=3.5, min_len=1.5),
            Part(("css10_zh",), max_len=3.5, min_len=1.5),
            Part(("p260",), max_len=3.5, min_len=1.5),
            Part(("ls8230",), max_len=3.5, min_len=1.5),
            Part(("p226_011",)),
            Part(("ls6930",)),  # one 3.5 s utterance without a pause to cut it at
            Part(("S0724",), brief=2),
        ],
    ),
}


@dataclass
class Clip:
    speaker: str
    audio: np.ndarray  # float64 at SR, loudness-normalised
    spans: list[tuple[int, int]]  # voiced spans, samples
    fine: list[tuple[int, int]]  # the same, joined only across gaps < BRIEF_JOIN_S


@dataclass
class Piece:
    speaker: str
    audio: np.ndarray
    spans: list[tuple[int, int]]  # voiced spans relative to the piece's start
    lead: int  # samples before the first voiced span
    tail: int  # samples after the last voiced span


def load(path: Path) -> np.ndarray:
    x, sr = sf.read(str(path), dtype="float64", always_2d=True)
    x = x.mean(axis=1)
    if sr != SR:
        g = gcd(sr, SR)
        x = resample_poly(x, SR // g, sr // g)
    return x - x.mean()


def frame_db(x: np.ndarray) -> np.ndarray:
    n = 1 + max(0, (len(x) - WIN) // HOP)
    idx = np.arange(WIN)[None, :] + HOP * np.arange(n)[:, None]
    frames = np.pad(x, (0, max(0, WIN - len(x))))[idx]
    return 20 * np.log10(np.sqrt(np.mean(frames**2, axis=1)) + 1e-10)


def voiced(x: np.ndarray, join_gap: float = JOIN_GAP_S) -> list[tuple[int, int]]:
    db = frame_db(x)
    threshold = max(db.max() - BELOW_PEAK_DB, np.percentile(db, 3) + ABOVE_FLOOR_DB)
    on = db > threshold
    runs: list[list[int]] = []
    for i, v in enumerate(on):
        if not v:
            continue
        start = i * HOP + (WIN - HOP) // 2
        end = min(len(x), start + HOP)
        if runs and start - runs[-1][1] < join_gap * SR:
            runs[-1][1] = end
        else:
            runs.append([start, end])
    return [(a, b) for a, b in runs if b - a >= MIN_RUN_S * SR]


def rejoin(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for a, b in spans:
        if out and a - out[-1][1] < JOIN_GAP_S * SR:
            out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out


def prepare(key: str, folder: Path) -> Clip:
    speaker, rel = CLIPS[key]
    x = load(folder / rel)
    spans = voiced(x)
    mask = np.zeros(len(x), bool)
    for a, b in spans:
        mask[a:b] = True
    rms = np.sqrt(np.mean(x[mask] ** 2))
    gain = 10 ** (TARGET_RMS_DBFS / 20) / rms
    limit = 10 ** (PEAK_LIMIT_DBFS / 20)
    if np.abs(x).max() * gain > limit:
        gain = limit / np.abs(x).max()
    return Clip(speaker, x * gain, spans, voiced(x, BRIEF_JOIN_S))


def extent(spans: list[tuple[int, int]]) -> float:
    return (spans[-1][1] - spans[0][0]) / SR


def split(spans: list[tuple[int, int]], max_len: float, min_len: float) -> list[list]:
    """Cut a clip's voiced spans at pauses into groups of min_len..max_len seconds."""
    if extent(spans) <= max_len or len(spans) < 2:
        return [spans]
    best, best_k = None, None
    for k in range(1, len(spans)):
        left, right = extent(spans[:k]), extent(spans[k:])
        if left < min_len or right < min_len:
            continue
        score = max(left, right)
        if best is None or score < best:
            best, best_k = score, k
    if best_k is None:
        return [spans]
    return split(spans[:best_k], max_len, min_len) + split(spans[best_k:], max_len, min_len)


def cut(clip: Clip, group: list[tuple[int, int]]) -> Piece:
    pad = int(PAD_S * SR)
    a = max(0, group[0][0] - pad)
    b = min(len(clip.audio), group[-1][1] + pad)
    audio = clip.audio[a:b].copy()
    fade = int(FADE_S * SR)
    ramp = np.linspace(0.0, 1.0, fade)
    audio[:fade] *= ramp
    audio[-fade:] *= ramp[::-1]
    spans = [(s - a, e - a) for s, e in rejoin(group)]
    return Piece(clip.speaker, audio, spans, spans[0][0], len(audio) - spans[-1][1])


def pieces_for(part: Part, folder: Path) -> list[Piece]:
    out = []
    for key in part.clips:
        clip = prepare(key, folder)
        if part.brief:
            groups = [g for g in split(clip.fine, 3.0, 0.6) if 0.6 <= extent(g) <= 3.0]
            if not groups:
                raise SystemExit(f"{key}: no 0.6-3 s piece for a brief speaker")
            out += [cut(clip, g) for g in groups[: part.brief]]
        else:
            out += [cut(clip, g) for g in split(clip.spans, part.max_len, part.min_len)]
    return out


def order(people: list[list[Piece]], brief: list[bool], rng: random.Random) -> list[Piece]:
    """Interleave the people's pieces at random: never one person twice in a row, no brief
    person in the first two turns (tries again until an order fits)."""
    for _ in range(10000):
        left = [list(p) for p in people]
        out: list[Piece] = []
        last = -1
        while any(left):
            choices = [
                i for i, p in enumerate(left) if p and i != last and not (brief[i] and len(out) < 2)
            ]
            if not choices:
                break
            weights = [len(left[i]) for i in choices]
            i = rng.choices(choices, weights)[0]
            out.append(left[i].pop(0))
            last = i
        if not any(left):
            return out
    raise SystemExit("no order found")


def build(name: str, seed: int, parts: list[Part], folder: Path, out_dir: Path) -> dict:
    rng = random.Random(seed)
    people = [pieces_for(p, folder) for p in parts]
    turns = order(people, [p.brief > 0 for p in parts], rng)
    chunks = [np.zeros(int(EDGE_S * SR))]
    pos = len(chunks[0])
    rttm: list[tuple[float, float, str]] = []
    prev_tail = 0
    for n, piece in enumerate(turns):
        if n:
            gap = int(rng.uniform(*GAP_S) * SR)
            silence = max(0, gap - prev_tail - piece.lead)
            chunks.append(np.zeros(silence))
            pos += silence
        for a, b in piece.spans:
            rttm.append(((pos + a) / SR, (b - a) / SR, piece.speaker))
        chunks.append(piece.audio)
        pos += len(piece.audio)
        prev_tail = piece.tail
    chunks.append(np.zeros(int(EDGE_S * SR)))
    audio = np.concatenate(chunks)
    pcm = np.clip(np.round(audio * 32767), -32768, 32767).astype(np.int16)
    sf.write(
        str(out_dir / f"{name}.flac"),
        pcm,
        SR,
        subtype="PCM_16",
        format="FLAC",
        compression_level=1.0,
    )
    with open(out_dir / f"{name}.rttm", "w") as f:
        for start, dur, spk in sorted(rttm):
            f.write(f"SPEAKER {name} 1 {start:.3f} {dur:.3f} <NA> <NA> {spk} <NA> <NA>\n")
    talk: dict[str, float] = {}
    count: dict[str, int] = {}
    for piece in turns:
        talk[piece.speaker] = talk.get(piece.speaker, 0.0) + sum(b - a for a, b in piece.spans) / SR
        count[piece.speaker] = count.get(piece.speaker, 0) + 1
    return {"name": name, "length": len(audio) / SR, "talk": talk, "turns": count}


def main() -> None:
    folder = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/spliced_src")
    out_dir = Path(__file__).resolve().parent
    used = [k for _, parts in CONVERSATIONS.values() for p in parts for k in p.clips]
    assert len(used) == len(set(used)), "a clip is used twice"
    for name, (seed, parts) in CONVERSATIONS.items():
        info = build(name, seed, parts, folder, out_dir)
        people = sorted(info["talk"].items(), key=lambda kv: -kv[1])
        desc = ", ".join(f"{s} {t:.1f} s/{info['turns'][s]}" for s, t in people)
        print(f"{name}: {info['length']:.1f} s, {len(people)} people: {desc}")


if __name__ == "__main__":
    main()
