"""A track is decoded and transcribed a window at a time (issue 28): memory does not grow with
its length, windows end where it is quiet, and a header that understates the audio does not
get it decoded whole."""

from __future__ import annotations

import itertools
import shutil
import subprocess
import wave
from pathlib import Path

import numpy as np
import pytest

import heard.asr.audio as audio_module
from heard.asr import FasterWhisperTranscriber, WhisperOptions, load_audio, probe_audio
from heard.asr.audio import SAMPLE_RATE, audio_windows, check_duration
from heard.errors import AudioError
from tests.conftest import AUDIO
from tests.reading import JFK, wer


def write_wav(path: Path, samples: np.ndarray) -> Path:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1 if samples.ndim == 1 else samples.shape[1])  # columns: channels
        w.setsampwidth(2)
        w.setframerate(SAMPLE_RATE)
        w.writeframes(samples.astype(np.int16).tobytes())
    return path


def bursts_and_gaps(gaps_s: list[tuple[float, float]], total_s: float) -> np.ndarray:
    """Loud noise everywhere but the ``gaps_s`` (start, end), which are silent."""
    rng = np.random.default_rng(1)
    samples = rng.normal(0, 8000, int(total_s * SAMPLE_RATE)).clip(-32000, 32000)
    for start, end in gaps_s:
        samples[int(start * SAMPLE_RATE) : int(end * SAMPLE_RATE)] = 0
    return samples


def test_windows_cover_the_track_exactly_and_end_in_its_quiet(tmp_path: Path) -> None:
    gaps = [(7.0, 7.4), (15.2, 15.5), (23.0, 23.3)]
    path = write_wav(tmp_path / "long.wav", bursts_and_gaps(gaps, 31.0))
    windows = list(audio_windows(path, window_s=10))  # each cut searched in its last 5 s
    whole = load_audio(path)
    assert np.array_equal(np.concatenate([w.samples for w in windows]), whole)
    starts = [w.start_s for w in windows]
    assert starts[0] == 0.0
    for before, after in itertools.pairwise(windows):
        assert after.start_s == pytest.approx(before.start_s + len(before.samples) / SAMPLE_RATE)
        assert 5.0 <= len(before.samples) / SAMPLE_RATE <= 10.0
    cuts = starts[1:]
    assert len(cuts) == 3
    for cut, (gap_start, gap_end) in zip(cuts, gaps, strict=True):
        assert gap_start <= cut <= gap_end  # in the silence, not through a burst


def test_one_channel_of_a_stereo_file_in_windows_is_that_channel() -> None:
    stereo = AUDIO / "stereo_diarization.wav"
    for channel in (0, 1):
        windows = list(audio_windows(stereo, channel, window_s=2))
        assert len(windows) >= 2
        joined = np.concatenate([w.samples for w in windows])
        assert np.array_equal(joined, load_audio(stereo, channel))


def test_any_channel_of_a_file_of_several_is_that_channel_alone(tmp_path: Path) -> None:
    """Issue 57: a channel past the second was refused ("channel must be 0 (left) or 1
    (right)"), and a file of more channels was mixed into a stereo pair before one was
    picked. Each channel now comes out as it is, and one the file lacks is named."""
    t = np.arange(SAMPLE_RATE) / SAMPLE_RATE
    channels = np.stack([np.sin(2 * np.pi * hz * t) * 8000 for hz in (200, 300, 500, 700, 1100)],
                        axis=1).astype(np.int16)  # fmt: skip
    path = write_wav(tmp_path / "five.wav", channels)
    for channel in range(5):
        assert np.array_equal(load_audio(path, channel), channels[:, channel] / 32768.0)
    with pytest.raises(AudioError, match="no channel 5: the file has 5 channels, 0 to 4"):
        load_audio(path, 5)
    with pytest.raises(AudioError, match="channel -1: channels are numbered from 0"):
        load_audio(path, -1)
    mono = write_wav(tmp_path / "mono.wav", channels[:, 0])
    assert np.array_equal(load_audio(mono, 0), load_audio(mono))
    with pytest.raises(AudioError, match="no channel 1: the file has 1 channel, 0"):
        load_audio(mono, 1)


