"""Memory evidence in the store: final utterances, per owner, in the order they were heard."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from heard.errors import ConflictError, InputError
from heard.store.database import Database
from heard.store.models import EvidenceRow

__all__ = ["StoredUtterance", "load_utterances", "store_utterances"]


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
    return len(items)


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
