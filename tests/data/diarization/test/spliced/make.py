#!/usr/bin/env python3
"""Build spliced multi-speaker telephone test conversations from HarperValleyBank calls.

Usage:  python3 make.py <git-dir of github.com/dev-sanidhya/BPO-Demo> [out_dir]

Reads the per-role 8 kHz channel WAVs, transcripts and metadata of HarperValleyBank calls
from demo-data/harper-valley/ at a fixed commit of that repository (via `git show`), cuts each
chosen person's own transcribed speech turns out of their own channel, lays the turns one
after another on a new timeline (interleaved speakers, 0.2-0.8 s pauses, about 1 in 5
transitions overlapping by 0.1-0.5 s), levels the turns, mixes to mono, resamples
8 kHz -> 16 kHz (scipy resample_poly, the 0-4 kHz telephone band is kept) and writes
<name>.flac (16-bit, via sox) and <name>.rttm. Deterministic: fixed seeds, fixed commit.
No diarizer or recognizer is used; only sanity checks are printed.
Needs: python3, numpy, scipy, git, sox.
"""

import io
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import scipy.io.wavfile as wavfile
from scipy.ndimage import maximum_filter1d
from scipy.signal import resample_poly

COMMIT = "83ab45f9417d326412b8f46fc5fab82b19643d66"  # BPO-Demo snapshot used
BASE = "demo-data/harper-valley"
SR_IN, SR_OUT = 8000, 16000

# Calls NOT used by /work/newdata/*.flac (a7ccc338, 02e41649, 03a17cc3, 010eaccb) and not
# the rejected eb82ec7b5f0944ca.  Person = HVB metadata speaker_id (a global speaker id:
# the same id appears as caller in two calls for ids 44 and 60).
# Each conversation: list of (label, expected speaker_id, [(sid, role), ...]).
# At most one agent channel per conversation; all persons in one conversation differ.
CONVS = [
    (
        "hvb_spliced_3spk",
        3,
        [
            ("spk017", 17, [("00d676d7058c49bb", "agent")]),
            ("spk044", 44, [("0002f70f7386445b", "caller"), ("0091a706bc604188", "caller")]),
            ("spk033", 33, [("01cefd6f5c044a6f", "caller")]),
        ],
    ),
    (
        "hvb_spliced_4spk",
        4,
        [
            ("spk058", 58, [("01cefd6f5c044a6f", "agent")]),
            ("spk037", 37, [("01f7ec3700424bc0", "caller")]),
            ("spk060", 60, [("00d676d7058c49bb", "caller"), ("ff0296d00e5e4184", "caller")]),
            ("spk044", 44, [("0002f70f7386445b", "caller"), ("0091a706bc604188", "caller")]),
        ],
    ),
    (
        "hvb_spliced_5spk",
        5,
        [
            ("spk019", 19, [("3a20358e1bfc4a17", "agent")]),
            ("spk029", 29, [("3a20358e1bfc4a17", "caller")]),
            ("spk060", 60, [("00d676d7058c49bb", "caller"), ("ff0296d00e5e4184", "caller")]),
            ("spk033", 33, [("01cefd6f5c044a6f", "caller")]),
            ("spk037", 37, [("01f7ec3700424bc0", "caller")]),
        ],
    ),
]

MAX_INTRA_GAP = 1.5  # s; consecutive segments of one person (nobody else in between) form one turn
JOIN_GAP = 0.5  # s; within a turn, speech regions closer than this are joined in the RTTM
EXTEND_MAX = 0.5  # s; max energy-based extension of a transcript segment at each end
EXT_THR_DB = -45.0  # dBFS; frames above max(this, channel floor + 15 dB) count as active
PAD = 0.10  # s of the channel's own audio kept around each turn (not labelled)
FADE = 0.01  # s raised-cosine fade at each cut
PAUSE = (0.2, 0.8)  # s between end of one turn's speech and start of the next
P_OVERLAP, OVERLAP = 0.2, (0.1, 0.5)
MAX_LEN = 120.0
TARGET_DB, TOL_DB = -26.0, 3.0  # turn speech RMS brought to TARGET +- TOL dBFS
NOISE_DB = -70.0  # seeded white background so gaps are not digital zero
NONSPEECH = re.compile(
    r"\[(noise|baby|laughter|music|static|silence|beep|breath|cough)\]|<noise>", re.I
)


