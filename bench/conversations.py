"""Recordings of several people with who spoke when: real ones read from files (``recordings``:
an RTTM beside each FLAC or WAV), real voices spliced into conversations (``spliced``), and
mixed-down conversations of two to four people, made at run time.

For ``bench/diarize.py`` and the diarization tests. Each conversation is a seeded sequence of
turns by 2-4 speakers: consecutive turns sometimes overlap (up to 0.6 s) and sometimes leave
a pause (up to 0.8 s); about one turn in four gets a short interjection ("yeah", "right")
from another speaker in its middle. Speakers are espeak-ng voices (different accents, sexes
and speeds) and, in some conversations, one of the real people of the recordings the tests
ship: JFK (``jfk.flac``, public domain, cut into his four phrases) and the two speakers of
``stereo_diarization.wav`` (faster-whisper's test data, MIT), each of their channel's speech.

The truth of each utterance is where its own samples are loud (20 ms frames within 35 dB of
its peak, 30 dB for the real recordings, whose hiss is within 35; gaps under 250 ms closed),
so a pause inside a sentence is not scored as speech.
Each speaker's own track (their utterances alone, on the same timeline) is kept too, so a
diarized transcript can be compared with the per-track one.
"""

from __future__ import annotations

import random
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))
from make_meeting import Voice, speak  # noqa: E402

RATE = 16_000
AUDIO = REPO / "tests" / "data" / "audio"
REAL = REPO / "tests" / "data" / "diarization"
VOICES = [
    Voice("en-us+m3", 160), Voice("en-gb+f2", 150), Voice("en-gb-scotland+m1", 145),
    Voice("en-us+f4", 170), Voice("en-029+m7", 150), Voice("en-gb-x-rp+f5", 140),
    Voice("en-us-nyc+m5", 175), Voice("en+f1", 155),
]  # fmt: skip
SENTENCES = [
    "Can you send me the numbers before lunch?",
    "I think the second option is cheaper in the long run.",
    "We moved the release to next Thursday because of the login bug.",
    "The customer asked for a call with the whole team tomorrow morning.",
    "Let me check the calendar and get back to you this afternoon.",
    "Most of the budget went into the new servers last quarter.",
    "Did anyone read the report that came in on Monday?",
    "I would rather test it on real phones before we ship it.",
    "The design review took longer than anyone expected.",
    "Please add the meeting notes to the shared folder.",
    "Our sales in the north grew by almost twenty percent.",
    "I can take the battery problem on the older devices.",
    "Nobody told me the office would be closed on Friday.",
    "We should hire two more people for the support team.",
    "The train was late again, so I missed the first half.",
    "Let's keep the scope small and finish the basics first.",
]
INTERJECTIONS = ["Yeah.", "Right.", "Uh-huh.", "Okay.", "Sure."]
JFK_PHRASES = [  # (start s, end s, text) in jfk.flac, where loud_spans(floor_db=30) puts them
    (0.2, 2.3, "And so my fellow Americans,"),
    (3.2, 4.5, "ask not"),
    (5.3, 7.95, "what your country can do for you,"),
    (8.1, 11.0, "ask what you can do for your country."),
]
REAL_FLOOR_DB = 30.0
"""The real recordings' hiss lies within 35 dB of their speech; 30 dB finds JFK's words."""
STEREO = [  # (channel, text) of stereo_diarization.wav
    (0, "He began a confused complaint against the wizard, who had vanished behind the curtain"
        " on the left."),
    (1, "The horizon seems extremely distant."),
]  # fmt: skip


@dataclass
class Speaker:
    name: str
    clips: list[tuple[npt.NDArray[np.float32], str]]
    """Utterances this speaker can say: samples and text."""
    floor_db: float = 35.0
    """Of ``loud_spans``, for the truth of their speech."""
    short: list[tuple[npt.NDArray[np.float32], str]] = field(default_factory=list)
    """Interjections."""


@dataclass
class Conversation:
    name: str
    samples: npt.NDArray[np.float32]
    """The mix, 16 kHz mono."""
    truth: list[tuple[float, float, str]]
    """(start, end, speaker) of every stretch of speech."""
    tracks: dict[str, npt.NDArray[np.float32]]
    """Each speaker's own track, as long as the mix."""
    texts: dict[str, list[str]]
    """Each speaker's utterances, in order."""

    @property
    def speakers(self) -> int:
        return len(self.tracks)

    @property
    def duration_s(self) -> float:
        return len(self.samples) / RATE


