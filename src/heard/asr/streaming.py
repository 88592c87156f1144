"""Streaming recognition: a re-decode loop over a short audio buffer, committing words.

Every ``chunk_ms`` of audio the current buffer is decoded again (``heard.asr.decoder``: in
the shortest Whisper context that holds it, with word times). What two consecutive decodes
agree on, and what a decode heard with a second of audio after it (less, for a word Whisper
is sure of), is committed word by word (``heard.asr.commits``; ``StreamOptions.commit``)
and goes out as a ``final`` inside continuous speech; the rest goes out as the ``partial``
(each a ``Decoded`` step, the commits stage's record: ``heard.transcript.utterances``).
Once the buffer is longer than ``trim_s`` it is cut in a pause after the last committed
word, so a word is final about a second or two after it is spoken and each step decodes a
few seconds of audio however long someone talks. A ``SpareRule`` may have each decode
spend spare CPU (off by default): hear the audio before its buffer again (its words were
committed and are dropped), read with a beam, let the buffer grow longer before it is cut.
No prompt: a bad decode is never fed back.
Silero VAD on the buffer decides when an utterance ended (``end_silence_ms`` of silence
after speech): its last decode's new words are the endpoint ``final``. A buffer that
reaches ``max_utterance_s`` with nothing agreed commits all but its last word.

``stream_events`` replays a recording as a live stream through the commits stage
(``heard.transcript.utterances``: committed words gather into sentence finals).

Two clocks: ``simulated`` stamps events with the audio time at which they could
exist; ``compute`` adds the real decoding time, as a live stream would see it
(if decoding is slower than the audio, the next step takes all audio that
arrived meanwhile).
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import pairwise
from typing import TYPE_CHECKING, Literal, Protocol

from heard.asr.audio import SAMPLE_RATE
from heard.asr.commits import CommitRule, WordCommits
from heard.asr.decoder import Request
from heard.asr.service import Decoder, DecodeService, DirectDecoder
from heard.asr.whisper import WhisperOptions, load_model
from heard.registry import Registry
from heard.speech import Word
from heard.transcript.events import DEFAULT_SPEAKER, EventKind, TranscriptEvent
from heard.transcript.utterances import Decoded, Utterances

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "CONTEXT_S",
    "SPARE_RULES",
    "STREAM_CLOCKS",
    "Decoded",
    "SpareRule",
    "StreamOptions",
    "StreamingRecognizer",
    "WhisperStreamingRecognizer",
    "stream_events",
    "strip_punctuation",
]

StreamClock = Literal["simulated", "compute"]

TRIM_S = 3.0
"""Cut the buffer after the last committed word once it is longer than this. Measured with
``bench/capacity.py`` (BENCHMARKS.md, capacity)."""

CONTEXT_S = 0.0
"""Audio before each buffer a decode hears again, when the CPU allows (``SpareRule``). Off:
4 s (chosen on a tuning set) moved held-out WER by -0.005 on average at 1.3-1.6x the CPU, and
on a server a lone stream's commit p95 went from 1.87 to 2.89 s by phone (BENCHMARKS.md,
issue 58). ``SpareRule(context_s=4.0)`` turns it on."""

FORCE_TRIM_S = 8.0
"""A buffer this long with no pause to cut in is cut after its last committed word."""

STREAM_CLOCKS: Registry[Callable[[float], float]] = Registry(
    "stream clock", {"simulated": lambda decode_ms: 0.0, "compute": lambda decode_ms: decode_ms}
)
"""How much of a step's decoding time each clock adds to the stream's time."""


@dataclass(frozen=True, slots=True)
class SpareRule:
    """What each decode of a live stream spends beyond the lean reading while decoding has CPU
    to spare, and how it gives that back as the load rises: the audio before its buffer,
    heard again (``context_s``), Whisper's beam (``beam_size``) and how long its buffer grows
    before it is cut in a pause (``trim_s``, cut anyway at ``force_trim_s``).

    The words of the context were committed already and are dropped; hearing them steadies
    tiny.en's reading of what follows (a phrase of a phone call decoded alone from its first
    word reads worse than the same phrase with the seconds before it). A beam and longer
    buffers read more of each utterance before its words are committed. All of it costs
    CPU: a 3 s buffer with 4 s before it encodes 10 s instead of 6; beam 5 with 15 s buffers
    costs 1.7-2.7x greedy with 3 s. Off by default (``SpareRule()`` spends nothing): no
    setting measured read better on every held-out set (BENCHMARKS.md, issue 58);
    ``SpareRule.wide()`` is the one that read best pooled.

    A stream that decodes alone always spends. On a shared ``DecodeService`` the context
    shrinks as the workers' load rises from ``full_below`` to ``none_above``; the beam and the
    longer buffers start once the load is at most ``full_below`` and stop once it passes
    ``none_above`` (the stream's own spending raises the load: a lower bar to start than to
    stop keeps it from flapping). Both are below the load at which the service widens the
    step (``heard.asr.service.BUSY_ABOVE``): spare work is given back before latency."""

    context_s: float = CONTEXT_S
    beam_size: int = 1
    trim_s: float = TRIM_S
    force_trim_s: float = FORCE_TRIM_S
    full_below: float = 0.4
    none_above: float = 0.7

    def __post_init__(self) -> None:
        if self.context_s < 0 or not 0 <= self.full_below < self.none_above:
            raise ValueError("context_s >= 0 and 0 <= full_below < none_above, please")
        if self.beam_size < 1 or self.force_trim_s < self.trim_s:
            raise ValueError("beam_size >= 1 and force_trim_s >= trim_s, please")

    @classmethod
    def wide(cls) -> SpareRule:
        """Beam 5 and buffers of up to 15 s (cut anyway at 20 s) while the CPU is spare: over
        1,293 held-out words of four real sets, 0.016-0.025 WER better than greedy with 3 s
        buffers at 1.7-2.7x the CPU; better on AMI's calls, worse on pyannote's (issue 58)."""
        return cls(beam_size=5, trim_s=15.0, force_trim_s=20.0)

    def before_s(self, load: float | None) -> float:
        """The seconds before the buffer a decode hears at ``load`` (None: the stream
        decodes alone), in half seconds."""
        if load is None or load <= self.full_below:
            return self.context_s
        share = max(0.0, (self.none_above - load) / (self.none_above - self.full_below))
        return math.floor(self.context_s * share * 2) / 2

    def spends(self, load: float | None, *, spending: bool) -> bool:
        """Whether a decode at ``load`` reads with this rule's beam and buffer length, given
        whether the stream's last decode did (``spending``)."""
        if load is None:
            return True
        return load <= (self.none_above if spending else self.full_below)