def git_show(gitdir, path):
    return subprocess.run(
        ["git", "--git-dir", gitdir, "show", f"{COMMIT}:{path}"], check=True, capture_output=True
    ).stdout


def is_speech(text):
    t = NONSPEECH.sub("", text or "").strip()
    return t != ""


def db(x):
    return 10 * np.log10(np.mean(np.asarray(x, float) ** 2) + 1e-20)


class Channel:
    def __init__(self, gitdir, sid, role):
        self.sid, self.role = sid, role
        sr, x = wavfile.read(io.BytesIO(git_show(gitdir, f"{BASE}/audio/{role}/{sid}.wav")))
        assert sr == SR_IN, (sid, role, sr, x.shape)
        assert x.ndim == 1, (sid, role, sr, x.shape)
        assert x.dtype == np.int16, (sid, role, sr, x.shape)
        self.x = x.astype(np.float64) / 32768.0
        self.meta = json.loads(git_show(gitdir, f"{BASE}/metadata/{sid}.json"))
        tr = json.loads(git_show(gitdir, f"{BASE}/transcript/{sid}.json"))
        segs = sorted(tr, key=lambda d: d["start_ms"])
        # start_ms is the time on the channel file (offset_ms can be ~2 s off for agents)
        self.all_own = [
            (d["start_ms"] / 1000, (d["start_ms"] + d["duration_ms"]) / 1000)
            for d in segs
            if d["speaker_role"] == role
        ]
        other_kept = [
            d["start_ms"] / 1000
            for d in segs
            if d["speaker_role"] != role and is_speech(d["human_transcript"])
        ]
        own = [
            (d["start_ms"] / 1000, (d["start_ms"] + d["duration_ms"]) / 1000, d["human_transcript"])
            for d in segs
            if d["speaker_role"] == role and is_speech(d["human_transcript"])
        ]
        dur = len(self.x) / SR_IN
        own = [(a, min(b, dur), t) for a, b, t in own if a < dur]
        # Energy check of the transcript boundaries: extend (never shrink) each kept segment by at
        # most EXTEND_MAX s to contiguous 10 ms frames above the threshold, without running into
        # another segment (kept or dropped) of this channel.
        nfr = len(self.x) // 80
        e = 10 * np.log10((self.x[: nfr * 80].reshape(nfr, 80) ** 2).mean(1) + 1e-12)
        e = maximum_filter1d(e, 5)  # bridge dips of up to ~30 ms inside a word
        floor = np.percentile(e, 20)
        thr = max(EXT_THR_DB, floor + 15.0)
        self.extended = 0.0
        ext = []
        for a, b, t in own:
            prev_end = max([e2 for s2, e2 in self.all_own if e2 <= a + 1e-6], default=0.0)
            next_start = min([s2 for s2, e2 in self.all_own if s2 >= b - 1e-6], default=dur)
            fa, fb = round(a * 100), round(b * 100)
            k = 0
            while (
                k < EXTEND_MAX * 100
                and fa - k - 1 >= 0
                and (fa - k - 1) / 100 >= prev_end
                and e[fa - k - 1] > thr
            ):
                k += 1
            j = 0
            while (
                j < EXTEND_MAX * 100
                and fb + j < nfr
                and (fb + j + 1) / 100 <= next_start
                and e[fb + j] > thr
            ):
                j += 1
            self.extended += (k + j) / 100
            ext.append(((fa - k) / 100, (fb + j) / 100, t))
        own = ext
        # group into turns
        self.turns = []
        for a, b, t in own:
            if self.turns:
                last = self.turns[-1]
                _pa, pb = last["regions"][0][0], last["regions"][-1][1]
                other_between = any(pb - 0.05 < o < a for o in other_kept)
                if a - pb <= MAX_INTRA_GAP and not other_between:
                    last["regions"].append((a, b))
                    last["text"].append(t)
                    continue
            self.turns.append({"regions": [(a, b)], "text": [t]})
        for tu in self.turns:
            reg = []
            for a, b in tu["regions"]:
                if reg and a - reg[-1][1] < JOIN_GAP:
                    reg[-1] = (reg[-1][0], max(reg[-1][1], b))
                else:
                    reg.append((a, b))
            tu["regions"] = reg
            tu["src"] = (sid, role)
            # padded cut, not reaching into any other segment of this channel
            a0, b0 = reg[0][0], reg[-1][1]
            lo = max(0.0, a0 - PAD)
            hi = min(dur, b0 + PAD)
            for s, e in self.all_own:
                if e <= a0 + 1e-6 and e > lo:
                    lo = e
                if s >= b0 - 1e-6 and s < hi:
                    hi = s
            tu["cut"] = (lo, hi)
            sp = np.concatenate([self.x[int(a * SR_IN) : int(b * SR_IN)] for a, b in reg])
            tu["src_db"] = db(sp)


