"""Speech recognition: audio files and the faster-whisper transcriber behind a seam."""

from heard.asr.audio import SAMPLE_RATE, AudioInfo, load_audio, probe_audio
from heard.asr.transcriber import Transcriber
from heard.asr.whisper import FasterWhisperTranscriber, WhisperOptions, default_model_path

__all__ = [
    "SAMPLE_RATE",
    "AudioInfo",
    "FasterWhisperTranscriber",
    "Transcriber",
    "WhisperOptions",
    "default_model_path",
    "load_audio",
    "probe_audio",
]
