"""Memory evidence in the store: final utterances, per owner, in the order they were heard."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from heard.errors import ConflictError, InputError
from heard.store.database import Database
from heard.store.models import EvidenceRow, MemoryVersion

__all__ = [
    "StoredUtterance",
    "load_utterances",
    "memory_changed",
    "memory_version",
    "store_utterances",
]


@dataclass(frozen=True, slots=True)
class StoredUtterance:
    """A final utterance kept as evidence (the memory JSONL format of ARCHITECTURE.md)."""

    id: str
    speaker: str
    text: str
    conversation: str = ""
    """Which conversation it belongs to (its session when none is given)."""
    session: str = ""
    t: datetime | None = None


def store_utterances(
    db: Database, items: Sequence[StoredUtterance], *, source: str = "evidence", owner: str = ""
) -> int:
    """Store ``items`` for ``owner`` in one transaction; none of them if an id is taken."""
    ids = [u.id for u in items]
    if len(set(ids)) != len(ids):
        raise InputError(f"{source}: the same id appears twice")
    _ensure_counter(db, owner)
    try:
        return _insert(db, items, source=source, owner=owner)
    except IntegrityError:
        # another writer (a second server process) stored one of these ids meanwhile
        raise ConflictError(f"{source}: an id was stored meanwhile by another writer") from None


def _insert(db: Database, items: Sequence[StoredUtterance], *, source: str, owner: str) -> int:
    ids = [u.id for u in items]
    with db.session() as s:
        taken = s.scalars(
            select(EvidenceRow.ext_id).where(
                EvidenceRow.owner == owner, EvidenceRow.ext_id.in_(ids)
            )
        ).all()
        if taken:
            raise ConflictError(f"{source}: ids already in memory: {', '.join(sorted(taken)[:5])}")
        s.add_all(
            EvidenceRow(owner=owner, ext_id=u.id, speaker=u.speaker, text=u.text,
                        conversation=u.conversation, session=u.session, t=u.t)
            for u in items
        )  # fmt: skip
        _bump(s, owner)
    return len(items)


def _ensure_counter(db: Database, owner: str) -> None:
    """Make ``owner``'s change counter exist, in a transaction of its own (two processes may
    race to make it: the loser finds it made)."""
    try:
        with db.session() as s:
            if s.get(MemoryVersion, owner) is None:
                s.add(MemoryVersion(owner=owner, version=0))
    except IntegrityError:
        pass


def _bump(s: Session, owner: str) -> int:
    """Count one change to ``owner``'s memory, in the caller's transaction; the new count."""
    row = s.get_one(MemoryVersion, owner, with_for_update=True)
    row.version += 1
    return row.version


def memory_changed(db: Database, owner: str = "") -> int:
    """Count a change to ``owner``'s memory made outside the database (a page); the new count."""
    _ensure_counter(db, owner)
    with db.session() as s:
        return _bump(s, owner)


def memory_version(db: Database, owner: str = "") -> int:
    """How many changes ``owner``'s memory has seen (0: none)."""
    with db.session() as s:
        return s.scalar(select(MemoryVersion.version).where(MemoryVersion.owner == owner)) or 0


def load_utterances(db: Database, *, owner: str = "") -> list[StoredUtterance]:
    """Every utterance ``owner`` stored, in the order they were stored."""
    with db.session() as s:
        rows = s.scalars(
            select(EvidenceRow).where(EvidenceRow.owner == owner).order_by(EvidenceRow.seq)
        )
        return [
            StoredUtterance(r.ext_id, r.speaker, r.text, r.conversation, r.session, r.t)
            for r in rows
        ]