def build(name, nspk, spec, chans, out_dir):
    rng = np.random.default_rng(1000 + nspk)
    queues = {}
    for label, spkid, srcs in spec:
        q = []
        for sid, role in srcs:
            ch = chans[(sid, role)]
            assert ch.meta[role]["speaker_id"] == spkid, (
                sid,
                role,
                ch.meta[role]["speaker_id"],
                spkid,
            )
            q += ch.turns
        queues[label] = list(q)
    labels = [s[0] for s in spec]
    assert len(set(s[1] for s in spec)) == len(spec), "persons must differ"
    assert sum(1 for s in spec for _, r in s[2] if r == "agent") <= 1, "max one agent channel"

    # order: first a random permutation of all speakers, then weighted random, no self-repeats
    order = list(rng.permutation(labels))
    placed = []  # (label, turn, shift) shift = new_time - src_time
    cursor = None  # end of latest speech placed so far
    last_label = None
    t_first = 0.5
    while True:
        if order:
            lab = order.pop(0)
        else:
            cand = [label for label in labels if queues[label] and label != last_label]
            if not cand:
                break
            w = np.array([len(queues[label]) for label in cand], float) ** 1.5
            lab = cand[rng.choice(len(cand), p=w / w.sum())]
        if not queues[lab]:
            continue
        tu = queues[lab][0]
        a0 = tu["regions"][0][0]
        if cursor is None:
            start = t_first
        else:
            prev = placed[-1]
            prev_last = (prev[1]["regions"][-1][0] + prev[2], prev[1]["regions"][-1][1] + prev[2])
            first_len = tu["regions"][0][1] - tu["regions"][0][0]
            if rng.random() < P_OVERLAP:
                ov = rng.uniform(*OVERLAP)
                ov = min(ov, first_len * 0.5, (prev_last[1] - prev_last[0]) - 0.2)
                start = cursor - ov if ov >= 0.1 else cursor + rng.uniform(*PAUSE)
            else:
                start = cursor + rng.uniform(*PAUSE)
        start = round(start * SR_IN) / SR_IN
        shift = start - a0
        end = tu["regions"][-1][1] + shift
        if end + PAD + 0.3 > MAX_LEN:
            break
        queues[lab].pop(0)
        placed.append((lab, tu, shift))
        cursor = end if cursor is None else max(cursor, end)
        last_label = lab

    total = cursor + 0.6
    n = round(total * SR_IN)
    mix = np.zeros(n)
    rttm, levels = [], {}
    for lab, tu, shift in placed:
        ch = chans[tu["src"]]
        lo, hi = tu["cut"]
        seg = ch.x[round(lo * SR_IN) : round(hi * SR_IN)].copy()
        nf = int(FADE * SR_IN)
        ramp = 0.5 - 0.5 * np.cos(np.linspace(0, np.pi, nf))
        seg[:nf] *= ramp
        seg[-nf:] *= ramp[::-1]
        # level: bring this turn's speech RMS into TARGET +- TOL dBFS
        lvl = tu["src_db"]
        g_db = np.clip(lvl, TARGET_DB - TOL_DB, TARGET_DB + TOL_DB) - lvl
        seg *= 10 ** (g_db / 20)
        i0 = round((lo + shift) * SR_IN)
        mix[i0 : i0 + len(seg)] += seg
        for a, b in tu["regions"]:
            rttm.append((a + shift, b - a, lab))
        levels.setdefault(lab, []).append(lvl + g_db)
    rng_noise = np.random.default_rng(7000 + nspk)
    mix += rng_noise.standard_normal(n) * 10 ** (NOISE_DB / 20)
    y = resample_poly(mix, SR_OUT // SR_IN, 1)
    peak = np.max(np.abs(y))
    if peak > 0.89:
        y *= 0.89 / peak
    yi = np.clip(np.round(y * 32767), -32768, 32767).astype(np.int16)
    flac = os.path.join(out_dir, name + ".flac")
    with tempfile.TemporaryDirectory() as td:
        tmpwav = os.path.join(td, "x.wav")
        wavfile.write(tmpwav, SR_OUT, yi)
        if os.path.exists(flac):
            os.remove(flac)
        subprocess.run(["sox", tmpwav, "-b", "16", "-c", "1", "-r", str(SR_OUT), flac], check=True)
    rttm.sort()
    with open(os.path.join(out_dir, name + ".rttm"), "w") as f:
        for s, d, lab in rttm:
            f.write(f"SPEAKER {name} 1 {s:.3f} {d:.3f} <NA> <NA> {lab} <NA> <NA>\n")

    # ---- sanity checks only (no diarizer / recognizer) ----
    dur = len(yi) / SR_OUT
    assert all(s >= 0 and s + d <= dur for s, d, _ in rttm), "turn outside audio"
    spk = sorted(set(label for _, _, label in rttm))
    assert len(spk) == nspk, spk
    cnt = {label: sum(1 for p in placed if p[0] == label) for label in spk}
    assert min(cnt.values()) >= 2, cnt
    assert all(placed[i][0] != placed[i + 1][0] for i in range(len(placed) - 1))
    yf = yi.astype(float) / 32768
    m = np.zeros(len(yf), bool)
    for s, d, _ in rttm:
        m[int(s * SR_OUT) : int((s + d) * SR_OUT)] = True
    talk = {label: sum(d for _, d, who in rttm if who == label) for label in spk}
    # overlap time
    act = np.zeros(len(yf), int)
    for s, d, _ in rttm:
        act[int(s * SR_OUT) : int((s + d) * SR_OUT)] += 1
    info = {
        "name": name,
        "length_s": round(dur, 2),
        "speakers": nspk,
        "turns": len(placed),
        "rttm_lines": len(rttm),
        "speech_union_s": round(m.sum() / SR_OUT, 2),
        "overlap_s": round((act > 1).sum() / SR_OUT, 2),
        "speech_dbfs": round(db(yf[m]), 1),
        "gap_dbfs": round(db(yf[~m]), 1),
        "peak": round(float(np.max(np.abs(yf))), 3),
        "talk_s": {label: round(talk[label], 2) for label in spk},
        "turns_per_spk": cnt,
        "turn_level_db_range": {
            label: (round(min(v), 1), round(max(v), 1)) for label, v in levels.items()
        },
        "extended_s": {
            label: round(sum(chans[src].extended for src in {tuple(x) for x in srcs}), 2)
            for label, _, srcs in spec
        },
        "sources": {s[0]: [f"{sid}/{role}" for sid, role in s[2]] for s in spec},
        "order": [p[0] for p in placed],
    }
    assert info["speech_dbfs"] > info["gap_dbfs"] + 20, info
    return info


def main():
    gitdir = sys.argv[1]
    out_dir = sys.argv[2] if len(sys.argv) > 2 else os.path.dirname(os.path.abspath(__file__))
    chans = {}
    for _, _, spec in CONVS:
        for _, _, srcs in spec:
            for sid, role in srcs:
                if (sid, role) not in chans:
                    chans[(sid, role)] = Channel(gitdir, sid, role)
    infos = [build(name, nspk, spec, chans, out_dir) for name, nspk, spec in CONVS]
    for i in infos:
        print(json.dumps(i))
    with open(os.path.join(out_dir, "summary.json"), "w") as f:
        json.dump(infos, f, indent=1)


if __name__ == "__main__":
    main()
