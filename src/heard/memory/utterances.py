"""Utterances in and out of memory: read a JSONL file (all or nothing), build the index.

With an embedder, each utterance's vector is stored beside it (keyed by the model's
name) when it is stored, and read back when the index is built, so a recall encodes
only its query; evidence stored without a vector (before the dense scout was on, or
by another model) is encoded once, on the first load, and its vectors kept.

The JSONL format (docs/formats.md): ``{"id": "D1:3", "speaker": "Caroline",
"text": "...", "session": "s1", "t": "2023-05-08T13:56:00Z"}``; ``conversation``,
``language`` and ``"type": "final"`` are optional, and each line is checked as
``POST /v1/memory/evidence`` checks an utterance (``heard.utterance.UtteranceIn``). A
line that is a partial (``"type": "partial"``) is refused: only finals are evidence.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterator, Sequence
from pathlib import Path

import numpy as np
from pydantic import ValidationError

from heard.errors import InputError, RepeatedKeyError
from heard.memory.dense import Embedder
from heard.memory.evidence import Evidence, EvidenceIndex, embedded_text
from heard.storable import unique_keys
from heard.store.database import Database
from heard.store.evidence import (
    load_utterances,
    load_vectors,
    store_utterances,
    store_vectors,
)
from heard.utterance import UtteranceIn

__all__ = [
    "ingest_file",
    "load_evidence",
    "load_index",
    "read_utterances",
    "store_evidence",
]


MAX_LINE_BYTES = 1 << 20
"""A line longer than this (1 MiB) is refused before it is parsed: an utterance holds at
most 20,000 characters."""


def _lines(p: Path) -> Iterator[tuple[int, bytes]]:
    """``p``'s lines, numbered; one longer than MAX_LINE_BYTES stops the reading at once
    (memory holds one line at most)."""
    try:
        with p.open("rb") as f:
            for number, line in enumerate(iter(lambda: f.readline(MAX_LINE_BYTES + 1), b""), 1):
                if len(line) > MAX_LINE_BYTES:
                    raise InputError(f"{p}:{number}: line longer than {MAX_LINE_BYTES} bytes")
                yield number, line
    except OSError as e:
        raise InputError(f"{p}: cannot read ({e.strerror})") from None


def read_utterances(path: str | Path) -> list[Evidence]:
    """Validate a whole utterance file; one utterance per line."""
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{p}: no such file" if not p.exists() else f"{p}: not a regular file")
    out: list[Evidence] = []
    seen: set[str] = set()
    for number, line in _lines(p):
        try:
            raw = line.decode("utf-8")
        except UnicodeDecodeError as e:
            raise InputError(f"{p}:{number}: not UTF-8 text ({e.reason})") from None
        if not raw.strip():
            continue
        where = f"{p}:{number}"
        try:
            obj = json.loads(raw, object_pairs_hook=unique_keys)
        except json.JSONDecodeError as e:
            raise InputError(f"{where}: malformed JSON ({e.msg})") from None
        except RepeatedKeyError as e:
            raise InputError(f"{where}: the utterance {e}") from None
        except RecursionError:
            raise InputError(f"{where}: JSON nested too deeply") from None
        if not isinstance(obj, dict):
            raise InputError(f"{where}: expected a JSON object")
        if obj.get("type", "final") != "final":
            raise InputError(
                f"{where}: a {obj.get('type')!r} is not evidence; only finals are admissible"
            )
        try:
            u = UtteranceIn.model_validate(obj)
        except ValidationError as e:
            problems = "; ".join(f"{'.'.join(map(str, x['loc']))}: {x['msg']}" for x in e.errors())
            raise InputError(f"{where}: {problems}") from None
        if u.id in seen:
            raise InputError(f"{where}: id {u.id!r} appears twice in the file")
        seen.add(u.id)
        out.append(u.evidence())
    if not out:
        raise InputError(f"{p}: no utterances (the file is empty)")
    return out


def store_evidence(
    db: Database,
    items: Sequence[Evidence],
    embedder: Embedder | None = None,
    *,
    source: str = "evidence",
    owner: str = "",
    vectors: np.ndarray | None = None,
) -> np.ndarray | None:
    """Store ``items`` (all or none) with their vectors when there is an embedder (given in
    ``vectors``, or encoded here); the vectors, for the caller's index."""
    if embedder is None:
        store_utterances(db, items, source=source, owner=owner)
        return None
    if vectors is None:
        vectors = embedder.embed([embedded_text(u) for u in items])
    store_utterances(
        db, items, source=source, owner=owner, model=embedder.name,
        vectors=[row.tobytes() for row in vectors],
    )  # fmt: skip
    return vectors


def ingest_file(
    db: Database, path: str | Path, *, owner: str = "", embedder: Embedder | None = None
) -> int:
    """Store every utterance of ``path`` in one transaction; nothing if any is bad."""
    items = read_utterances(path)
    store_evidence(db, items, embedder, source=str(path), owner=owner)
    return len(items)


def load_evidence(
    db: Database,
    embedder: Embedder | None = None,
    *,
    owner: str = "",
    only: Collection[str] | None = None,
) -> tuple[list[Evidence], np.ndarray | None]:
    """``owner``'s evidence in the order stored (or the items of ``only``, ids) and, with an
    embedder, its vectors: the stored ones, the missing ones made now and kept."""
    evidence = load_utterances(db, owner=owner, ids=only)
    if embedder is None:
        return evidence, None
    width = 4 * embedder.dim
    stored = {
        key: vector
        for key, vector in load_vectors(db, owner=owner, model=embedder.name, ids=only).items()
        if len(vector) == width
    }
    missing = [e for e in evidence if e.id not in stored]
    if missing:
        made = embedder.embed([embedded_text(e) for e in missing])
        fresh = {e.id: row.tobytes() for e, row in zip(missing, made, strict=True)}
        store_vectors(db, fresh, owner=owner, model=embedder.name)
        stored |= fresh
    vectors = np.zeros((len(evidence), embedder.dim), dtype=np.float32)
    for row, e in enumerate(evidence):
        vectors[row] = np.frombuffer(stored[e.id], dtype=np.float32)
    return evidence, vectors


def load_index(db: Database, embedder: Embedder | None = None, *, owner: str = "") -> EvidenceIndex:
    """An index over every utterance ``owner`` stored, in the order they were stored."""
    index = EvidenceIndex(embedder)
    index.extend(*load_evidence(db, embedder, owner=owner))
    return index
