"""Embeddings are stored with evidence and pages, keyed by model: a recall encodes its query
and nothing else."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from sqlalchemy import func, select

from heard.memory.factory import MemoryParts, build_memory, remember
from heard.memory.recall import MemoryRecall
from heard.memory.utterances import load_evidence
from heard.memory.workspace import load_workspace, write_page
from heard.store.database import Database
from heard.store.evidence import store_utterances
from heard.store.models import EvidenceVector
from heard.testing import HashingEmbedder
from heard.utterance import Evidence
from tests.workspace import WORKSPACE

TURNS = [
    Evidence(
        id="d1",
        speaker="Ana",
        text="I adopted a puppy from the shelter last week.",
        conversation="c",
    ),
    Evidence(
        id="d2", speaker="Ben", text="We repainted the kitchen a pale green.", conversation="c"
    ),
    Evidence(
        id="d3", speaker="Ana", text="My sister is moving to Lisbon in March.", conversation="c"
    ),
    Evidence(
        id="d4",
        speaker="Ben",
        text="The quarterly budget review slipped to Friday.",
        conversation="c",
    ),
]


class Counting(HashingEmbedder):
    """Counts the texts it encodes."""

    def __init__(self, dim: int = 64, name: str | None = None) -> None:
        super().__init__(dim)
        self.name = name or self.name
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.texts.extend(texts)
        return super().embed(texts)


def stored_vectors(db: Database) -> int:
    with db.session() as s:
        return s.scalar(select(func.count()).select_from(EvidenceVector)) or 0


def ranking(memory: MemoryRecall, question: str) -> list[str]:
    assert memory.evidence is not None
    return [h.id for h in memory.evidence.recall(question, k=4)]


def test_remembered_evidence_keeps_its_vectors_and_a_recall_encodes_only_the_query(
    db: Database,
) -> None:
    writer = build_memory(db, MemoryParts(embedder=Counting()))
    remember(db, writer, TURNS, lock=threading.Lock())
    assert stored_vectors(db) == len(TURNS)

    reader_embedder = Counting()
    reader = build_memory(db, MemoryParts(embedder=reader_embedder))
    assert reader_embedder.texts == []  # loaded, not encoded
    assert ranking(reader, "new dog from the shelter") == ranking(
        writer, "new dog from the shelter"
    )
    assert reader_embedder.texts == ["new dog from the shelter"]


def test_evidence_stored_without_vectors_is_encoded_once(db: Database) -> None:
    store_utterances(db, TURNS)
    assert stored_vectors(db) == 0
    first = Counting()
    _, vectors = load_evidence(db, first)
    assert len(first.texts) == len(TURNS)
    assert stored_vectors(db) == len(TURNS)
    second = Counting()
    evidence, again = load_evidence(db, second)
    assert second.texts == []
    assert vectors is not None
    assert again is not None
    assert np.array_equal(vectors, again)
    # and they are the vectors of the stored texts, in the stored order
    assert np.array_equal(again, Counting().embed([f"{e.speaker}: {e.text}" for e in evidence]))


def test_vectors_are_kept_apart_by_model(db: Database) -> None:
    remember(db, build_memory(db, MemoryParts(embedder=Counting(64))), TURNS,
             lock=threading.Lock())  # fmt: skip
    other = Counting(64, name="another-model")
    load_evidence(db, other)
    assert len(other.texts) == len(TURNS)  # another model's vectors are never borrowed
    wider = Counting(128)  # the same name, other dimensions: not usable either
    wider.name = Counting(64).name
    _, vectors = load_evidence(db, wider)
    assert vectors is not None
    assert vectors.shape == (len(TURNS), 128)
    assert len(wider.texts) == len(TURNS)


def pages_of(folder: Path, embedder: Counting) -> MemoryRecall:
    """The memory of the workspace at ``folder``, built as heard builds it (its page vectors
    kept beside the pages)."""
    return build_memory(None, MemoryParts(embedder=embedder), workspace=folder)


def test_page_vectors_are_kept_beside_the_pages(tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    shutil.copytree(WORKSPACE, folder)
    pages = len(load_workspace(folder).pages.by_slug)
    first = Counting()
    pages_of(folder, first)
    assert len(first.texts) == pages
    second = Counting()
    memory = pages_of(folder, second)
    assert second.texts == []
    memory.recall("who is vegetarian?")
    assert second.texts.count("who is vegetarian?") >= 1
    assert all(t == "who is vegetarian?" for t in second.texts)
    # an edited page is encoded anew, alone
    page = next(iter(load_workspace(folder).pages.by_slug.values()))
    write_page(folder / "pages", page.slug, summary="A new summary of this page.",
               aliases=list(page.aliases), edges=list(page.edges), body=page.body)  # fmt: skip
    third = Counting()
    pages_of(folder, third)
    assert len(third.texts) == 1
    assert "A new summary" in third.texts[0]


def test_a_damaged_vector_file_only_costs_the_encoding(tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    shutil.copytree(WORKSPACE, folder)
    pages_of(folder, Counting())
    for kept in (folder / ".vectors").iterdir():
        kept.write_bytes(b"not a numpy file")
    again = Counting()
    memory = pages_of(folder, again)
    assert len(again.texts) == len(load_workspace(folder).pages.by_slug)
    assert memory.recall("who is vegetarian?").pages
