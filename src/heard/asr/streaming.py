"""Streaming recognition: a re-decode loop over a growing audio buffer.

Every ``chunk_ms`` of audio the current utterance's buffer is decoded again and
its text goes out as a ``partial``. Silero VAD on the buffer decides when the
utterance ended (``end_silence_ms`` of silence after speech): the utterance is
decoded once more and goes out as the ``final``, and the buffer restarts after
it. In continuous speech, Whisper's own segments (sentence-like, punctuated or
not) are committed once two consecutive decodes agree on them: they go out as a
``final`` and the buffer is trimmed at their end, so finals keep coming and
compute per step stays bounded however long someone talks. An utterance longer
than ``max_utterance_s`` without such agreement is cut at a segment end.

Two clocks: ``simulated`` stamps events with the audio time at which they could
exist; ``compute`` adds the real decoding time, as a live stream would see it
(if decoding is slower than the audio, the next step takes all audio that
arrived meanwhile).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from heard.asr.audio import SAMPLE_RATE
from heard.asr.whisper import WhisperOptions, load_model
from heard.registry import Registry
from heard.speech import Word
from heard.transcript.events import DEFAULT_SPEAKER, EventKind, TranscriptEvent

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "STREAM_CLOCKS",
    "Decoded",
    "StreamOptions",
    "StreamingRecognizer",
    "stream_events",
    "strip_punctuation",
]

StreamClock = Literal["simulated", "compute"]

STREAM_CLOCKS: Registry[Callable[[float], float]] = Registry(
    "stream clock", {"simulated": lambda decode_ms: 0.0, "compute": lambda decode_ms: decode_ms}
)
"""How much of a step's decoding time each clock adds to the stream's time."""


@dataclass(frozen=True, slots=True)
class Decoded:
    """What one decode step heard: the utterance so far (a partial) or its final text."""

    kind: EventKind
    text: str
    start_s: float = 0.0
    """Where its speech starts in the stream (seconds of audio received)."""
    end_s: float = 0.0
    words: tuple[Word, ...] = ()
    """Its words, at their times in the stream (with ``StreamOptions.word_timestamps``)."""
    endpoint: bool = False
    """A final that ends an utterance (silence after it, or the stream's end); a final
    committed inside continuous speech is not one."""


@dataclass(frozen=True, slots=True)
class StreamOptions:
    chunk_ms: int = 1000
    """Audio between two re-decodes; each one emits a partial."""
    end_silence_ms: int = 800
    """Silence after speech that ends an utterance (VAD)."""
    max_utterance_s: float = 20.0
    """Longer utterances are cut at a segment end (Whisper's window is 30 s)."""
    beam_size: int = 1
    """Greedy decoding for partials and finals: latency matters more than the last 1% WER."""
    strip_punctuation: bool = False
    """Emulate recognizers that never punctuate (and do not case)."""
    word_timestamps: bool = False
    """Decode each word's time too (a little slower): for clients that want words."""
    clock: StreamClock = "simulated"

    def __post_init__(self) -> None:
        if self.chunk_ms <= 0:
            raise ValueError(f"chunk_ms must be > 0, got {self.chunk_ms}")


_PUNCTUATION = re.compile(r"[^\w\s'\-]")


def strip_punctuation(text: str) -> str:
    """'Hello, world. It's here!' -> 'hello world it's here'."""
    return " ".join(_PUNCTUATION.sub("", text).lower().split())


def _speech(audio: npt.NDArray[np.float32]) -> list[dict[str, int]]:
    from faster_whisper.vad import VadOptions, get_speech_timestamps

    return list(
        get_speech_timestamps(audio, VadOptions(min_silence_duration_ms=300, speech_pad_ms=100))
    )


class StreamingRecognizer:
    """The re-decode loop over audio that arrives in pieces (a microphone, a socket).

    ``push(samples)`` adds audio and, once ``chunk_ms`` of new audio is waiting, decodes
    the current utterance once, over *all* audio that has arrived: when decoding is slower
    than the audio, steps grow instead of falling further behind. ``finish()`` ends the
    stream. ``chunk_ms`` may be raised on the fly (the server does, when it degrades).
    """

    def __init__(
        self,
        *,
        options: StreamOptions | None = None,
        whisper: WhisperOptions | None = None,
        speaker: str = DEFAULT_SPEAKER,
    ) -> None:
        import numpy as np

        self.options = options or StreamOptions()
        self.chunk_ms = self.options.chunk_ms
        self.speaker = speaker
        whisper = whisper or WhisperOptions()
        self._model = load_model(whisper)
        self.language = self._model.language(whisper.language)
        """The language decoded in: given, English for an English-only model, else detected
        on each decode until the first final, and kept from then on."""
        self._audio = np.zeros(0, dtype=np.float32)
        self._offset = 0  # absolute index of self._audio[0]
        self._utt_start = 0
        self._decoded_to = 0
        self._previous: list[str] = []  # segment texts of the previous decode of this buffer

    @property
    def received(self) -> int:
        """Samples received so far."""
        return self._offset + len(self._audio)

    @property
    def decoded_to(self) -> int:
        """Samples up to which the last step decoded."""
        return self._decoded_to

    def append(self, samples: npt.NDArray[np.float32]) -> None:
        import numpy as np

        self._audio = np.concatenate([self._audio, np.asarray(samples, dtype=np.float32)])

    def push(self, samples: npt.NDArray[np.float32]) -> list[Decoded]:
        self.append(samples)
        if self.received - self._decoded_to < SAMPLE_RATE * self.chunk_ms // 1000:
            return []
        return self.step(self.received)

    def _text(self, segments: list[Any]) -> str:
        text = " ".join(s.text.strip() for s in segments).strip()
        return strip_punctuation(text) if self.options.strip_punctuation else text

    def _decoded(
        self, kind: EventKind, segments: list[Any], base: int, *, endpoint: bool = False
    ) -> Decoded:
        """``segments`` of a buffer starting at sample ``base``, as one event."""
        at = base / SAMPLE_RATE
        words = tuple(
            Word(
                round(at + w.start, 3),
                round(at + w.end, 3),
                strip_punctuation(w.word.strip()) if self.options.strip_punctuation
                else w.word.strip(),
                round(w.probability, 4),
            )
            for s in segments
            for w in (s.words or ())
        )  # fmt: skip
        start, end = (at + segments[0].start, at + segments[-1].end) if segments else (at, at)
        return Decoded(kind, self._text(segments), round(start, 3), round(end, 3), words, endpoint)

    def _decode(self, audio: npt.NDArray[np.float32], *, final: bool = False) -> list[Any]:
        segments, info = self._model.whisper.transcribe(
            audio,
            language=self.language,
            beam_size=self.options.beam_size,
            condition_on_previous_text=False,
            without_timestamps=False,
            word_timestamps=self.options.word_timestamps,
            vad_filter=False,
        )
        kept = [s for s in segments if s.text.strip()]
        if final and kept and self.language is None:
            self.language = info.language
        return kept

    def step(self, audio_end: int) -> list[Decoded]:
        """Decode the current utterance up to ``audio_end`` (absolute samples)."""
        o = self.options
        self._decoded_to = audio_end
        buffer = self._audio[self._utt_start - self._offset : audio_end - self._offset]
        events: list[Decoded] = []
        speech = _speech(buffer)
        if not speech:
            # keep only a short tail
            self._utt_start = max(self._utt_start, audio_end - SAMPLE_RATE // 2)
            self._previous = []
        else:
            speech_end = speech[-1]["end"]
            silence_ms = (len(buffer) - speech_end) * 1000 / SAMPLE_RATE
            if silence_ms >= o.end_silence_ms:
                segments = self._decode(buffer[:speech_end], final=True)
                final = self._decoded(EventKind.FINAL, segments, self._utt_start, endpoint=True)
                if final.text:
                    events.append(final)
                self._utt_start += speech_end
                self._previous = []
            elif len(buffer) / SAMPLE_RATE >= o.max_utterance_s:
                segments = self._decode(buffer, final=True)
                if len(segments) > 1:
                    done, cut = segments[:-1], int(segments[-2].end * SAMPLE_RATE)
                else:
                    done, cut = segments, len(buffer)
                final = self._decoded(EventKind.FINAL, done, self._utt_start)
                if final.text:
                    events.append(final)
                self._utt_start += max(cut, 1)
                self._previous = []
            else:
                segments = self._decode(buffer)
                keys = [strip_punctuation(seg.text) for seg in segments]
                agreed = 0
                while (
                    agreed < len(segments) - 1
                    and agreed < len(self._previous)
                    and keys[agreed] == self._previous[agreed]
                ):
                    agreed += 1
                base = self._utt_start
                if agreed:
                    # Whisper's first segments came out the same twice: commit them.
                    events.append(self._decoded(EventKind.FINAL, segments[:agreed], base))
                    self._utt_start += int(segments[agreed - 1].end * SAMPLE_RATE)
                    segments, keys = segments[agreed:], keys[agreed:]
                self._previous = keys
                partial = self._decoded(EventKind.PARTIAL, segments, base)
                if partial.text:
                    events.append(partial)
        # audio before the utterance is never looked at again
        drop = self._utt_start - self._offset
        if drop > 0:
            self._audio = self._audio[drop:]
            self._offset += drop
        return events

    def finish(self) -> list[Decoded]:
        """The stream ended: the rest of the utterance, if it holds speech, is the final."""
        rest = self._audio[self._utt_start - self._offset :]
        base = self._utt_start
        self._utt_start = self._decoded_to = self.received
        if len(rest) and _speech(rest):
            segments = self._decode(rest, final=True)
            final = self._decoded(EventKind.FINAL, segments, base, endpoint=True)
            if final.text:
                return [final]
        return []


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
    recognizer = StreamingRecognizer(options=o, whisper=whisper, speaker=speaker)
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
        events = recognizer.step(audio_end)
        now_ms += advance((time.perf_counter() - started) * 1000)
        for d in events:
            yield TranscriptEvent(stamp(now_ms), d.kind, d.text, speaker)
    started = time.perf_counter()
    events = recognizer.finish()
    now_ms += advance((time.perf_counter() - started) * 1000)
    for d in events:
        yield TranscriptEvent(stamp(now_ms), d.kind, d.text, speaker)