def loud_spans(samples: npt.NDArray[np.float32], *, floor_db: float = 35.0,
               close_s: float = 0.25) -> list[tuple[float, float]]:  # fmt: skip
    """Where ``samples`` are within ``floor_db`` of their loudest 20 ms, in seconds."""
    hop = RATE // 50
    n = len(samples) // hop
    if n == 0:
        return []
    rms = np.sqrt((samples[: n * hop].reshape(n, hop).astype(np.float64) ** 2).mean(axis=1))
    loud = rms > rms.max() * 10 ** (-floor_db / 20)
    spans: list[list[float]] = []
    for i in np.flatnonzero(loud):
        a, b = i * hop / RATE, (i + 1) * hop / RATE
        if spans and a - spans[-1][1] < close_s:
            spans[-1][1] = b
        else:
            spans.append([a, b])
    return [(a, b) for a, b in spans]


def _trim(samples: npt.NDArray[np.float32], floor_db: float = 35.0) -> npt.NDArray[np.float32]:
    spans = loud_spans(samples, floor_db=floor_db)
    if not spans:
        return samples
    return samples[int(spans[0][0] * RATE) : int(spans[-1][1] * RATE)]


def _unit(samples: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """Scaled to an RMS of 0.08 over its loud part."""
    rms = float(np.sqrt(np.mean(samples.astype(np.float64) ** 2))) or 1.0
    return (samples * (0.08 / rms)).astype(np.float32)


def real_speakers() -> list[Speaker]:
    """JFK and the two speakers of stereo_diarization.wav."""
    from heard.asr.audio import load_audio

    jfk = load_audio(AUDIO / "jfk.flac")
    floor = REAL_FLOOR_DB
    people = [Speaker("jfk", [(_unit(_trim(jfk[int(a * RATE) : int(b * RATE)], floor)), t)
                              for a, b, t in JFK_PHRASES], floor)]  # fmt: skip
    for channel, text in STEREO:
        track = load_audio(AUDIO / "stereo_diarization.wav", channel)
        people.append(Speaker(f"stereo{channel}", [(_unit(_trim(track, floor)), text)], floor))
    return people


def espeak_speakers(workdir: Path, count: int = len(VOICES)) -> list[Speaker]:
    """Speakers with espeak-ng voices, each with every sentence and interjection."""
    people = []
    index = 0
    for v, voice in enumerate(VOICES[:count]):
        clips: list[tuple[npt.NDArray[np.float32], str]] = []
        short: list[tuple[npt.NDArray[np.float32], str]] = []
        for pool, texts in ((clips, SENTENCES), (short, INTERJECTIONS)):
            for text in texts:
                index += 1
                raw = (speak(text, voice, workdir, index) / 32768).astype(np.float32)
                pool.append((_unit(_trim(raw)), text))
        people.append(Speaker(f"voice{v}", clips, short=short))
    return people


def make_conversation(
    name: str, cast: list[Speaker], rng: random.Random, turns: int = 10, everyone: bool = False
) -> Conversation:
    """A conversation among ``cast`` (see the module docstring); with ``everyone``, each of
    them takes a turn before anyone takes a second."""
    placed: list[tuple[float, str, npt.NDArray[np.float32], str]] = []
    floors = {s.name: s.floor_db for s in cast}
    t = 0.5
    previous: str | None = None
    heard: set[str] = set()
    for _ in range(turns):
        pool = [s for s in cast if s.name not in heard] if everyone else []
        speaker = rng.choice([s for s in pool or cast if s.name != previous] or cast)
        heard.add(speaker.name)
        clip, text = rng.choice(speaker.clips)
        clip = clip * (10 ** (rng.uniform(-3, 3) / 20))
        start = max(0.0, t + rng.uniform(-0.6, 0.8)) if placed else t
        placed.append((start, speaker.name, clip, text))
        length = len(clip) / RATE
        others = [s for s in cast if s.name != speaker.name and s.short]
        if length > 3.0 and others and rng.random() < 0.3:
            other = rng.choice(others)
            short, word = rng.choice(other.short)
            placed.append((start + rng.uniform(1.0, length - 1.5), other.name, short, word))
        t = start + length
        previous = speaker.name
    end = max(s + len(c) / RATE for s, _, c, _ in placed) + 0.5
    total = int(end * RATE)
    tracks = {s.name: np.zeros(total, dtype=np.float32) for s in cast
              if any(p[1] == s.name for p in placed)}  # fmt: skip
    truth: list[tuple[float, float, str]] = []
    texts: dict[str, list[str]] = {n: [] for n in tracks}
    for start, who, clip, text in sorted(placed, key=lambda p: p[0]):
        lo = int(start * RATE)
        tracks[who][lo : lo + len(clip)] += clip[: total - lo]
        truth += [(start + a, start + b, who) for a, b in loud_spans(clip, floor_db=floors[who])]
        texts[who].append(text)
    mix = np.sum(list(tracks.values()), axis=0).astype(np.float32)
    peak = float(np.abs(mix).max()) or 1.0
    if peak > 0.95:
        mix *= 0.95 / peak
        tracks = {n: (x * (0.95 / peak)).astype(np.float32) for n, x in tracks.items()}
    truth.sort()
    return Conversation(name, mix, truth, tracks, texts)


def conversations(workdir: Path, count: int = 24, seed: int = 30) -> list[Conversation]:
    """``count`` conversations of 2-4 speakers; every third has a real person in it."""
    rng = random.Random(seed)
    voices = espeak_speakers(workdir)
    real = real_speakers()
    out = []
    for i in range(count):
        size = 2 + i % 3
        cast = rng.sample(voices, size)
        if i % 3 == 2:
            cast[0] = rng.choice(real)
        out.append(make_conversation(f"conv{i:02d}-{size}spk", cast, rng, turns=8 + size * 2))
    return out


def read_rttm(path: Path) -> list[tuple[float, float, str]]:
    """(start, end, speaker) of every ``SPEAKER`` line, sorted."""
    turns = []
    for line in path.read_text(encoding="utf-8").splitlines():
        fields = line.split()
        if len(fields) >= 8 and fields[0] == "SPEAKER":
            start, duration = float(fields[3]), float(fields[4])
            turns.append((start, start + duration, fields[7]))
    return sorted(turns)


def recordings(folder: Path, *, below: bool = True) -> list[Conversation]:
    """Every FLAC or WAV in ``folder`` (and below, unless not ``below``) with an RTTM of the
    same name beside it, 16 kHz mono, with its reference turns."""
    from heard.asr.audio import load_audio

    out = []
    for rttm in sorted(folder.rglob("*.rttm") if below else folder.glob("*.rttm")):
        audio = next((p for p in (rttm.with_suffix(".flac"), rttm.with_suffix(".wav"))
                      if p.is_file()), None)  # fmt: skip
        if audio is None:
            continue
        truth = read_rttm(rttm)
        samples = load_audio(audio)
        names = sorted({k for _, _, k in truth})
        out.append(Conversation(audio.stem, samples, truth, dict.fromkeys(names, samples),
                                {n: [] for n in names}))  # fmt: skip
    return out


def librispeech_speakers() -> list[Speaker]:
    """The ten LibriSpeech readers in tests/data/diarization/librispeech, three utterances
    each (the file name's first number is the reader)."""
    from heard.asr.audio import load_audio

    clips: dict[str, list[tuple[npt.NDArray[np.float32], str]]] = {}
    for path in sorted((REAL / "librispeech").glob("*.flac")):
        samples = _unit(_trim(load_audio(path), REAL_FLOOR_DB))
        clips.setdefault(path.name.split("-")[0], []).append((samples, path.stem))
    return [Speaker(f"libri{name}", said, REAL_FLOOR_DB) for name, said in clips.items()]


SPLICED_SIZES = (2, 3, 4, 6, 9, 5, 2, 3, 4, 7)
"""How many readers take part in each spliced conversation, in turn."""


def spliced(count: int = 8, seed: int = 40) -> list[Conversation]:
    """``count`` conversations of real voices one after another: 2 to 9 of the ten LibriSpeech
    readers taking turns, each of them at least once (``SPLICED_SIZES``;
    ``make_conversation``'s overlaps and pauses, no interjections)."""
    rng = random.Random(seed)
    readers = librispeech_speakers()
    sizes = [SPLICED_SIZES[i % len(SPLICED_SIZES)] for i in range(count)]
    return _casts("spliced", readers, sizes, rng)


def _casts(prefix: str, readers: list[Speaker], sizes: list[int] | tuple[int, ...],
           rng: random.Random) -> list[Conversation]:  # fmt: skip
    """One conversation per size, of that many readers drawn from ``readers``, each of whom
    speaks, two turns a reader."""
    out = []
    for i, size in enumerate(sizes):
        cast = rng.sample(readers, size)
        out.append(make_conversation(f"{prefix}{i:02d}-{size}spk", cast, rng, turns=2 * size,
                                     everyone=True))  # fmt: skip
    return out


HELD_OUT = REAL / "heldout"
"""Issue 55's first round's held-out set; its second round's tuning set holds it."""
TEST = REAL / "test"
"""Held out from issue 72 on: never looked at while tuning."""
TEST55 = REAL / "test55"
"""Issue 55's held-out set, scored once there; issue 72's tuning set holds it."""
HELD_OUT_SIZES = (2, 3, 4, 5, 6, 7, 8, 9)


def phrases(samples: npt.NDArray[np.float32], shortest_s: float = 3.0
            ) -> list[npt.NDArray[np.float32]]:  # fmt: skip
    """``samples`` cut at its pauses (``loud_spans``' gaps) into phrases of at least
    ``shortest_s`` (the last one may be shorter when nothing follows it)."""
    spans = loud_spans(samples, floor_db=REAL_FLOOR_DB)
    out: list[npt.NDArray[np.float32]] = []
    start = None
    for a, b in spans:
        start = a if start is None else start
        if b - start >= shortest_s:
            out.append(samples[int(start * RATE) : int(b * RATE)])
            start = None
    if start is not None:
        out.append(samples[int(start * RATE) : int(spans[-1][1] * RATE)])
    return out


def held_out_spliced(seed: int = 55) -> list[Conversation]:
    """Conversations of 2 to 9 of the twenty LibriSpeech train-clean-100 readers in
    ``heldout/librispeech`` (none of them in the tuning set), each reader's one utterance cut
    at its pauses into phrases that are their turns; every reader of a conversation speaks."""
    from heard.asr.audio import load_audio

    readers = [
        Speaker(f"reader{path.name.split('-')[0]}",
                [(_unit(x), path.stem) for x in phrases(load_audio(path))], REAL_FLOOR_DB)
        for path in sorted((HELD_OUT / "librispeech").glob("*.flac"))
    ]  # fmt: skip
    return _casts("heldout", readers, HELD_OUT_SIZES, random.Random(seed))


def monologues(workdir: Path, seed: int = 30) -> list[Conversation]:
    """One person each: JFK's whole recording, then every espeak-ng voice and real person
    alone for eight utterances."""
    from heard.asr.audio import load_audio

    rng = random.Random(seed)
    jfk = load_audio(AUDIO / "jfk.flac")
    truth = [(a, b, "jfk") for a, b in loud_spans(jfk, floor_db=REAL_FLOOR_DB)]
    out = [Conversation("jfk.flac", jfk, truth, {"jfk": jfk}, {"jfk": [JFK_PHRASES[0][2]]})]
    for person in [*espeak_speakers(workdir), *real_speakers()]:
        out.append(make_conversation(f"{person.name} alone", [person], rng, turns=8))
    return out


def stereo_mixed() -> Conversation:
    """stereo_diarization.wav mixed to mono; its truth from each channel's own speech."""
    from heard.asr.audio import load_audio

    tracks = {f"stereo{c}": load_audio(AUDIO / "stereo_diarization.wav", c) for c in (0, 1)}
    mix = (tracks["stereo0"] + tracks["stereo1"]) / 2
    truth = sorted(
        (a, b, name) for name, x in tracks.items() for a, b in loud_spans(x, floor_db=REAL_FLOOR_DB)
    )
    texts = {f"stereo{c}": [text] for c, text in STEREO}
    halves = {n: (x / 2).astype(np.float32) for n, x in tracks.items()}
    return Conversation("stereo_diarization (mono)", mix.astype(np.float32), truth, halves, texts)
