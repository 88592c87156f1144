"""The dense scout's models, run as heard runs them (no PyTorch): MiniLM's int8 ONNX against
the vectors sentence-transformers made with the float model, and multilingual E5."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from heard.errors import InputError
from heard.memory.dense import DenseIndex, E5Embedder, MiniLMEmbedder, embedder_choice

REFERENCE = Path(__file__).resolve().parents[1] / "data" / "minilm_reference.json"


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    return MiniLMEmbedder()


@pytest.fixture(scope="module")
def e5() -> E5Embedder:
    return E5Embedder()


def test_int8_minilm_stays_near_the_float_model(minilm: MiniLMEmbedder) -> None:
    reference = json.loads(REFERENCE.read_text(encoding="utf-8"))
    expected = np.array(reference["vectors"], dtype=np.float32)
    # one batch: texts of 1 to 256+ tokens padded together, the longest one truncated
    got = minilm.embed(reference["texts"])
    assert got.shape == expected.shape == (5, 384)
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    assert (got * expected).sum(1).min() > 0.995  # int8 weights: near, not equal
    # one at a time (no padding at all) gives the same vectors as the padded batch
    for text, row in zip(reference["texts"], got, strict=True):
        assert np.abs(minilm.embed_query(text) - row).max() < 1e-4


def test_order_and_empty_input(minilm: MiniLMEmbedder, e5: E5Embedder) -> None:
    texts = ["a puppy", "the quarterly budget review slipped to Friday", "a puppy"]
    for embedder in (minilm, e5):
        vectors = embedder.embed(texts)
        assert vectors.shape == (3, 384)
        assert vectors.dtype == np.float32
        assert np.allclose(vectors[0], vectors[2], atol=1e-6)
        assert not np.allclose(vectors[0], vectors[1], atol=1e-2)
        assert embedder.embed([]).shape == (0, 384)
        assert embedder.embed(["one"]).shape == (1, 384)


def test_e5_finds_a_turn_said_in_another_language(e5: E5Embedder) -> None:
    turns = [
        "Ana trabaja como enfermera en un hospital de Madrid.",
        "Мы вчера ходили в кино с друзьями.",
        "I bought a new bike for the trip to the coast.",
    ]
    index = DenseIndex(e5.dim, e5.unrelated)
    index.add(e5.embed(turns))
    asks = {
        "Where does Ana work?": 0,  # English question, Spanish turn
        "¿Qué hicieron ayer con los amigos?": 1,  # Spanish question, Russian turn
        "Какой велосипед я купил для поездки на побережье?": 2,  # Russian question, English
    }
    for question, wanted in asks.items():
        scores = index.scores(e5.embed_query(question))
        assert int(np.argmax(scores)) == wanted, question
    # rescaled from E5's cosine of unrelated texts (about 0.7): a match scores well over 0
    assert index.scores(e5.embed_query("Where does Ana work?"))[0] > 0.3


def test_minilm_does_not_cross_languages(minilm: MiniLMEmbedder) -> None:
    """Why e5 exists: the English model ranks by shared word pieces, not meaning."""
    turns = ["Мы вчера ходили в кино с друзьями.", "I bought a new bike for the trip."]
    index = DenseIndex(minilm.dim)
    index.add(minilm.embed(turns))
    scores = index.scores(minilm.embed_query("Did you go to the cinema with friends?"))
    assert scores[0] < 0.3


def test_the_choice_follows_the_told_language() -> None:
    assert embedder_choice() == "minilm"
    assert embedder_choice("auto", "EN-us") == "minilm"
    assert embedder_choice("auto", "es") == "e5"
    assert embedder_choice("minilm", "es") == "minilm"
    assert embedder_choice(" E5 ") == "e5"
    with pytest.raises(InputError, match="HEARD_EMBEDDER='bert'"):
        embedder_choice("bert")


def test_the_settings_choose_the_memory_parts() -> None:
    from heard.memory.factory import MemoryParts
    from heard.settings import settings

    env = {"HEARD_DENSE": "1", "HEARD_EMBEDDER": "auto", "HEARD_LANGUAGE": "ru"}
    parts = MemoryParts.from_settings(settings(env))
    assert isinstance(parts.embedder, E5Embedder)
    assert parts.provider is None
    assert MemoryParts.from_settings(settings(env), dense=False).embedder is None
    assert MemoryParts.from_settings(settings({"HEARD_DENSE": "0"})).embedder is None
