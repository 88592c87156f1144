"""Utterances in and out of memory: read a JSONL file (all or nothing), build the index.

The JSONL format (ARCHITECTURE.md): ``{"id": "D1:3", "speaker": "Caroline",
"text": "...", "session": "s1", "t": "2023-05-08T13:56:00Z"}``; ``conversation``
is optional. A line that is a partial (``"type": "partial"``) is refused: only
finals are evidence.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, ValidationError

from heard.errors import InputError
from heard.memory.dense import Embedder
from heard.memory.evidence import Evidence, EvidenceIndex
from heard.store.database import Database
from heard.store.evidence import StoredUtterance, load_utterances, store_utterances

__all__ = ["as_evidence", "ingest_file", "load_index", "read_utterances"]


class _Utterance(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)
    id: str = Field(min_length=1, max_length=200)
    speaker: str = Field(min_length=1, max_length=200)
    text: str = Field(min_length=1)
    session: str = Field(default="", max_length=200)
    conversation: str = Field(default="", max_length=200)
    t: AwareDatetime | None = Field(default=None, strict=False)


def as_evidence(utterance: StoredUtterance) -> Evidence:
    return Evidence(
        utterance.id, utterance.speaker, utterance.text, utterance.conversation, utterance.t
    )


def read_utterances(path: str | Path) -> list[StoredUtterance]:
    """Validate a whole utterance file; one utterance per line."""
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{p}: no such file" if not p.exists() else f"{p}: not a regular file")
    out: list[StoredUtterance] = []
    seen: set[str] = set()
    with p.open(encoding="utf-8", errors="strict") as f:
        try:
            lines = list(enumerate(f, 1))
        except UnicodeDecodeError as e:
            raise InputError(f"{p}: not UTF-8 text ({e.reason})") from None
    for number, raw in lines:
        if not raw.strip():
            continue
        where = f"{p}:{number}"
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as e:
            raise InputError(f"{where}: malformed JSON ({e.msg})") from None
        if not isinstance(obj, dict):
            raise InputError(f"{where}: expected a JSON object")
        if obj.get("type", "final") != "final":
            raise InputError(
                f"{where}: a {obj.get('type')!r} is not evidence; only finals are admissible"
            )
        try:
            u = _Utterance.model_validate(obj)
        except ValidationError as e:
            problems = "; ".join(f"{'.'.join(map(str, x['loc']))}: {x['msg']}" for x in e.errors())
            raise InputError(f"{where}: {problems}") from None
        if u.id in seen:
            raise InputError(f"{where}: id {u.id!r} appears twice in the file")
        seen.add(u.id)
        conversation = u.conversation or u.session
        out.append(StoredUtterance(u.id, u.speaker, u.text, conversation, u.session, u.t))
    if not out:
        raise InputError(f"{p}: no utterances (the file is empty)")
    return out


def ingest_file(db: Database, path: str | Path, *, owner: str = "") -> int:
    """Store every utterance of ``path`` in one transaction; nothing if any is bad."""
    return store_utterances(db, read_utterances(path), source=str(path), owner=owner)


def load_index(db: Database, embedder: Embedder | None = None, *, owner: str = "") -> EvidenceIndex:
    """An index over every utterance ``owner`` stored, in the order they were stored."""
    index = EvidenceIndex(embedder)
    index.extend(as_evidence(u) for u in load_utterances(db, owner=owner))
    return index
