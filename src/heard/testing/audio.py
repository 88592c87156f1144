"""Audio files made for tests: silence, small for hours of it, and files whose header lies
about their length (a server's input limits, tested)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["forge_length", "silent_audio"]


def silent_audio(path: str | Path, seconds: float, codec: str = "flac") -> Path:
    """``seconds`` of digital silence at ``path``: mono FLAC at 16 kHz (hours in a few MB) or
    Ogg Opus at 6 kbit/s (``codec="opus"``, an hour in 3 MB), encoded by PyAV."""
    import av

    out_path = Path(path)
    opus = codec == "opus"
    rate, frame = (48_000, 960) if opus else (16_000, 4096)
    silence = np.zeros((1, frame), np.int16)
    with av.open(str(out_path), "w", format="ogg" if opus else "flac") as out:
        stream = out.add_stream("libopus" if opus else "flac", rate=rate, layout="mono")
        if opus:
            stream.bit_rate = 6000
        for i in range(max(1, round(seconds * rate / frame))):
            chunk = av.AudioFrame.from_ndarray(silence, format="s16", layout="mono")
            chunk.sample_rate, chunk.pts = rate, i * frame
            out.mux(stream.encode(chunk))
        out.mux(stream.encode(None))
    return out_path


def forge_length(path: str | Path, stated_s: float) -> Path:
    """Make the header of a FLAC or Ogg Opus file at ``path`` state ``stated_s`` seconds (0 for
    FLAC: "unknown", as a stream's encoder leaves it), whatever it holds; in place."""
    p = Path(path)
    data = bytearray(p.read_bytes())
    if data[:4] == b"fLaC":  # STREAMINFO's 36-bit total samples, after the block header
        rate = (data[18] << 12 | data[19] << 4 | data[20] >> 4) or 16_000
        total = round(stated_s * rate)
        data[21] = (data[21] & 0xF0) | (total >> 32 & 0x0F)
        data[22:26] = (total & 0xFFFFFFFF).to_bytes(4, "big")
    elif data[:4] == b"OggS":  # the last page's granule position: Opus counts 48 kHz samples
        last = data.rfind(b"OggS")
        segments = data[last + 26]
        size = 27 + segments + sum(data[last + 27 : last + 27 + segments])
        pre_skip = int.from_bytes(data[data.find(b"OpusHead") + 10 :][:2], "little")
        data[last + 6 : last + 14] = (round(stated_s * 48_000) + pre_skip).to_bytes(8, "little")
        data[last + 22 : last + 26] = bytes(4)
        data[last + 22 : last + 26] = _ogg_crc(bytes(data[last : last + size])).to_bytes(
            4, "little"
        )
    else:
        raise ValueError(f"{p}: neither FLAC nor Ogg")
    p.write_bytes(bytes(data))
    return p


def _ogg_crc(page: bytes) -> int:
    """Ogg's page checksum: CRC-32, polynomial 0x04C11DB7, not reflected, starting at 0."""
    crc = 0
    for byte in page:
        crc ^= byte << 24
        for _ in range(8):
            crc = (crc << 1) ^ 0x04C11DB7 if crc & 0x80000000 else crc << 1
        crc &= 0xFFFFFFFF
    return crc
