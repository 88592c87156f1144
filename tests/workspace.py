"""The memory tests' workspace: a copy of tests/data/memory per test process, so nothing a
recall keeps beside the pages (their vectors in ``.vectors/``) lands in the repository."""

from __future__ import annotations

import atexit
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

_ORIGINAL = Path(__file__).resolve().parent / "data" / "memory"
_COPY = Path(tempfile.mkdtemp(prefix="heard-workspace-"))
atexit.register(shutil.rmtree, _COPY, ignore_errors=True)

WORKSPACE = _COPY / "memory"
shutil.copytree(_ORIGINAL, WORKSPACE)


class Flat:
    """An embedder for which every text is the same: the dense scout brings pages in order."""

    name = "flat"
    dim = 4
    unrelated = 0.0
    weight = 0.9

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.full((len(texts), self.dim), 0.5, dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        row: np.ndarray = self.embed([text])[0]
        return row
