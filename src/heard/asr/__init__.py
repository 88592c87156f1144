"""Speech recognition: audio files, the Whisper models at hand, and the faster-whisper
transcriber behind a seam."""

from heard.asr.audio import SAMPLE_RATE, AudioInfo, load_audio, probe_audio
from heard.asr.models import ModelInfo, installed_models
from heard.asr.transcriber import Transcriber
from heard.asr.whisper import FasterWhisperTranscriber, WhisperOptions, load_model

__all__ = [
    "SAMPLE_RATE",
    "AudioInfo",
    "FasterWhisperTranscriber",
    "ModelInfo",
    "Transcriber",
    "WhisperOptions",
    "installed_models",
    "load_audio",
    "load_model",
    "probe_audio",
]
