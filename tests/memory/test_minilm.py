"""heard's numpy MiniLM against vectors sentence-transformers made with PyTorch."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from heard.memory.dense import MiniLMEmbedder

REFERENCE = Path(__file__).resolve().parents[1] / "data" / "minilm_reference.json"


@pytest.fixture(scope="module")
def embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder()


def test_vectors_match_sentence_transformers(embedder: MiniLMEmbedder) -> None:
    reference = json.loads(REFERENCE.read_text(encoding="utf-8"))
    expected = np.array(reference["vectors"], dtype=np.float32)
    # one batch: texts of 1 to 256+ tokens padded together, the longest one truncated
    got = embedder.embed(reference["texts"])
    assert got.shape == expected.shape == (5, 384)
    assert np.abs(got - expected).max() < 1e-4
    # and one at a time (no padding at all) gives the same vectors
    for text, row in zip(reference["texts"], expected, strict=True):
        assert np.abs(embedder.embed([text])[0] - row).max() < 1e-4


def test_order_and_empty_input(embedder: MiniLMEmbedder) -> None:
    texts = ["a puppy", "the quarterly budget review slipped to Friday", "a puppy"]
    vectors = embedder.embed(texts)
    assert np.allclose(vectors[0], vectors[2], atol=1e-6)
    assert not np.allclose(vectors[0], vectors[1], atol=1e-2)
    assert embedder.embed([]).shape == (0, 384)
