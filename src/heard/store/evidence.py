"""Memory evidence in the store: final utterances, per owner, in the order they were heard."""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from heard.errors import ConflictError, InputError
from heard.store.database import Database
from heard.store.models import EvidenceRow, EvidenceVector, MemoryVersion
from heard.utterance import Evidence

__all__ = [
    "load_utterances",
    "load_vectors",
    "memory_changed",
    "memory_version",
    "replace_conversation",
    "store_utterances",
    "store_vectors",
    "stored_ids",
]


def store_utterances(
    db: Database,
    items: Sequence[Evidence],
    *,
    source: str = "evidence",
    owner: str = "",
    model: str = "",
    vectors: Sequence[bytes] = (),
) -> int:
    """Store ``items`` for ``owner`` in one transaction; none of them if an id is taken.
    ``vectors`` (one per item, made by ``model``) are stored with them."""
    ids = [u.id for u in items]
    if len(set(ids)) != len(ids):
        raise InputError(f"{source}: the same id appears twice")
    if vectors and (len(vectors) != len(items) or not model):
        raise ValueError("vectors need a model name and one vector per item")
    _ensure_counter(db, owner)
    try:
        return _insert(db, items, source=source, owner=owner, model=model, vectors=vectors)
    except IntegrityError:
        # another writer (a second server process) stored one of these ids meanwhile
        raise ConflictError(f"{source}: an id was stored meanwhile by another writer") from None


def _insert(
    db: Database,
    items: Sequence[Evidence],
    *,
    source: str,
    owner: str,
    model: str,
    vectors: Sequence[bytes],
) -> int:
    ids = [u.id for u in items]
    with db.session() as s:
        taken = s.scalars(
            select(EvidenceRow.ext_id).where(
                EvidenceRow.owner == owner, EvidenceRow.ext_id.in_(ids)
            )
        ).all()
        if taken:
            raise ConflictError(f"{source}: ids already in memory: {', '.join(sorted(taken)[:5])}")
        rows = [
            EvidenceRow(owner=owner, ext_id=u.id, speaker=u.speaker, text=u.text,
                        conversation=u.conversation, session=u.session, t=u.t,
                        language=u.language)
            for u in items
        ]  # fmt: skip
        s.add_all(rows)
        if vectors:
            s.flush()  # the rows' seq
            s.add_all(
                EvidenceVector(seq=row.seq, model=model, vector=vector)
                for row, vector in zip(rows, vectors, strict=True)
            )
        _bump(s, owner)
    return len(items)


def replace_conversation(
    db: Database, items: Sequence[Evidence], *, conversation: str, owner: str = ""
) -> int:
    """Make ``items`` the whole of ``owner``'s evidence from ``conversation`` (none: forget
    it), in one transaction; a memory that held the old items notices at its next catch-up
    (``stored_ids``). Their ids must not be used by another conversation's evidence."""
    if any(u.conversation != conversation for u in items):
        raise ValueError(f"every item must belong to {conversation!r}")
    _ensure_counter(db, owner)
    with db.session() as s:
        # the owner's counter row locked first: two replacements of one conversation (racing
        # builds of a meeting) take turns, and the second deletes what the first stored
        s.get_one(MemoryVersion, owner, with_for_update=True)
        s.execute(
            delete(EvidenceRow).where(
                EvidenceRow.owner == owner, EvidenceRow.conversation == conversation
            )
        )
        s.add_all(
            EvidenceRow(owner=owner, ext_id=u.id, speaker=u.speaker, text=u.text,
                        conversation=u.conversation, session=u.session, t=u.t,
                        language=u.language)
            for u in items
        )  # fmt: skip
        _bump(s, owner)
    return len(items)


def stored_ids(db: Database, owner: str = "") -> set[str]:
    """The ids of ``owner``'s evidence as stored now."""
    with db.session() as s:
        return set(s.scalars(select(EvidenceRow.ext_id).where(EvidenceRow.owner == owner)))


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


_CHUNK = 500
"""Ids per statement when rows are read by id (bounds its parameters)."""


def load_utterances(
    db: Database, *, owner: str = "", ids: Collection[str] | None = None
) -> list[Evidence]:
    """Every utterance ``owner`` stored (or those of ``ids``), in the order they were
    stored. Read as plain rows: a memory of 50,000 utterances loads in a fifth of the time
    ORM objects take."""
    columns = (EvidenceRow.seq, EvidenceRow.ext_id, EvidenceRow.speaker, EvidenceRow.text,
               EvidenceRow.conversation, EvidenceRow.session, EvidenceRow.t,
               EvidenceRow.language)  # fmt: skip
    found: list[Any] = []
    with db.session() as s:
        for where in _by_id(owner, ids):
            found += s.execute(select(*columns).where(*where).order_by(EvidenceRow.seq)).all()
    found.sort(key=lambda r: r[0])
    return [
        Evidence(id=ext_id, speaker=speaker, text=text, conversation=conversation,
                 session=session, t=t, language=language)
        for _, ext_id, speaker, text, conversation, session, t, language in found
    ]  # fmt: skip


def _by_id(owner: str, ids: Collection[str] | None) -> Iterator[tuple[Any, ...]]:
    """The where clauses that read ``owner``'s rows (of ``ids``, a chunk at a time)."""
    if ids is None:
        yield (EvidenceRow.owner == owner,)
        return
    wanted = list(ids)
    for start in range(0, len(wanted), _CHUNK):
        yield EvidenceRow.owner == owner, EvidenceRow.ext_id.in_(wanted[start : start + _CHUNK])


def load_vectors(
    db: Database, *, owner: str = "", model: str, ids: Collection[str] | None = None
) -> dict[str, bytes]:
    """``owner``'s stored vectors made by ``model`` (of ``ids``), by evidence id."""
    found: dict[str, bytes] = {}
    with db.session() as s:
        for where in _by_id(owner, ids):
            rows = s.execute(
                select(EvidenceRow.ext_id, EvidenceVector.vector)
                .join(EvidenceVector, EvidenceVector.seq == EvidenceRow.seq)
                .where(*where, EvidenceVector.model == model)
            )
            found.update((ext_id, vector) for ext_id, vector in rows)
    return found


def store_vectors(
    db: Database, vectors: Mapping[str, bytes], *, owner: str = "", model: str
) -> None:
    """Keep ``vectors`` (by evidence id) for evidence stored without them. Another process
    storing the same ones meanwhile is fine: they are the same vectors."""
    ids = list(vectors)
    for start in range(0, len(ids), _CHUNK):  # bound the statement's parameters
        chunk = ids[start : start + _CHUNK]
        try:
            with db.session() as s:
                seqs = s.execute(
                    select(EvidenceRow.ext_id, EvidenceRow.seq).where(
                        EvidenceRow.owner == owner, EvidenceRow.ext_id.in_(chunk)
                    )
                ).all()
                s.add_all(
                    EvidenceVector(seq=seq, model=model, vector=vectors[ext_id])
                    for ext_id, seq in seqs
                )
        except IntegrityError:
            pass
