"""Evidence in the SQL store: ingest a JSONL file all or nothing, load it for recall.

The JSONL format (ARCHITECTURE.md): ``{"id": "D1:3", "speaker": "Caroline",
"text": "...", "session": "s1", "t": "2023-05-08T13:56:00Z"}``; ``conversation``
is optional. A line that is a partial (``"type": "partial"``) is refused: only
finals are evidence.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, ValidationError
from sqlalchemy import select

from heard.errors import ConflictError, InputError
from heard.memory.dense import Embedder
from heard.memory.evidence import Evidence, EvidenceIndex
from heard.store.database import Database
from heard.store.models import EvidenceRow

__all__ = ["ingest_file", "load_index", "read_utterances"]


class _Utterance(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)
    id: str = Field(min_length=1, max_length=200)
    speaker: str = Field(min_length=1, max_length=200)
    text: str = Field(min_length=1)
    session: str = Field(default="", max_length=200)
    conversation: str = Field(default="", max_length=200)
    t: AwareDatetime | None = Field(default=None, strict=False)


def read_utterances(path: str | Path) -> list[tuple[Evidence, str]]:
    """Validate a whole utterance file; ``(evidence, session)`` per line."""
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{p}: no such file" if not p.exists() else f"{p}: not a regular file")
    out: list[tuple[Evidence, str]] = []
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
        out.append((Evidence(u.id, u.speaker, u.text, conversation, u.t), u.session))
    if not out:
        raise InputError(f"{p}: no utterances (the file is empty)")
    return out


def ingest_file(db: Database, path: str | Path, *, owner: str = "") -> int:
    """Store every utterance of ``path`` in one transaction; nothing if any is bad."""
    return store_evidence(db, read_utterances(path), source=str(path), owner=owner)


def store_evidence(
    db: Database,
    items: list[tuple[Evidence, str]],
    *,
    source: str = "evidence",
    owner: str = "",
) -> int:
    """Store ``(evidence, session)`` pairs in one transaction; none if an id is taken."""
    with db.session() as s:
        ids = [e.id for e, _ in items]
        if len(set(ids)) != len(ids):
            raise InputError(f"{source}: the same id appears twice")
        taken = s.scalars(
            select(EvidenceRow.ext_id).where(
                EvidenceRow.owner == owner, EvidenceRow.ext_id.in_(ids)
            )
        ).all()
        if taken:
            raise ConflictError(f"{source}: ids already in memory: {', '.join(sorted(taken)[:5])}")
        s.add_all(
            EvidenceRow(
                owner=owner,
                ext_id=e.id,
                speaker=e.speaker,
                text=e.text,
                conversation=e.conversation,
                session=session,
                t=e.t,
            )
            for e, session in items
        )
    return len(items)


def load_index(db: Database, embedder: Embedder | None = None, *, owner: str = "") -> EvidenceIndex:
    """An index over every utterance ``owner`` stored, in the order they were stored."""
    index = EvidenceIndex(embedder)
    with db.session() as s:
        rows = s.scalars(
            select(EvidenceRow).where(EvidenceRow.owner == owner).order_by(EvidenceRow.seq)
        )
        index.extend(
            Evidence(row.ext_id, row.speaker, row.text, row.conversation, row.t) for row in rows
        )
    return index
