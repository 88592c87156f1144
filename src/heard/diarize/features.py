"""Kaldi's log mel filter bank in NumPy, as CAM++ was trained on it.

80 triangular bins on Kaldi's mel scale (1127 ln(1 + f / 700)) from 20 Hz to 8 kHz over a
512-point FFT of 25 ms frames every 10 ms (only whole frames), each frame's mean removed,
pre-emphasis 0.97 and a Povey window; the log of the power, floored at float32's epsilon; no
dither, no energy. ``tests/diarize/test_embedders.py`` holds it to kaldi-native-fbank's output.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import numpy.typing as npt

__all__ = ["FRAME_SHIFT", "fbank"]

SAMPLE_RATE = 16000
FRAME_LENGTH = 400
FRAME_SHIFT = 160
"""Samples between frames: 10 ms."""
N_FFT = 512
BINS = 80
LOW_HZ = 20.0
PREEMPHASIS = 0.97


def _mel(hz: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    return 1127.0 * np.log1p(np.asarray(hz, dtype=np.float64) / 700.0)


@lru_cache(maxsize=1)
def mel_banks() -> npt.NDArray[np.float32]:
    """(N_FFT // 2 + 1, BINS): the weight of each FFT bin in each mel bin (Kaldi leaves the
    Nyquist bin out)."""
    low, high = _mel(np.array(LOW_HZ)), _mel(np.array(SAMPLE_RATE / 2))
    step = (high - low) / (BINS + 1)
    bins = _mel(np.arange(N_FFT // 2, dtype=np.float64) * (SAMPLE_RATE / N_FFT))
    left = low + step * np.arange(BINS)[:, None]
    centre, right = left + step, left + 2 * step
    rising = (bins - left) / (centre - left)
    falling = (right - bins) / (right - centre)
    weights = np.where((bins > left) & (bins < right), np.minimum(rising, falling), 0.0)
    banks = np.zeros((N_FFT // 2 + 1, BINS), dtype=np.float32)
    banks[: N_FFT // 2] = weights.T
    return banks


@lru_cache(maxsize=1)
def _povey() -> npt.NDArray[np.float32]:
    n = np.arange(FRAME_LENGTH)
    return ((0.5 - 0.5 * np.cos(2 * np.pi * n / (FRAME_LENGTH - 1))) ** 0.85).astype(np.float32)


def fbank(samples: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """(frames, BINS) log mel energies of 16 kHz mono ``samples`` in [-1, 1]; frame i covers
    samples ``i * FRAME_SHIFT`` to ``i * FRAME_SHIFT + FRAME_LENGTH``."""
    x = np.ascontiguousarray(samples, dtype=np.float32)
    if len(x) < FRAME_LENGTH:
        return np.zeros((0, BINS), dtype=np.float32)
    frames = np.lib.stride_tricks.sliding_window_view(x, FRAME_LENGTH)[::FRAME_SHIFT]
    out = np.empty((len(frames), BINS), dtype=np.float32)
    for lo in range(0, len(frames), 4096):  # bounded memory on an hour of audio
        f = frames[lo : lo + 4096]
        f = f - f.mean(axis=1, keepdims=True)
        f = np.concatenate([f[:, :1] * (1 - PREEMPHASIS), f[:, 1:] - PREEMPHASIS * f[:, :-1]], 1)
        spectrum = np.fft.rfft(f * _povey(), n=N_FFT, axis=1)
        power = (spectrum.real**2 + spectrum.imag**2).astype(np.float32)
        energies = power @ mel_banks()
        out[lo : lo + 4096] = np.log(np.maximum(energies, np.finfo(np.float32).eps))
    return out
