"""Audio as live clients send it, turned into what heard's microphones take: 16 kHz PCM16
mono, one stream per channel.

``IncomingAudio(encoding, sample_rate, channels)`` takes frames as they arrive (``feed``) and
gives back each channel's audio so far; ``finish`` gives the rest. Encodings:

* ``linear16`` (PCM16 little-endian), ``mulaw`` and ``alaw`` (G.711, telephony), at any rate
  and with channels interleaved, converted frame by frame (resampled by FFmpeg's resampler
  through PyAV, which faster-whisper brings, keeping its state across frames);
* ``container``: Ogg (Opus, Vorbis, FLAC), WebM/Matroska (Opus), WAV, FLAC, MP3... whatever
  FFmpeg demuxes, decoded in a thread as the bytes arrive (a browser's MediaRecorder chunks,
  Deepgram's ``encoding=opus`` streams).

A frame that cannot be what the encoding says (an odd byte count of PCM16, a torn sample
across channels) raises ``AudioError`` naming it; so does a container FFmpeg cannot read.
``is_container`` tells a container from raw PCM by a stream's first bytes, for a client that
names no encoding.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from heard.asr.audio import SAMPLE_RATE, open_input
from heard.errors import AudioError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "CONTAINER_MAGIC",
    "ENCODINGS",
    "IncomingAudio",
    "alaw_to_pcm16",
    "is_container",
    "mulaw_to_pcm16",
]

ENCODINGS = ("linear16", "mulaw", "alaw", "container")
SAMPLE_BYTES = {"linear16": 2, "mulaw": 1, "alaw": 1}
CONTAINER_MAGIC = (b"OggS", b"\x1aE\xdf\xa3", b"RIFF", b"fLaC", b"ID3")
"""How the containers a client sends start: Ogg, WebM/Matroska, WAV, FLAC, an ID3 tag (MP3)."""
_MP3_KBPS = {
    True: (0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320),  # MPEG-1
    False: (0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160),  # MPEG-2 and 2.5
}
_MP3_RATES = (44_100, 48_000, 32_000)
"""MPEG-1's sample rates; MPEG-2 has half each, MPEG-2.5 a quarter."""


def is_container(first: bytes) -> bool:
    """Whether a stream whose first bytes are ``first`` is a container (``CONTAINER_MAGIC``)
    or MP3 frames with no ID3 tag before them, rather than raw PCM. Such MP3 starts with a
    frame sync (0xFF, then three more bits set) that PCM16 may start with too, so it takes a
    whole valid layer III frame header and, where ``first`` reaches that far, a second one
    of the same stream just where the first frame ends."""
    if first.startswith(CONTAINER_MAGIC):
        return True
    length = _mp3_frame_length(first[:4])
    if length is None:
        return False
    second = first[length : length + 4]
    if len(second) < 4:
        return True  # the first frame is all there is yet
    same_stream = second[1] == first[1] and (second[2] & 0x0C) == (first[2] & 0x0C)
    return same_stream and _mp3_frame_length(second) is not None


def _mp3_frame_length(header: bytes) -> int | None:
    """The bytes of the MPEG audio layer III frame that starts with ``header`` (4 bytes), or
    None when it is no such frame's header (no sync, a reserved value, a free bitrate)."""
    if len(header) < 4 or header[0] != 0xFF or (header[1] & 0xE0) != 0xE0:
        return None
    version, layer = (header[1] >> 3) & 3, (header[1] >> 1) & 3  # 3 MPEG-1, 2 MPEG-2, 0 2.5
    bitrate, rate = header[2] >> 4, (header[2] >> 2) & 3
    if version == 1 or layer != 1 or bitrate in (0, 15) or rate == 3:
        return None
    mpeg1 = version == 3
    hz = _MP3_RATES[rate] >> {3: 0, 2: 1, 0: 2}[version]
    padding = (header[2] >> 1) & 1
    return (144 if mpeg1 else 72) * _MP3_KBPS[mpeg1][bitrate] * 1000 // hz + padding


