"""Clients' audio formats into 16 kHz PCM16 per channel (``heard.asr.incoming``, issue 41)."""

from __future__ import annotations

import io
import threading
import time
import warnings
import wave

import av
import numpy as np
import pytest

from heard.asr import incoming
from heard.asr.incoming import IncomingAudio, alaw_to_pcm16, mulaw_to_pcm16
from heard.errors import AudioError


def tone(seconds: float, rate: int, hz: float = 220.0) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    return (np.sin(2 * np.pi * hz * t) * 8000).astype("<i2")


def fed(audio: IncomingAudio, data: bytes, piece: int) -> list[bytes]:
    out = [b""] * audio.channels
    for i in range(0, len(data), piece):
        out = [a + b for a, b in zip(out, audio.feed(data[i : i + piece]), strict=True)]
    return [a + b for a, b in zip(out, audio.finish(), strict=True)]


def test_g711_is_the_standards_table_byte_for_byte() -> None:
    every = bytes(range(256))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import audioop  # the standard library's G.711, until Python 3.13

        assert (mulaw_to_pcm16(every) == np.frombuffer(audioop.ulaw2lin(every, 2), "<i2")).all()
        assert (alaw_to_pcm16(every) == np.frombuffer(audioop.alaw2lin(every, 2), "<i2")).all()


@pytest.mark.parametrize("rate", [8000, 24_000, 44_100, 48_000])
def test_pcm_at_any_rate_comes_out_at_16_khz_whatever_the_frame_sizes(rate: int) -> None:
    """Resampled frame by frame with the filter's state kept: the same audio as resampling
    it whole, in 20 ms frames or odd ones."""
    x = tone(1.0, rate).tobytes()
    whole = fed(IncomingAudio("linear16", rate), x, len(x))[0]
    assert fed(IncomingAudio("linear16", rate), x, rate // 50 * 2)[0] == whole
    assert fed(IncomingAudio("linear16", rate), x, 2 * 997)[0] == whole
    got = np.frombuffer(whole, "<i2").astype(float)
    assert abs(len(got) - 16_000) <= 32
    want = tone(1.0, 16_000).astype(float)[: len(got)]
    assert np.corrcoef(got[200:-200], want[200:-200])[0, 1] > 0.99


def test_interleaved_channels_come_apart() -> None:
    left, right = tone(0.5, 8000, 220), tone(0.5, 8000, 440)
    both = np.stack([left, right], axis=1).astype("<i2").tobytes()
    ch0, ch1 = fed(IncomingAudio("linear16", 8000, channels=2), both, 321)
    assert len(ch0) == len(ch1) == 16_000
    a, b = np.frombuffer(ch0, "<i2"), np.frombuffer(ch1, "<i2")
    assert np.corrcoef(a[100:-100], b[100:-100])[0, 1] < 0.5  # two different tones


def test_an_odd_pcm16_frame_is_refused_and_the_next_is_taken() -> None:
    audio = IncomingAudio("linear16", 24_000)
    with pytest.raises(AudioError, match="even number of bytes"):
        audio.feed(b"\x00" * 3)
    assert len(audio.feed(b"\x00" * 4800)[0]) > 0  # nothing of the bad frame was kept


def wav(channels: list[np.ndarray], rate: int = 16_000) -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(len(channels))
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(np.stack(channels, axis=1).astype("<i2").tobytes())
    return out.getvalue()


@pytest.mark.parametrize(("form", "codec"), [("ogg", "libopus"), ("webm", "libopus"),
                                             ("mp3", "libmp3lame")])  # fmt: skip
def test_containers_a_browser_or_a_file_sends_decode_as_their_bytes_come(
    form: str, codec: str
) -> None:
    out = io.BytesIO()
    said = tone(2.0, 48_000)
    with av.open(out, "w", format=form) as container:
        stream = container.add_stream(codec, rate=48_000)
        stream.layout = "mono"
        for i in range(0, len(said), 960):
            frame = av.AudioFrame.from_ndarray(said[i : i + 960].reshape(1, -1), format="s16",
                                               layout="mono")  # fmt: skip
            frame.sample_rate = 48_000
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
    (pcm,) = fed(IncomingAudio("container"), out.getvalue(), 1024)
    got = np.frombuffer(pcm, "<i2").astype(float)
    assert abs(len(got) - 32_000) < 1600  # 2 s, give or take a codec's padding
    want = tone(2.0, 16_000).astype(float)
    lag = int(np.argmax(np.correlate(got[4000:8000], want[4000:4400], "valid")))
    aligned = got[4000 + lag : 4000 + lag + 8000]  # the codec's delay taken out
    assert np.corrcoef(aligned, want[4000 : 4000 + len(aligned)])[0, 1] > 0.9


def test_a_container_with_four_channels_keeps_each_apart() -> None:
    levels = [1000, 2000, 3000, 4000]
    data = wav([np.full(16_000, v, dtype="<i2") for v in levels])
    out = fed(IncomingAudio("container", channels=4), data, 4096)
    assert [int(np.frombuffer(o, "<i2")[8000]) for o in out] == levels
    assert [len(o) for o in out] == [32_000] * 4


def heard_threads() -> int:
    return sum(t.name == "heard-container" for t in threading.enumerate())


def test_a_container_closed_midway_stops_its_thread() -> None:
    before = heard_threads()
    audio = IncomingAudio("container")
    audio.feed(wav([tone(3.0, 16_000)])[:20_000])
    assert heard_threads() == before + 1
    audio.close()
    deadline = time.monotonic() + 5
    while heard_threads() > before and time.monotonic() < deadline:
        time.sleep(0.02)
    assert heard_threads() == before


def test_a_container_never_decodes_far_ahead_of_what_is_taken() -> None:
    """An hour of compressed silence weighs little: the decoder waits once MAX_AHEAD_S is
    decoded and not taken, so the audio limit, charged as audio is taken, stops it."""
    out = io.BytesIO()
    with av.open(out, "w", format="flac") as container:
        stream = container.add_stream("flac", rate=16_000)
        stream.layout = "mono"
        silence = np.zeros((1, 16_000), dtype="<i2")
        for _ in range(60):  # a minute
            frame = av.AudioFrame.from_ndarray(silence, format="s16", layout="mono")
            frame.sample_rate = 16_000
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
    data = out.getvalue()
    assert len(data) < 100_000
    audio = IncomingAudio("container")
    audio.feed(data)
    time.sleep(1.0)  # the decoder runs ahead as far as it may
    held = audio._container._out[0]  # type: ignore[union-attr]
    assert len(held) <= (incoming.MAX_AHEAD_S + 1) * 32_000
    audio.close()


def test_bytes_that_are_no_container_are_refused() -> None:
    audio = IncomingAudio("container")
    audio.feed(b"\x01\x02" * 5000)
    with pytest.raises(AudioError, match="cannot be decoded"):
        audio.finish()