SPARE_RULES: Registry[SpareRule] = Registry(
    "spare-CPU rule", {"off": SpareRule(), "wide": SpareRule.wide()}
)
"""What live streams may spend spare CPU on, by name (``heard serve --spare-cpu``)."""


@dataclass(frozen=True, slots=True)
class StreamOptions:
    chunk_ms: int = 1000
    """Audio between two re-decodes; each one emits a partial."""
    end_silence_ms: int = 800
    """Silence after speech that ends an utterance (VAD)."""
    max_utterance_s: float = 20.0
    """A buffer this long with nothing agreed commits all but its last word."""
    trim_s: float = TRIM_S
    """A buffer longer than this is cut after its last committed word."""
    force_trim_s: float = FORCE_TRIM_S
    """A buffer this long with no pause to cut in is cut after its last committed word."""
    beam_size: int = 1
    """Whisper's beam for each decode, at any load (``spare`` may widen it while the CPU is
    spare)."""
    strip_punctuation: bool = False
    """Emulate recognizers that never punctuate (and do not case)."""
    word_timestamps: bool = False
    """Give each decoded event its words' times (they are always decoded: commits need them),
    for clients that want words."""
    clock: StreamClock = "simulated"
    commit: CommitRule = field(default_factory=CommitRule)
    """When a word inside continuous speech is final (``heard.asr.commits``)."""
    spare: SpareRule = field(default_factory=SpareRule)
    """What each decode spends beyond the above while the CPU is spare (off by default)."""

    def __post_init__(self) -> None:
        if self.chunk_ms <= 0:
            raise ValueError(f"chunk_ms must be > 0, got {self.chunk_ms}")
        if self.beam_size < 1 or self.force_trim_s < self.trim_s:
            raise ValueError("beam_size >= 1 and force_trim_s >= trim_s, please")


_PUNCTUATION = re.compile(r"[^\w\s'\-]")


def strip_punctuation(text: str) -> str:
    """'Hello, world. It's here!' -> 'hello world it's here'."""
    return " ".join(_PUNCTUATION.sub("", text).lower().split())