def understated_flac(tmp_path: Path, seconds: int, claimed_s: int) -> Path:
    """A FLAC of ``seconds`` of tone whose STREAMINFO claims ``claimed_s`` (sox, then the
    36-bit total-samples field rewritten: FFmpeg reports the claim, and decodes it all)."""
    if shutil.which("sox") is None:
        pytest.fail("sox is missing: run the tests through tools/test.sh")
    path = tmp_path / "understated.flac"
    subprocess.run(["sox", "-n", "-r", str(SAMPLE_RATE), "-c", "1", "-b", "16", str(path),
                    "synth", str(seconds), "sine", "440", "vol", "0.3"], check=True)  # fmt: skip
    data = bytearray(path.read_bytes())
    assert data[:4] == b"fLaC"  # then the STREAMINFO block's 4-byte header, then its fields
    field = int.from_bytes(data[18:26], "big")
    field = (field & ~((1 << 36) - 1)) | (claimed_s * SAMPLE_RATE)
    data[18:26] = field.to_bytes(8, "big")
    path.write_bytes(bytes(data))
    return path


def test_a_header_that_understates_the_audio_stops_at_the_limit(tmp_path: Path) -> None:
    path = understated_flac(tmp_path, seconds=120, claimed_s=1)
    info = probe_audio(path)
    assert info.duration_s == pytest.approx(1.0)
    check_duration(info, 30)  # the header passes the check made before decoding
    decoded = []
    with pytest.raises(AudioError, match=r"at most 30 s \(\$HEARD_MAX_TRACK_S\)") as caught:
        decoded.extend(w.start_s for w in audio_windows(path, window_s=10, max_s=30))
    assert str(path) in str(caught.value)
    assert decoded  # what came before the limit came out
    assert decoded[-1] < 30  # stopped at the limit, not at the end of the 120 s
    with pytest.raises(AudioError, match="at most 30 s"):
        FasterWhisperTranscriber(WhisperOptions(max_track_s=30)).transcribe(path)


@pytest.mark.asr
def test_a_track_transcribed_in_windows_keeps_its_words_and_their_times(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """JFK (11 s) in windows of 4 s: each window's segments moved to where it starts."""
    monkeypatch.setattr(audio_module, "WINDOW_S", 4.0)
    progress: list[tuple[float, float]] = []
    heard = FasterWhisperTranscriber().transcribe(
        AUDIO / "jfk.flac", on_progress=lambda done, total: progress.append((done, total))
    )
    assert len({round(w.start_s, 2) for w in audio_windows(AUDIO / "jfk.flac")}) >= 3
    text = " ".join(s.text for s in heard.segments)
    assert wer(JFK, text) <= 0.25, text
    words = [w for s in heard.segments for w in s.words]
    starts = [w.start for w in words]
    assert starts == sorted(starts)  # no window's words land back at zero
    for segment in heard.segments:  # each segment where its own words are
        assert segment.words
        assert abs(segment.start - segment.words[0].start) <= 1.0
        assert abs(segment.end - segment.words[-1].end) <= 1.0
    assert starts[0] < 1.0
    assert heard.segments[-1].end == pytest.approx(10.5, abs=1.0)
    assert progress[-1][0] == progress[-1][1] == pytest.approx(11.0, abs=0.1)


@pytest.mark.asr
def test_the_language_comes_from_the_first_window_with_speech(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A participant who speaks only after the first window: the silence before does not
    decide the track's language (the multilingual base model)."""
    if shutil.which("espeak-ng") is None:
        pytest.fail("espeak-ng is missing: run the tests through tools/test.sh")
    spoken = tmp_path / "es.wav"
    subprocess.run(["espeak-ng", "-v", "es", "-s", "140", "-w", str(spoken),
                    "Buenos días a todos. Hoy vamos a hablar del presupuesto de la oficina de "
                    "Lisboa y de los planes para el próximo año."], check=True)  # fmt: skip
    speech = (load_audio(spoken) * 32767).astype(np.int16)
    track = write_wav(tmp_path / "late.wav", np.concatenate([np.zeros(40 * SAMPLE_RATE), speech]))
    monkeypatch.setattr(audio_module, "WINDOW_S", 30.0)  # the first window: silence only
    heard = FasterWhisperTranscriber(WhisperOptions(model="base")).transcribe(track)
    assert heard.language == "es"
    assert heard.segments
    assert heard.segments[0].start > 30.0
