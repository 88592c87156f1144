"""Audio files in, 16 kHz mono float32 samples out (any format PyAV/FFmpeg decodes).

``probe_audio`` checks a file cheaply before anything is stored; ``load_audio``
decodes it, optionally one channel of a stereo file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, cast

from heard.errors import AudioError, MissingDependencyError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["SAMPLE_RATE", "AudioInfo", "load_audio", "probe_audio"]

SAMPLE_RATE = 16_000


@dataclass(frozen=True, slots=True)
class AudioInfo:
    path: Path
    duration_s: float
    channels: int


def _check_file(path: Path) -> None:
    if not path.exists():
        raise AudioError(f"{path}: no such file")
    if not path.is_file():
        raise AudioError(f"{path}: not a regular file")
    if path.stat().st_size == 0:
        raise AudioError(f"{path}: empty file, expected audio")


def probe_audio(path: str | Path) -> AudioInfo:
    """Open ``path`` and check it holds an audio stream; nothing is decoded."""
    p = Path(path)
    _check_file(p)
    try:
        import av
    except ImportError as e:  # pragma: no cover - av comes with faster-whisper
        raise MissingDependencyError(
            "PyAV is missing (it comes with heard: reinstall heard)"
        ) from e
    try:
        with av.open(str(p), metadata_errors="ignore") as container:
            streams = container.streams.audio
            if not streams:
                raise AudioError(f"{p}: no audio stream, expected an audio file")
            stream = streams[0]
            duration_s = float(container.duration / av.time_base) if container.duration else 0.0
            channels = stream.codec_context.channels or 1
    except AudioError:
        raise
    except Exception as e:  # noqa: BLE001 - PyAV raises many types for bad files
        raise AudioError(f"{p}: cannot read as audio ({e})") from None
    return AudioInfo(p, duration_s, channels)


def load_audio(path: str | Path, channel: int | None = None) -> npt.NDArray[np.float32]:
    """Decode ``path`` to 16 kHz float32 mono; ``channel`` 0 or 1 picks one of a stereo pair."""
    p = Path(path)
    _check_file(p)
    if channel not in (None, 0, 1):
        raise AudioError(f"{p}: channel must be 0 (left) or 1 (right), got {channel}")
    try:
        from faster_whisper import decode_audio
    except ImportError as e:  # pragma: no cover - depends on the install
        raise MissingDependencyError(
            "faster-whisper is missing (it comes with heard: reinstall heard)"
        ) from e
    try:
        if channel is None:
            samples = decode_audio(str(p), sampling_rate=SAMPLE_RATE)
        else:
            samples = decode_audio(str(p), sampling_rate=SAMPLE_RATE, split_stereo=True)[channel]
    except Exception as e:  # noqa: BLE001 - PyAV raises many types for bad files
        raise AudioError(f"{p}: cannot decode audio ({e})") from None
    if len(samples) == 0:
        raise AudioError(f"{p}: no audio samples")
    return cast("npt.NDArray[np.float32]", samples)
