"""Fakes for heard's seams, for heard's own tests and for the tests of code that embeds heard.

Each stands where real I/O would (a model, an LLM, a translation service, a memory index, the
time of day) and behaves as the real part does at its interface, with what it was asked
recorded for the test to look at:

* ``FakeTranscriber``: canned segments (or a whole ``Transcription``) per track, or an
  exception to raise (``Transcriber``);
* ``FakeDiarizer``: canned speaker turns per recording, or an exception (``diarize.Diarizer``);
* ``ScriptedRecognizer``: a live stream's words at the audio times they were said, decoded as
  the audio reaches them (``asr.StreamingRecognizer``);
* ``ScriptedProvider``: scripted tool-call answers, failures and delays (``llm.Provider``);
* ``ScriptedTranslator``: tags the text with the target language; delays and failures on cue
  (``release.Translator``);
* ``ScriptedRetriever``: answers with the query itself; delays and failures on cue
  (``live.Retriever``);
* ``HashingEmbedder``: deterministic bag-of-words vectors, no model (``memory.Embedder``);
* ``FakeClock``: a time of day that moves only when told (the pipeline's clock);
* ``silent_audio`` and ``forge_length``: files of silence, small for hours of audio, and the
  same with a header that lies about their length (a server's input limits, tested).

    from heard.testing import FakeTranscriber
    from heard.speech import Segment

    fake = FakeTranscriber({"alice.wav": [Segment(0.0, 2.0, "hello")]})
    run_pipeline(meeting_id, db=db, transcriber=fake)
    assert fake.calls == ["alice.wav"]
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from heard.asr.streaming import Decoded
from heard.diarize import Diarization, SpeakerTurn
from heard.errors import ProviderError
from heard.live.prepared import Retrieved
from heard.llm.provider import ToolCall, ToolSpec
from heard.memory.evidence import Evidence, Recalled
from heard.speech import Segment, Transcription, Word
from heard.transcript.events import EventKind

__all__ = [
    "Answer",
    "FakeClock",
    "FakeDiarizer",
    "FakeTranscriber",
    "HashingEmbedder",
    "ProviderCall",
    "ScriptedProvider",
    "ScriptedRecognizer",
    "ScriptedRetriever",
    "ScriptedTranslator",
    "forge_length",
    "silent_audio",
]


class FakeTranscriber:
    """Canned segments (or a whole ``Transcription``) per track location; an exception value
    is raised instead.

    ``before(location)`` runs first on every call (a test's way to crash or block there);
    ``calls`` lists the locations asked for, in order, and ``languages`` the language asked
    with each. A language asked for is the transcription's, as a real recognizer's would be.
    """

    name = "fake"

    def __init__(
        self,
        by_location: Mapping[str, Sequence[Segment] | Transcription | BaseException],
        before: Callable[[str], None] | None = None,
    ) -> None:
        self.by_location = dict(by_location)
        self.calls: list[str] = []
        self.languages: list[str | None] = []
        self.before = before

    def transcribe(
        self,
        audio: str | Path | Any,
        *,
        channel: int | None = None,
        language: str | None = None,
        on_progress: Callable[[float, float], None] | None = None,
    ) -> Transcription:
        location = str(audio)
        self.calls.append(location)
        self.languages.append(language)
        if self.before is not None:
            self.before(location)
        result = self.by_location[location]
        if isinstance(result, BaseException):
            raise result
        if not isinstance(result, Transcription):
            result = Transcription(tuple(result))
        if language is not None:
            result = Transcription(result.segments, language, None)
        if on_progress is not None and result.segments:  # after each segment, as whisper's
            total = result.segments[-1].end
            for segment in result.segments:
                on_progress(segment.end, total)
        return result


class FakeDiarizer:
    """Canned turns ``(start, end, speaker)`` per recording location; an exception value is
    raised instead. With a number of speakers asked for, turns of speakers beyond it go to
    the last one, as a real diarizer finds no more than it is told. ``calls`` lists the
    locations and the number asked with each."""

    name = "fake-diarizer"

    def __init__(
        self, by_location: Mapping[str, Sequence[tuple[float, float, int]] | BaseException]
    ) -> None:
        self.by_location = dict(by_location)
        self.calls: list[tuple[str, int | None]] = []

    def diarize(
        self,
        audio: str | Path | Any,
        *,
        channel: int | None = None,
        speakers: int | None = None,
        on_progress: Callable[[float, float], None] | None = None,
    ) -> Diarization:
        location = str(audio)
        self.calls.append((location, speakers))
        result = self.by_location[location]
        if isinstance(result, BaseException):
            raise result
        cap = speakers - 1 if speakers is not None else None
        turns = tuple(
            SpeakerTurn(a, b, k if cap is None else min(k, cap)) for a, b, k in sorted(result)
        )
        return Diarization(turns, len({t.speaker for t in turns}))


Answer = Mapping[str, Any] | ToolCall | BaseException
"""A scripted reply: the tool's arguments, a whole ``ToolCall``, or an exception to raise."""


class ScriptedRecognizer:
    """A streaming recognizer that hears ``words`` (at their times in the stream, seconds)
    once the audio pushed reaches them, whatever the audio holds. Each ``chunk_ms`` of audio
    it decodes once: words that ended ``commit_s`` before the audio's end go out as a final
    (committed inside speech), later ones as the partial; ``end_silence_s`` of audio past the
    last word heard makes the endpoint final; ``finish`` makes the rest final. ``pushed`` is
    the samples it was given, ``steps`` the decodes it ran."""

    def __init__(
        self,
        words: Sequence[Word],
        *,
        chunk_ms: int = 1000,
        commit_s: float = 1.0,
        end_silence_s: float = 0.8,
    ) -> None:
        self.words = sorted(words, key=lambda w: w.start)
        self.chunk_ms = chunk_ms
        self.commit_s, self.end_silence_s = commit_s, end_silence_s
        self.pushed = 0
        self.steps = 0
        self._decoded_to = 0
        self._done = 0  # words sent as final
        self._open = False  # finals sent since the last endpoint

    @property
    def decoded_to(self) -> int:
        return self._decoded_to

    def paced_step(self) -> tuple[int, float] | None:
        return None

    def push(self, samples: Any) -> list[Decoded]:
        self.pushed += len(samples)
        if self.pushed - self._decoded_to < 16 * self.chunk_ms:
            return []
        return self._step(self.pushed / 16_000, ending=False)

    def finish(self) -> list[Decoded]:
        return self._step(self.pushed / 16_000, ending=True)

    def _step(self, now_s: float, *, ending: bool) -> list[Decoded]:
        self.steps += 1
        self._decoded_to = self.pushed
        heard = [w for w in self.words[self._done :] if w.end <= now_s]
        if not ending and heard and now_s - heard[-1].end < self.end_silence_s:
            done = [w for w in heard if w.end <= now_s - self.commit_s]
            pending = heard[len(done) :]
            out = [self._decoded(EventKind.FINAL, done)] if done else []
            out += [self._decoded(EventKind.PARTIAL, pending)] if pending else []
            self._done += len(done)
            self._open = self._open or bool(done)
            return out
        if not heard and not (self._open and (ending or self._silent(now_s))):
            return []
        self._done += len(heard)
        self._open = False
        return [self._decoded(EventKind.FINAL, heard, endpoint=True)]

    def _silent(self, now_s: float) -> bool:
        said = self.words[: self._done]
        return not said or now_s - said[-1].end >= self.end_silence_s

    @staticmethod
    def _decoded(kind: EventKind, words: list[Word], *, endpoint: bool = False) -> Decoded:
        start, end = (words[0].start, words[-1].end) if words else (0.0, 0.0)
        text = " ".join(w.text for w in words)
        return Decoded(kind, text, start, end, tuple(words), endpoint)


@dataclass(frozen=True, slots=True)
class ProviderCall:
    tool: str
    system: str
    prompt: str
    timeout_s: float


class ScriptedProvider:
    """An LLM provider that answers from a script and records every call.

    A call to tool T takes the next answer from ``per_tool[T]`` when the script has a queue
    for T, else from ``answers``. An answer is the tool's arguments (a mapping), a whole
    ``ToolCall``, or an exception to raise. An empty queue fails the call with
    ``ProviderError``, as a real provider's failure would. ``delay_s`` makes every call take
    that long; past the call's ``timeout_s`` it fails as a timeout, unless ``hangs`` (a provider
    that ignores its timeout, which heard must abandon on its own).
    """

    name = "scripted"

    def __init__(
        self,
        *answers: Answer,
        per_tool: Mapping[str, Sequence[Answer]] | None = None,
        delay_s: float = 0.0,
        hangs: bool = False,
    ) -> None:
        self.answers = list(answers)
        self.per_tool = {tool: list(queue) for tool, queue in (per_tool or {}).items()}
        self.delay_s = delay_s
        self.hangs = hangs
        self.calls: list[ProviderCall] = []

    def call_tool(
        self, *, system: str, prompt: str, tool: ToolSpec, timeout_s: float = 20.0
    ) -> ToolCall:
        self.calls.append(ProviderCall(tool.name, system, prompt, timeout_s))
        if self.delay_s:
            time.sleep(self.delay_s if self.hangs else min(self.delay_s, timeout_s))
            if self.delay_s > timeout_s and not self.hangs:
                raise ProviderError(f"{tool.name}: timed out after {timeout_s} s")
        queue = self.per_tool.get(tool.name, self.answers)
        if not queue:
            raise ProviderError(f"{tool.name}: nothing scripted")
        answer = queue.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        if isinstance(answer, ToolCall):
            return answer
        return ToolCall(tool.name, dict(answer))


class ScriptedTranslator:
    """Translates by tagging: ``"[de] text"``. A text named in ``failures`` fails that many
    times (a timeout) before it succeeds; one named in ``delays`` takes that long each call.
    ``calls`` counts the calls per text."""

    name = "scripted"
    is_identity = False

    def __init__(
        self,
        delays: Mapping[str, float] | None = None,
        failures: Mapping[str, int] | None = None,
    ) -> None:
        self.delays = dict(delays or {})
        self.failures = dict(failures or {})
        self.calls: dict[str, int] = {}

    async def translate(self, text: str, source: str, target: str) -> str:
        self.calls[text] = self.calls.get(text, 0) + 1
        await asyncio.sleep(self.delays.get(text, 0.0))
        if self.calls[text] <= self.failures.get(text, 0):
            raise TimeoutError(f"translation of {text!r} timed out")
        return f"[{target}] {text}"


@dataclass
class ScriptedRetriever:
    """A memory that answers each query with the query itself: one page named after its last
    word and one evidence item holding it. A query containing a word of ``delays`` takes that
    long; one containing ``fail_on`` fails. Queries, cancelled queries and remembered
    evidence are recorded."""

    delays: dict[str, float] = field(default_factory=dict)
    fail_on: str | None = None
    queries: list[str] = field(default_factory=list)
    cancelled: list[str] = field(default_factory=list)
    remembered: list[Evidence] = field(default_factory=list)

    async def retrieve(self, query: str, sticky: tuple[str, ...]) -> Retrieved:
        self.queries.append(query)
        try:
            for word, delay in self.delays.items():
                if word in query:
                    await asyncio.sleep(delay)
        except asyncio.CancelledError:
            self.cancelled.append(query)
            raise
        if self.fail_on and self.fail_on in query:
            raise RuntimeError(f"index unavailable for {query!r}")
        return Retrieved(
            ("page-" + query.split()[-1].lower(),), (Recalled(query, "evidence", 1.0, query),)
        )

    async def remember(self, evidence: Evidence) -> None:
        self.remembered.append(evidence)


class HashingEmbedder:
    """Texts as L2-normalized bags of hashed words: texts sharing words are near, others are
    not, with no model to load. Deterministic across processes."""

    unrelated = 0.0
    weight = 0.9

    def __init__(self, dim: int = 256) -> None:
        self.dim = dim
        self.name = f"hashing-{dim}"
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        rows = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in re.findall(r"\w+", text.casefold()):
                digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
                rows[i, int.from_bytes(digest[:4], "little") % self.dim] += 1.0
            norm = float(np.linalg.norm(rows[i]))
            if norm:
                rows[i] /= norm
        return rows

    def embed_query(self, text: str) -> np.ndarray:
        row: np.ndarray = self.embed([text])[0]
        return row


class FakeClock:
    """The pipeline's clock (``() -> datetime``, UTC) that moves only when told."""

    def __init__(self, now: datetime | None = None) -> None:
        self.now = now or datetime(2026, 1, 1, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> datetime:
        self.now += timedelta(seconds=seconds)
        return self.now


def silent_audio(path: str | Path, seconds: float, codec: str = "flac") -> Path:
    """``seconds`` of digital silence at ``path``: mono FLAC at 16 kHz (hours in a few MB) or
    Ogg Opus at 6 kbit/s (``codec="opus"``, an hour in 3 MB), encoded by PyAV."""
    import av

    out_path = Path(path)
    opus = codec == "opus"
    rate, frame = (48_000, 960) if opus else (16_000, 4096)
    silence = np.zeros((1, frame), np.int16)
    with av.open(str(out_path), "w", format="ogg" if opus else "flac") as out:
        stream = out.add_stream("libopus" if opus else "flac", rate=rate, layout="mono")
        if opus:
            stream.bit_rate = 6000
        for i in range(max(1, round(seconds * rate / frame))):
            chunk = av.AudioFrame.from_ndarray(silence, format="s16", layout="mono")
            chunk.sample_rate, chunk.pts = rate, i * frame
            out.mux(stream.encode(chunk))
        out.mux(stream.encode(None))
    return out_path


def forge_length(path: str | Path, stated_s: float) -> Path:
    """Make the header of a FLAC or Ogg Opus file at ``path`` state ``stated_s`` seconds (0 for
    FLAC: "unknown", as a stream's encoder leaves it), whatever it holds; in place."""
    p = Path(path)
    data = bytearray(p.read_bytes())
    if data[:4] == b"fLaC":  # STREAMINFO's 36-bit total samples, after the block header
        rate = (data[18] << 12 | data[19] << 4 | data[20] >> 4) or 16_000
        total = round(stated_s * rate)
        data[21] = (data[21] & 0xF0) | (total >> 32 & 0x0F)
        data[22:26] = (total & 0xFFFFFFFF).to_bytes(4, "big")
    elif data[:4] == b"OggS":  # the last page's granule position: Opus counts 48 kHz samples
        last = data.rfind(b"OggS")
        segments = data[last + 26]
        size = 27 + segments + sum(data[last + 27 : last + 27 + segments])
        pre_skip = int.from_bytes(data[data.find(b"OpusHead") + 10 :][:2], "little")
        data[last + 6 : last + 14] = (round(stated_s * 48_000) + pre_skip).to_bytes(8, "little")
        data[last + 22 : last + 26] = bytes(4)
        data[last + 22 : last + 26] = _ogg_crc(bytes(data[last : last + size])).to_bytes(
            4, "little"
        )
    else:
        raise ValueError(f"{p}: neither FLAC nor Ogg")
    p.write_bytes(bytes(data))
    return p


def _ogg_crc(page: bytes) -> int:
    """Ogg's page checksum: CRC-32, polynomial 0x04C11DB7, not reflected, starting at 0."""
    crc = 0
    for byte in page:
        crc ^= byte << 24
        for _ in range(8):
            crc = (crc << 1) ^ 0x04C11DB7 if crc & 0x80000000 else crc << 1
        crc &= 0xFFFFFFFF
    return crc
