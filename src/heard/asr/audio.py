"""Audio files in, 16 kHz mono float32 samples out (any format PyAV/FFmpeg decodes).

``probe_audio`` reads a file's header; ``measure_audio`` also counts what its packets hold,
without decoding them, so that a file whose header lies about its length (or gives none) is
refused in a second, before any decoding work or storage. ``audio_windows`` decodes a file a
window at a time (so a track of hours never sits in memory whole), ``load_audio`` whole;
either optionally one of the file's channels (any: a Deepgram ``multichannel`` file may have
eight). Both still stop with an ``AudioError`` naming the limit once more than ``max_s``
seconds come out, for packets that carry no length.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from heard.errors import AudioError, MissingDependencyError
from heard.limits import MAX_TRACK_S

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "SAMPLE_RATE",
    "WINDOW_S",
    "AudioInfo",
    "Window",
    "audio_windows",
    "check_duration",
    "load_audio",
    "measure_audio",
    "open_input",
    "probe_audio",
    "tag_options",
]

SAMPLE_RATE = 16_000


@dataclass(frozen=True, slots=True)
class AudioInfo:
    path: Path
    duration_s: float
    """How long the file lasts: what its packets hold (``measure_audio``), else what its header
    says (0 when it says nothing)."""
    channels: int
    partly_counted: bool = False
    """The packets were counted only to the limit: the file lasts over ``duration_s``."""


def open_input(source: Any) -> Any:
    """``av.open(source)`` for reading, on every PyAV heard supports, with tags that are not
    UTF-8 (a Latin-1 title, say) taken as they come instead of refusing the file."""
    import av

    return av.open(source, mode="r", **tag_options(av.open))


@functools.cache
def tag_options(opener: Any) -> dict[str, Any]:
    """What ``open_input`` passes to ``av.open`` for tags that are not UTF-8. PyAV before 19
    raises UnicodeDecodeError on such a tag unless told ``metadata_errors="ignore"``; 19
    dropped the keyword (it decodes tags with surrogateescape) and rejects it with a TypeError.
    Which kind is installed is found by asking ``opener`` itself, once: the probe names a path
    no file can have, so where the keyword is accepted only the missing file fails."""
    try:
        opener("\0", mode="r", metadata_errors="ignore").close()
    except TypeError as e:
        if "metadata_errors" in str(e):
            return {}
        raise
    except Exception:  # noqa: BLE001 - the missing file: the keyword was taken
        pass
    return {"metadata_errors": "ignore"}


def _check_file(path: Path) -> None:
    if not path.exists():
        raise AudioError(f"{path}: no such file")
    if not path.is_file():
        raise AudioError(f"{path}: not a regular file")
    if path.stat().st_size == 0:
        raise AudioError(f"{path}: empty file, expected audio")


WINDOW_S = 600.0
"""A track is decoded and transcribed this much at a time (19 MB of samples at most, however
long the track), each window ending at the quietest 100 ms of its last CUT_SEARCH_S."""
CUT_SEARCH_S = 30.0
_CUT_FRAME = SAMPLE_RATE // 10


def check_duration(info: AudioInfo, max_s: float) -> None:
    """Refuse a track longer than ``max_s`` seconds, naming the limit, before it is decoded."""
    if info.duration_s > max_s or (info.partly_counted and info.duration_s >= max_s):
        raise AudioError(
            f"{info.path}: {'over ' if info.partly_counted else ''}{_span(info.duration_s)} "
            f"of audio; a track may hold at most "
            f"{_span(max_s)} ($HEARD_MAX_TRACK_S)"
        )


_NO_LENGTH_FIELD = frozenset({"mp3", "aac", "mpegts", "mpeg"})
"""Formats whose length FFmpeg estimates (from the first frame's bitrate) or reads from
timestamps rather than from a length field: their "header" makes no claim to hold them to."""
LIE_FACTOR = 2.0
LIE_SLACK_S = 60.0
"""A header lies when the packets hold more than twice what it states, and a minute more."""
PACKETS_PER_S = 200
"""The most packets a second of audio takes (5 ms frames; recordings use 20 ms or more):
counting stops past ``max_s`` times this many, so counting costs a few seconds at most."""


def measure_audio(path: str | Path, max_s: float = math.inf) -> AudioInfo:
    """``probe_audio``, and the length the first audio stream's packets hold, read without
    decoding them (0.2 s of CPU an hour of 20 ms Opus frames). The counting stops past
    ``max_s``: what it returns is then over the limit, for ``check_duration`` to refuse. A
    header that states a length far below what the packets hold, in a file with one timeline
    (timestamps that never run back, as they do where files were joined), is a forged or
    broken file: an ``AudioError``. Packets with neither a length nor a time leave the
    header's word (decoding still stops at the limit)."""
    info = probe_audio(path)
    if info.duration_s > max_s:
        return info  # over the limit by its own word: nothing to count
    try:
        with open_input(str(info.path)) as container:
            stream = container.streams.audio[0]
            base = float(stream.time_base) if stream.time_base else 0.0
            held, one_timeline, packets = _count(container.demux(stream), base, max_s)
            claims = container.format.name not in _NO_LENGTH_FIELD
    except Exception as e:  # noqa: BLE001 - PyAV raises many types for bad files
        raise AudioError(f"{info.path}: cannot read as audio ({_reason(e)})") from None
    if not packets:  # nothing to count by: the header's word
        return info
    if math.isinf(held):  # more packets than any recording of the limit's length has
        return AudioInfo(info.path, max_s, info.channels, partly_counted=True)
    stated = info.duration_s
    if claims and one_timeline and stated > 0 and held > stated * LIE_FACTOR + LIE_SLACK_S:
        raise AudioError(
            f"{info.path}: its header says {_span(stated)} of audio but its packets hold "
            f"{_span(held)}{'' if held <= max_s else ' or more'}: a broken or forged file "
            "(remux it: ffmpeg -i IN -c copy OUT)"
        )
    if held > max_s:
        return AudioInfo(info.path, max_s, info.channels, partly_counted=True)
    return AudioInfo(info.path, held, info.channels)


def _count(packets: Iterator[Any], base: float, max_s: float) -> tuple[float, bool, int]:
    """Seconds the packets hold (by their lengths, or by their times where they carry no
    length), whether their times never ran back, and how many were counted with either;
    counting stops once past ``max_s`` (or ``PACKETS_PER_S`` times as many packets)."""
    if not base:
        return 0.0, True, 0
    by_length = by_time = 0  # in the stream's time base
    last: int | None = None
    one_timeline, counted = True, 0
    most_packets = max_s * PACKETS_PER_S
    for packet in packets:
        if not packet.size:
            continue
        pts, length = packet.pts, packet.duration or 0
        if pts is None and not length:
            continue
        counted += 1
        by_length += length
        if pts is not None:
            if last is not None:
                if pts >= last:
                    by_time += pts - last
                else:
                    one_timeline = False  # files joined: each part's times start again
            last = pts
        if max(by_length, by_time) * base > max_s or counted > most_packets:
            return math.inf if counted > most_packets else max(by_length, by_time) * base, (
                one_timeline), counted  # fmt: skip
    return max(by_length, by_time + length) * base, one_timeline, counted


def _reason(error: Exception) -> str:
    """PyAV's message without the raw errno it starts with ("[Errno 1094995529] Invalid data
    found when processing input: 'path'" reads "Invalid data found when processing input")."""
    strerror = getattr(error, "strerror", None)
    if isinstance(strerror, str) and strerror:
        return strerror
    return re.sub(r"^\[Errno -?\d+\]\s*", "", str(error))


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
        with open_input(str(p)) as container:
            streams = container.streams.audio
            if not streams:
                raise AudioError(f"{p}: no audio stream, expected an audio file")
            stream = streams[0]
            duration_s = float(container.duration / av.time_base) if container.duration else 0.0
            channels = stream.codec_context.channels or 1
    except AudioError:
        raise
    except Exception as e:  # noqa: BLE001 - PyAV raises many types for bad files
        raise AudioError(f"{p}: cannot read as audio ({_reason(e)})") from None
    return AudioInfo(p, duration_s, channels)


@dataclass(frozen=True, slots=True)
class Window:
    """Consecutive samples of a track, ``start_s`` seconds into it."""

    start_s: float
    samples: npt.NDArray[np.float32]


def load_audio(
    path: str | Path, channel: int | None = None, *, max_s: float = math.inf
) -> npt.NDArray[np.float32]:
    """Decode ``path`` whole to 16 kHz float32 mono; ``channel`` picks one of the file's
    channels (``audio_windows``)."""
    import numpy as np

    windows = audio_windows(path, channel, window_s=math.inf, max_s=max_s)
    return np.concatenate([w.samples for w in windows])


def audio_windows(
    path: str | Path,
    channel: int | None = None,
    *,
    window_s: float | None = None,
    max_s: float = MAX_TRACK_S,
) -> Iterator[Window]:
    """Decode ``path`` to 16 kHz float32 mono, ``window_s`` seconds (default WINDOW_S; up to
    CUT_SEARCH_S fewer, cut where it is quietest) at a time; ``channel`` picks one of the
    file's channels as it has them (0 the first: the left of a stereo pair), never a mix; one
    the file lacks is an ``AudioError`` naming it. Packets that do not decode are skipped, as
    FFmpeg does."""
    p = Path(path)
    _check_file(p)
    if channel is not None and channel < 0:
        raise AudioError(f"{p}: channel {channel}: channels are numbered from 0")
    try:
        import av
        import numpy as np
    except ImportError as e:  # pragma: no cover - av comes with faster-whisper
        raise MissingDependencyError(
            "PyAV is missing (it comes with heard: reinstall heard)"
        ) from e
    window_s = WINDOW_S if window_s is None else window_s
    whole = math.isinf(window_s)
    window = 0 if whole else max(1, int(window_s * SAMPLE_RATE))
    search = min(int(CUT_SEARCH_S * SAMPLE_RATE), window // 2)
    most = max_s * SAMPLE_RATE
    start = 0  # samples yielded so far
    held: list[np.ndarray] = []
    held_n = 0
    try:
        with open_input(str(p)) as container:
            if not container.streams.audio:
                raise AudioError(f"{p}: no audio stream, expected an audio file")
            for chunk in _decoded(av, container, every_channel=channel is not None):
                samples = _one_channel(p, chunk, channel) if channel is not None else chunk
                held.append(samples)
                held_n += len(samples)
                if start + held_n > most:
                    raise AudioError(
                        f"{p}: over {_span(max_s)} of audio; a track may hold at most "
                        f"{_span(max_s)} ($HEARD_MAX_TRACK_S)"
                    )
                if not whole and held_n >= window:
                    buffer = np.concatenate(held)
                    cut = _quiet_cut(buffer, window - search, window)
                    yield Window(start / SAMPLE_RATE, _floats(buffer[:cut]))
                    start += cut
                    held, held_n = [buffer[cut:]], len(buffer) - cut
    except AudioError:
        raise
    except Exception as e:  # noqa: BLE001 - PyAV raises many types for bad files
        raise AudioError(f"{p}: cannot decode audio ({_reason(e)})") from None
    if held_n:
        yield Window(start / SAMPLE_RATE, _floats(np.concatenate(held)))
    elif start == 0:
        raise AudioError(f"{p}: no audio samples")


def _decoded(av: Any, container: Any, *, every_channel: bool) -> Iterator[np.ndarray]:
    """The first audio stream as 16 kHz int16 arrays: mixed down to mono, or with
    ``every_channel`` one column per channel, at the stream's own layout (a layout named here,
    such as stereo, would mix a file of more channels into it)."""
    stream = container.streams.audio[0]
    layout = None if every_channel else "mono"
    resampler = av.AudioResampler(format="s16", layout=layout, rate=SAMPLE_RATE)
    for packet in container.demux(stream):
        try:
            frames = packet.decode()
        except av.error.InvalidDataError:
            continue
        for frame in frames:
            for out in resampler.resample(frame):
                yield _samples(out, every_channel)
    for out in resampler.resample(None):
        yield _samples(out, every_channel)


def _samples(frame: Any, every_channel: bool) -> np.ndarray:
    """A resampled frame's interleaved samples, one column per channel if ``every_channel``."""
    samples: np.ndarray = frame.to_ndarray().reshape(-1)
    return samples.reshape(-1, len(frame.layout.channels)) if every_channel else samples


def _one_channel(path: Path, chunk: np.ndarray, channel: int) -> np.ndarray:
    """Column ``channel`` of a decoded chunk (``AudioError`` when the file has no such one)."""
    channels = chunk.shape[1]
    if channel >= channels:
        has = f"{channels} channels, 0 to {channels - 1}" if channels > 1 else "1 channel, 0"
        raise AudioError(f"{path}: no channel {channel}: the file has {has}")
    column: np.ndarray = chunk[:, channel]
    return column


def _quiet_cut(samples: np.ndarray, lo: int, hi: int) -> int:
    """Where to end a window between ``lo`` and ``hi``: the middle of its quietest 100 ms."""
    import numpy as np

    frames = (hi - lo) // _CUT_FRAME
    if frames < 1:
        return hi
    region = samples[lo : lo + frames * _CUT_FRAME].astype(np.float32).reshape(frames, -1)
    quietest = int(np.argmin((region * region).mean(axis=1)))
    return lo + quietest * _CUT_FRAME + _CUT_FRAME // 2


def _floats(samples: np.ndarray) -> npt.NDArray[np.float32]:
    import numpy as np

    out: npt.NDArray[np.float32] = samples.astype(np.float32) / 32768.0
    return out
