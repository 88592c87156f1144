"""heard reads audio on every PyAV release it allows (issue 54): PyAV 19 dropped ``av.open``'s
``metadata_errors`` keyword, which earlier releases need to take a tag that is not UTF-8, and a
fresh install on Python 3.13 failed on its first file. The installed PyAV is tried on a file
with a Latin-1 tag, and PyAV 19's ``av.open`` (its parameters exactly) stands in for the
installed one, so both kinds are tried on any machine."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest

from heard.asr.audio import (
    SAMPLE_RATE,
    audio_windows,
    load_audio,
    measure_audio,
    open_input,
    probe_audio,
)
from heard.asr.incoming import IncomingAudio


def latin1_tagged_flac(path: Path) -> Path:
    """One second of a tone in FLAC whose title tag is Latin-1 ("café", byte 0xE9), as old
    taggers write it: FFmpeg keeps the bytes, and PyAV has to decode them."""
    with av.open(str(path), "w", format="flac") as out:
        out.metadata["title"] = "cafe at noon"
        stream = out.add_stream("flac", rate=SAMPLE_RATE, layout="mono")
        t = np.arange(SAMPLE_RATE) / SAMPLE_RATE
        frame = av.AudioFrame.from_ndarray(
            (np.sin(2 * np.pi * 220 * t) * 8000).astype(np.int16).reshape(1, -1),
            format="s16",
            layout="mono",
        )
        frame.sample_rate = SAMPLE_RATE
        for packet in [*stream.encode(frame), *stream.encode(None)]:
            out.mux(packet)
    data = path.read_bytes()
    assert data.count(b"cafe at noon") == 1
    path.write_bytes(data.replace(b"cafe at noon", b"caf\xe9 at noon"))  # same length
    return path


def read_every_way(path: Path) -> None:
    assert probe_audio(path).duration_s == pytest.approx(1.0, abs=0.01)
    assert measure_audio(path).duration_s == pytest.approx(1.0, abs=0.01)
    assert len(load_audio(path)) == SAMPLE_RATE
    assert sum(len(w.samples) for w in audio_windows(path)) == SAMPLE_RATE
    incoming = IncomingAudio("container")  # a live socket's file, decoded as it comes
    try:
        (first,) = incoming.feed(path.read_bytes())
        (rest,) = incoming.finish()
    finally:
        incoming.close()
    assert len(first + rest) == pytest.approx(2 * SAMPLE_RATE, abs=64)  # PCM16, 16 kHz


def test_a_tag_that_is_not_utf8_is_read_on_the_installed_pyav(tmp_path: Path) -> None:
    read_every_way(latin1_tagged_flac(tmp_path / "tagged.flac"))


def pyav19_open(real: Any) -> Any:
    """PyAV 19.0's ``av.open``: the same parameters (none for tags: it decodes them with
    surrogateescape), so any other keyword is a TypeError, as there."""
    takes_tag_errors = int(av.__version__.split(".")[0]) < 19
    tolerant = {"metadata_errors": "surrogateescape"} if takes_tag_errors else {}

    def open(  # it stands in for av.open
        file: Any,
        mode: str | None = None,
        format: str | None = None,
        options: dict[str, str] | None = None,
        container_options: dict[str, str] | None = None,
        buffer_size: int = 32768,
        timeout: Any = None,
        io_open: Any = None,
        hwaccel: Any = None,
    ) -> Any:
        return real(
            file, mode=mode, format=format, options=options,
            container_options=container_options, buffer_size=buffer_size, timeout=timeout,
            io_open=io_open, hwaccel=hwaccel, **tolerant,
        )  # fmt: skip

    return open


def test_pyav_19s_open_is_called_only_with_keywords_it_takes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(av, "open", pyav19_open(av.open))
    with pytest.raises(TypeError, match="metadata_errors"):  # the stand-in is strict
        av.open(io.BytesIO(b""), metadata_errors="ignore")
    read_every_way(latin1_tagged_flac(tmp_path / "tagged.flac"))


def test_open_input_is_a_reading_container(tmp_path: Path) -> None:
    with open_input(str(latin1_tagged_flac(tmp_path / "tagged.flac"))) as container:
        assert container.streams.audio[0].rate == SAMPLE_RATE
        assert container.metadata["title"].startswith("caf")
