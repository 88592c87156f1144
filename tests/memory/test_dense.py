"""The dense scout with the real all-MiniLM-L6-v2 (int8 ONNX, from heard[dense], part of dev)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from heard.memory.dense import DenseIndex, MiniLMEmbedder
from heard.memory.evidence import Evidence, EvidenceIndex
from heard.memory.recall import MemoryRecall
from heard.memory.workspace import load_workspace
from tests.cli.run import Ran, heard
from tests.workspace import WORKSPACE

TURNS = [
    ("d1", "Ana", "I adopted a puppy from the shelter last week."),
    ("d2", "Ben", "We finally repainted the kitchen a pale green."),
    ("d3", "Ana", "My sister is moving to Lisbon in March."),
    ("d4", "Ben", "The quarterly budget review slipped to Friday."),
]


@pytest.fixture(scope="module")
def embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder()


def test_embeddings_are_normalized_and_meaningful(embedder: MiniLMEmbedder) -> None:
    vectors = embedder.embed(["a young dog", "a puppy", "tax forms"])
    assert vectors.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2] + 0.2


def test_dense_scout_finds_a_paraphrase_bm25_cannot(embedder: MiniLMEmbedder) -> None:
    lexical, dense = EvidenceIndex(), EvidenceIndex(embedder)
    for index in (lexical, dense):
        index.extend(Evidence(id=i, speaker=s, text=t, conversation="c") for i, s, t in TURNS)
    query = "new dog"  # no word in common with d1 after stemming
    assert "d1" not in [h.id for h in lexical.recall(query, k=1)]
    assert [h.id for h in dense.recall(query, k=1)] == ["d1"]
    # and where the words match, the lexical part still leads
    assert dense.recall("budget review Friday", k=1)[0].id == "d4"


def test_dense_adds_one_at_a_time_and_refuses_duplicates(embedder: MiniLMEmbedder) -> None:
    index = EvidenceIndex(embedder)
    index.add(Evidence(id="d1", speaker="Ana", text=TURNS[0][2], conversation="c"))
    index.add(Evidence(id="d3", speaker="Ana", text=TURNS[2][2], conversation="c"))
    assert index.recall("relocating abroad", k=1)[0].id == "d3"
    with pytest.raises(Exception, match="already in memory"):
        index.extend(
            [
                Evidence(id="d9", speaker="Ana", text="x", conversation="c"),
                Evidence(id="d1", speaker="Ana", text="y", conversation="c"),
            ]
        )
    assert len(index) == 2  # nothing of the refused batch went in


def test_page_scout_brings_a_page_by_meaning(embedder: MiniLMEmbedder) -> None:
    ws = load_workspace(WORKSPACE)
    query = "which foods must we avoid serving her"
    plain = MemoryRecall(ws)
    dense = MemoryRecall(ws, embedder=embedder)
    assert "rhea" not in plain._scout(query)
    assert "rhea" in dense._scout(query)


def test_dense_index_grows_and_checks_dimensions() -> None:
    index = DenseIndex(3)
    for i in range(2000):
        v = np.zeros(3, dtype=np.float32)
        v[i % 3] = 1
        index.add(v)
    assert len(index) == 2000
    assert index.scores(np.array([0, 1, 0])).sum() == pytest.approx(667)
    with pytest.raises(ValueError, match="3 dimensions"):
        index.add(np.zeros((1, 4), dtype=np.float32))


def test_cli_dense_and_lexical_flags(tmp_path: Path) -> None:
    lines = "\n".join(
        f'{{"id": "{i}", "speaker": "{s}", "text": "{t}", "session": "c"}}' for i, s, t in TURNS
    )
    (tmp_path / "u.jsonl").write_text(lines + "\n")

    def run(*args: str, dense: str) -> Ran:
        return heard(*args, cwd=tmp_path, env={"HEARD_DENSE": dense})

    assert run("memory", "ingest", str(tmp_path / "u.jsonl"), dense="0").returncode == 0
    found = run("memory", "recall", "new dog", "-k", "1", "--dense", dense="1")
    assert found.returncode == 0, found.stderr
    assert "d1" in found.stdout
    lexical = run("memory", "recall", "new dog", "-k", "1", "--lexical", dense="1")
    assert "d1" not in lexical.stdout
    refused = run("memory", "recall", "new dog", "--dense", dense="0")
    assert refused.returncode == 2
    assert "pip install 'heard[dense]'" in refused.stderr