def _g711_table(alaw: bool) -> npt.NDArray[np.int16]:
    import numpy as np

    codes = np.arange(256, dtype=np.int32)
    if alaw:
        a = codes ^ 0x55
        exponent, mantissa = (a >> 4) & 7, a & 0x0F
        magnitude = np.where(
            exponent == 0,
            (mantissa << 4) + 8,
            ((mantissa << 4) + 0x108) << np.maximum(exponent - 1, 0),
        )
        values = np.where(a & 0x80, magnitude, -magnitude)
    else:
        u = ~codes & 0xFF
        exponent, mantissa = (u >> 4) & 7, u & 0x0F
        magnitude = (((mantissa << 3) + 0x84) << exponent) - 0x84
        values = np.where(u & 0x80, -magnitude, magnitude)
    return values.astype(np.int16)


def mulaw_to_pcm16(data: bytes) -> npt.NDArray[np.int16]:
    """G.711 mu-law bytes as PCM16 samples."""
    import numpy as np

    return _g711_table(alaw=False)[np.frombuffer(data, dtype=np.uint8)]


def alaw_to_pcm16(data: bytes) -> npt.NDArray[np.int16]:
    """G.711 A-law bytes as PCM16 samples."""
    import numpy as np

    return _g711_table(alaw=True)[np.frombuffer(data, dtype=np.uint8)]


class _Resampler:
    """One channel's PCM16 at ``rate`` to 16 kHz, keeping the filter's state across frames."""

    def __init__(self, rate: int) -> None:
        self.rate = rate
        self._av: Any = None
        if rate != SAMPLE_RATE:
            import av

            self._av = av.AudioResampler(format="s16", layout="mono", rate=SAMPLE_RATE)

    def __call__(self, samples: npt.NDArray[np.int16] | None) -> bytes:
        if self._av is None:
            return b"" if samples is None else samples.astype("<i2").tobytes()
        import av

        frame = None
        if samples is not None:
            if not len(samples):
                return b""
            frame = av.AudioFrame.from_ndarray(
                samples.astype("<i2").reshape(1, -1), format="s16", layout="mono"
            )
            frame.sample_rate = self.rate
        return b"".join(bytes(f.planes[0])[: f.samples * 2] for f in self._av.resample(frame))


class IncomingAudio:
    """One socket's audio in ``encoding`` (``ENCODINGS``) at ``sample_rate`` Hz with
    ``channels`` interleaved; ``feed`` and ``finish`` return 16 kHz PCM16 per channel."""

    def __init__(self, encoding: str, sample_rate: int = SAMPLE_RATE, channels: int = 1) -> None:
        if encoding not in ENCODINGS:
            raise AudioError(f"encoding {encoding[:40]!r}: one of {', '.join(ENCODINGS)}")
        if not 1 <= channels <= 8:
            raise AudioError(f"channels: 1 to 8, not {channels}")
        if not 8000 <= sample_rate <= 192_000:
            raise AudioError(f"sample_rate: 8000 to 192000 Hz, not {sample_rate}")
        self.encoding, self.sample_rate, self.channels = encoding, sample_rate, channels
        self._carry = b""  # a frame's tail that is not a whole sample of every channel
        self._resamplers = [_Resampler(sample_rate) for _ in range(channels)]
        self._container: _Container | None = None
        if encoding == "container":
            self._container = _Container(channels)

    def feed(self, data: bytes) -> list[bytes]:
        if self._container is not None:
            return self._container.feed(data)
        if self.encoding == "linear16" and self.channels == 1 and len(data) % 2:
            raise AudioError("audio must be PCM16 (an even number of bytes)")  # nothing kept
        data = self._carry + data
        whole = len(data) - len(data) % (SAMPLE_BYTES[self.encoding] * self.channels)
        data, self._carry = data[:whole], data[whole:]
        return self._split(data)

    def finish(self) -> list[bytes]:
        if self._container is not None:
            return self._container.finish()
        return [resample(None) for resample in self._resamplers]

    def close(self) -> None:
        """Stop at once, whatever is left (a container's thread ends; its audio is dropped)."""
        if self._container is not None:
            self._container.close()

    def _split(self, data: bytes) -> list[bytes]:
        import numpy as np

        if self.encoding == "linear16":
            samples = np.frombuffer(data, dtype="<i2")
        elif self.encoding == "mulaw":
            samples = mulaw_to_pcm16(data)
        else:
            samples = alaw_to_pcm16(data)
        frames = samples.reshape(-1, self.channels)
        return [resample(frames[:, c]) for c, resample in enumerate(self._resamplers)]