def _speech(audio: npt.NDArray[np.float32]) -> list[dict[str, int]]:
    from faster_whisper.vad import VadOptions, get_speech_timestamps

    return list(
        get_speech_timestamps(audio, VadOptions(min_silence_duration_ms=300, speech_pad_ms=100))
    )


class StreamingRecognizer(Protocol):
    """What a live microphone decodes with (``heard.asr.microphone``): audio in, in pieces;
    what it decoded out, as ``Decoded`` steps. ``WhisperStreamingRecognizer`` is heard's (on
    faster-whisper, alone or on a shared ``DecodeService``); ``heard.testing`` has a scripted
    one for tests that need no model."""

    chunk_ms: int
    """Audio between two decodes; the microphone raises it when decoding falls behind."""

    @property
    def decoded_to(self) -> int:
        """Samples up to which the last step decoded."""
        ...

    def push(self, samples: npt.NDArray[np.float32]) -> list[Decoded]:
        """Add 16 kHz mono audio; what a step decoded, if one ran."""
        ...

    def finish(self) -> list[Decoded]:
        """The stream ended (or paused for good): decode the rest; its final."""
        ...

    def paced_step(self) -> tuple[int, float] | None:
        """The step a service shared with other streams asks for, and how loaded it is;
        None when this recognizer paces itself (the microphone then does)."""
        ...


