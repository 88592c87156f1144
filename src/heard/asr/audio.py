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

__all__ = [
    "MAX_TRACK_S",
    "SAMPLE_RATE",
    "AudioInfo",
    "check_duration",
    "load_audio",
    "probe_audio",
]

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


MAX_TRACK_S = 4 * 3600.0
"""The longest track heard takes by default ($HEARD_MAX_TRACK_S): decoded, a track is held in
memory whole (16 kHz float32: 230 MB an hour), so a small file of hours of low-bitrate audio
must not be taken on trust."""


def check_duration(info: AudioInfo, max_s: float) -> None:
    """Refuse a track longer than ``max_s`` seconds, naming the limit, before it is decoded."""
    if info.duration_s > max_s:
        raise AudioError(
            f"{info.path}: {_span(info.duration_s)} of audio; a track may hold at most "
            f"{_span(max_s)} ($HEARD_MAX_TRACK_S)"
        )


def _span(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:.3g} h"
    if seconds >= 60:
        return f"{seconds / 60:.3g} min"
    return f"{seconds:.3g} s"


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