MAX_PENDING_BYTES = 4 * 1024 * 1024
"""Container bytes sent and not yet decoded: a client that sends faster than FFmpeg decodes
(or than speech goes) is refused past this."""
MAX_AHEAD_S = 5.0
"""Decoded audio not yet taken: the decoder waits beyond this, so a container that decodes to
far more audio than it weighs (an hour of compressed silence) is charged against the audio
limit as it is taken, never decoded whole into memory first."""


class _Pipe:
    """Bytes from the socket to FFmpeg's demuxer in another thread: ``read`` waits for them
    (end of file once the stream ends or is closed)."""

    def __init__(self) -> None:
        self._chunks: queue.Queue[bytes | None] = queue.Queue()
        self._left = b""
        self._ended = False
        self.pending = 0  # bytes written and not read yet

    def write(self, data: bytes | None) -> None:
        if data is not None:
            if self.pending + len(data) > MAX_PENDING_BYTES:
                raise AudioError("the audio stream comes faster than it can be decoded")
            self.pending += len(data)
        self._chunks.put(data)

    def read(self, n: int = -1) -> bytes:
        while not self._left and not self._ended:
            chunk = self._chunks.get()
            if chunk is None:
                self._ended = True
            else:
                self._left += chunk
        size = len(self._left) if n < 0 else n
        out, self._left = self._left[:size], self._left[size:]
        self.pending -= len(out)
        return out


class _Container:
    """A container stream decoded in a thread as its bytes arrive."""

    def __init__(self, channels: int) -> None:
        self.channels = channels
        self._pipe = _Pipe()
        self._out: list[bytearray] = [bytearray() for _ in range(channels)]
        self._taken_or_closed = threading.Condition()
        self._closed = False
        self._error: str | None = None
        self._thread = threading.Thread(target=self._decode, name="heard-container", daemon=True)
        self._thread.start()

    def feed(self, data: bytes) -> list[bytes]:
        if data:
            self._pipe.write(data)
        return self._taken()

    def finish(self) -> list[bytes]:
        self._pipe.write(None)
        out = [bytearray() for _ in range(self.channels)]
        while self._thread.is_alive():  # what it decodes is taken as it comes: it never waits
            self._thread.join(0.05)
            for mine, more in zip(out, self._taken(), strict=True):
                mine += more
        return [bytes(mine + more) for mine, more in zip(out, self._taken(), strict=True)]

    def close(self) -> None:
        with self._taken_or_closed:
            self._closed = True
            self._taken_or_closed.notify_all()
        self._pipe.write(None)

    def _taken(self) -> list[bytes]:
        with self._taken_or_closed:
            if self._error is not None:
                raise AudioError(self._error)
            out = [bytes(b) for b in self._out]
            for b in self._out:
                b.clear()
            self._taken_or_closed.notify_all()
        return out

    def _decode(self) -> None:
        import av

        try:
            with open_input(self._pipe) as container:
                stream = container.streams.audio[0]
                # planar, each channel its own plane, at the stream's own layout
                resampler = av.AudioResampler(format="s16p", rate=SAMPLE_RATE)
                for frame in _frames(container, stream):
                    if not all(self._keep(o.to_ndarray()) for o in resampler.resample(frame)):
                        return  # closed
                for out in resampler.resample(None):
                    self._keep(out.to_ndarray())
        except (av.FFmpegError, IndexError, ValueError, EOFError) as e:
            with self._taken_or_closed:
                self._error = f"the audio stream cannot be decoded ({type(e).__name__})"

    def _keep(self, planes: npt.NDArray[Any]) -> bool:
        """Keep one decoded frame's channels (rows; channels the client said and the stream
        lacks repeat its last one); False once the container is closed."""
        with self._taken_or_closed:
            while not self._closed and len(self._out[0]) > MAX_AHEAD_S * SAMPLE_RATE * 2:
                self._taken_or_closed.wait(0.5)
            if self._closed:
                return False
            for c, out in enumerate(self._out):
                out += planes[min(c, len(planes) - 1)].astype("<i2").tobytes()
            return True


def _frames(container: Any, stream: Any) -> Iterator[Any]:
    for packet in container.demux(stream):
        yield from packet.decode()