class WhisperStreamingRecognizer:
    """The re-decode loop over audio that arrives in pieces (a microphone, a socket).

    ``push(samples)`` adds audio and, once ``chunk_ms`` of new audio is waiting, decodes
    the current utterance once, over *all* audio that has arrived: when decoding is slower
    than the audio, steps grow instead of falling further behind. ``finish()`` ends the
    stream. ``chunk_ms`` may be raised on the fly (the server does, when it degrades).
    ``decoder`` decodes the buffers (default: this stream's own; the server shares one
    ``DecodeService`` among its streams).
    """

    def __init__(
        self,
        *,
        options: StreamOptions | None = None,
        whisper: WhisperOptions | None = None,
        speaker: str = DEFAULT_SPEAKER,
        decoder: Decoder | None = None,
    ) -> None:
        import numpy as np

        self.options = options or StreamOptions()
        self.chunk_ms = self.options.chunk_ms
        self.speaker = speaker
        whisper = whisper or WhisperOptions()
        self._model = load_model(whisper)
        self.language = self._model.language(whisper.language)
        """The language decoded in: given, English for an English-only model, else detected
        on each decode until the first commit, and kept from then on."""
        self._decoder: Decoder = decoder or DirectDecoder(self._model)
        if isinstance(self._decoder, DecodeService):
            # a shared service sets the step: start at its shortest, so a client is told
            # only when load widens it
            self.chunk_ms = self._decoder.pace.min_ms
        self._audio = np.zeros(0, dtype=np.float32)
        self._offset = 0  # absolute index of self._audio[0]
        self._utt_start = 0
        self._decoded_to = 0
        self._commits = WordCommits(self.options.commit)
        self._detected: str | None = None
        self._heard_to = 0  # where the last decode of speech ended (absolute samples)
        self._spending = False  # the last step read with the spare rule's beam and buffers

    @property
    def received(self) -> int:
        """Samples received so far."""
        return self._offset + len(self._audio)

    @property
    def decoded_to(self) -> int:
        """Samples up to which the last step decoded."""
        return self._decoded_to

    def paced_step(self) -> tuple[int, float] | None:
        if not isinstance(self._decoder, DecodeService):
            return None
        return self._decoder.step_ms, round(self._decoder.pace.last_load, 2)

    def append(self, samples: npt.NDArray[np.float32]) -> None:
        import numpy as np

        self._audio = np.concatenate([self._audio, np.asarray(samples, dtype=np.float32)])

    def push(self, samples: npt.NDArray[np.float32]) -> list[Decoded]:
        """Add audio; once a step's worth waits, decode up to the last whole step of it. The
        steps fall on the same audio whatever the client's frame size (a resampler's delay
        shifted 8 kHz telephony by 32 samples, every step by a frame, and tiny.en heard "my
        fellow Americans" as "am i fellow america s"); what is left waits for the next."""
        self.append(samples)
        chunk = SAMPLE_RATE * self.chunk_ms // 1000
        waiting = self.received - self._decoded_to
        if waiting < chunk:
            return []
        return self.step(self._decoded_to + waiting // chunk * chunk)

    def _word(self, w: Word) -> Word:
        return Word(w.start, w.end, strip_punctuation(w.text), w.probability) if (
            self.options.strip_punctuation
        ) else w  # fmt: skip

    def _decoded(self, kind: EventKind, words: list[Word], *, endpoint: bool = False) -> Decoded:
        words = [self._word(w) for w in words if strip_punctuation(w.text) or
                 not self.options.strip_punctuation]  # fmt: skip
        text = " ".join(w.text for w in words)
        at = self._commits.committed_end_s  # an endpoint with nothing new: where speech ended
        start, end = (words[0].start, words[-1].end) if words else (at, at)
        timed = tuple(words) if self.options.word_timestamps else ()
        return Decoded(kind, text, start, end, timed, endpoint)

    def _load(self) -> float | None:
        """How busy the shared service's workers were (None: this stream decodes alone)."""
        return self._decoder.pace.last_load if isinstance(self._decoder, DecodeService) else None

    def _context(self) -> int:
        """Where the next decode starts (absolute samples): up to the spare rule's seconds of
        audio before the buffer, heard again (``SpareRule``)."""
        before = round(self.options.spare.before_s(self._load()) * SAMPLE_RATE)
        return max(self._offset, self._utt_start - before)

    @property
    def beam_size(self) -> int:
        """Whisper's beam for this step's decodes."""
        o = self.options
        return max(o.beam_size, o.spare.beam_size) if self._spending else o.beam_size

    def _trims(self) -> tuple[float, float]:
        """The buffer lengths (seconds) at which this step cuts it in a pause, and at which
        it cuts it anyway."""
        o = self.options
        if not self._spending:
            return o.trim_s, o.force_trim_s
        return max(o.trim_s, o.spare.trim_s), max(o.force_trim_s, o.spare.force_trim_s)

    def _decode(self, end: int) -> list[Word]:
        """The buffer's words up to ``end`` (absolute samples), at their times in the stream;
        decoded with the context before it, whose words are dropped."""
        start = self._context()
        audio = self._audio[start - self._offset : end - self._offset]
        language = self.language
        if language is None:  # detected on each decode until the first commit
            buffer = self._audio[self._utt_start - self._offset : end - self._offset]
            language = self._detected = str(self._model.whisper.detect_language(buffer)[0])
        # no prompt: given the committed "ask not what", tiny.en goes on with the words it
        # remembers, not the ones said (a famous line doubled at 1 s steps); a bad decode is
        # never fed back (heard.asr.whisper's rule for files too); on real tuning calls the
        # committed text before the buffer as a prompt dropped words (BENCHMARKS.md, issue 58)
        request = Request(audio, word_timestamps=True, beam_size=self.beam_size)
        segments = self._decoder.decode(language, [request])[0]
        at = start / SAMPLE_RATE
        buffer_s = (self._utt_start - start) / SAMPLE_RATE
        return [
            Word(round(at + w.start, 3), round(at + w.end, 3), w.text, w.probability)
            for s in segments
            for w in s.words
            if (w.start + w.end) / 2 >= buffer_s  # a word of the context: heard before
        ]

    def step(self, audio_end: int) -> list[Decoded]:
        """Decode the current utterance up to ``audio_end`` (absolute samples)."""
        o = self.options
        self._decoded_to = audio_end
        self._spending = o.spare.spends(self._load(), spending=self._spending)
        buffer = self._audio[self._utt_start - self._offset : audio_end - self._offset]
        events: list[Decoded] = []
        speech = _speech(buffer)
        if not speech:
            if self._commits.open and len(buffer) * 1000 >= o.end_silence_ms * SAMPLE_RATE:
                # the buffer was cut behind the utterance's last words: its silence ends it
                events.append(self._decoded(EventKind.FINAL, [], endpoint=True))
                self._commits.close()
            # keep only a short tail
            self._utt_start = max(self._utt_start, audio_end - SAMPLE_RATE // 2)
        else:
            speech_end = speech[-1]["end"]
            silence_ms = (len(buffer) - speech_end) * 1000 / SAMPLE_RATE
            # the last decode already heard all the speech there is: nothing new to decode
            heard_all = self._utt_start + speech_end <= self._heard_to
            if silence_ms >= o.end_silence_ms:
                last = (self._commits.pending if heard_all
                        else self._decode(self._utt_start + speech_end))  # fmt: skip
                done = self._commits.endpoint(last)
                if done or self._commits.open:
                    events.append(self._decoded(EventKind.FINAL, done, endpoint=True))
                self._commits.close()
                self._utt_start += speech_end
                self._remember(done)
            elif heard_all:
                pass  # a pause: the speaker said nothing since, the next step may end it
            else:
                words = self._decode(audio_end)
                self._heard_to = audio_end
                done, pending = self._commits.agree(words, heard_to=audio_end / SAMPLE_RATE)
                if len(buffer) / SAMPLE_RATE >= o.max_utterance_s and len(pending) > 1:
                    # nothing agreed for a whole window: all but the last word is final
                    done += self._commits.endpoint(pending[:-1])
                    pending = pending[-1:]
                if done:
                    events.append(self._decoded(EventKind.FINAL, done))
                    self._remember(done)
                if pending:
                    events.append(self._decoded(EventKind.PARTIAL, pending))
                trim_s, force_trim_s = self._trims()
                if len(buffer) / SAMPLE_RATE >= trim_s:
                    long = len(buffer) / SAMPLE_RATE >= force_trim_s
                    self._trim(speech, audio_end, force=long)
        events = [e for e in events if e.text or e.endpoint]
        # audio before the utterance's context is never looked at again
        drop = self._utt_start - round(o.spare.context_s * SAMPLE_RATE) - self._offset
        if drop > 0:
            self._audio = self._audio[drop:]
            self._offset += drop
        return events

    def _trim(self, speech: list[dict[str, int]], audio_end: int, *, force: bool) -> None:
        """Cut the buffer in the last pause (VAD) behind the committed words
        (``WordCommits.cut_at``); with none, once it is long enough to force, in an earlier
        pause or after them."""
        at = self._utt_start / SAMPLE_RATE
        pauses = [(at + left["end"] / SAMPLE_RATE, at + right["start"] / SAMPLE_RATE)
                  for left, right in pairwise(speech)]  # fmt: skip
        found = self._commits.cut_at(pauses, force=force)
        if found is not None:
            cut = found[0]
            self._utt_start = max(self._utt_start, min(round(cut * SAMPLE_RATE), audio_end))

    def _remember(self, done: list[Word]) -> None:
        """The first committed words fix a detected language."""
        if done and self.language is None:
            self.language = self._detected

    def finish(self) -> list[Decoded]:
        """The stream ended: the rest of the utterance, if it holds speech, is the final."""
        rest = self._audio[self._utt_start - self._offset :]
        self._decoded_to = self.received
        events: list[Decoded] = []
        done: list[Word] = []
        if len(rest) and _speech(rest):
            done = self._commits.endpoint(self._decode(self.received))
            self._remember(done)
        if done or self._commits.open:
            events.append(self._decoded(EventKind.FINAL, done, endpoint=True))
        self._commits.close()
        self._utt_start = self.received
        return events


def stream_events(
    samples: npt.NDArray[np.float32],
    *,
    options: StreamOptions | None = None,
    whisper: WhisperOptions | None = None,
    speaker: str = DEFAULT_SPEAKER,
) -> Iterator[TranscriptEvent]:
    """Replay 16 kHz mono ``samples`` as a live stream; yield partial and final events."""
    o = options or StreamOptions()
    advance = STREAM_CLOCKS[o.clock]
    recognizer = WhisperStreamingRecognizer(options=o, whisper=whisper, speaker=speaker)
    utterances = Utterances(speaker)
    recognizer.append(samples)
    chunk = SAMPLE_RATE * o.chunk_ms // 1000
    total = len(samples)
    now_ms = 0.0
    audio_end = 0
    last_t = 0

    def stamp(t_ms: float) -> int:
        nonlocal last_t
        last_t = max(last_t, round(t_ms))
        return last_t

    while audio_end < total:
        audio_end = min(total, max(audio_end + chunk, round(now_ms * SAMPLE_RATE / 1000)))
        now_ms = max(now_ms, audio_end * 1000 / SAMPLE_RATE)
        started = time.perf_counter()
        found = recognizer.step(audio_end)
        now_ms += advance((time.perf_counter() - started) * 1000)
        yield from utterances.events(found, stamp(now_ms))
    started = time.perf_counter()
    found = recognizer.finish()
    now_ms += advance((time.perf_counter() - started) * 1000)
    yield from utterances.events(found, stamp(now_ms))
