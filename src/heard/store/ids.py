"""Meeting ids as users type them: a UUID, or a unique prefix of at least 8 characters."""

from __future__ import annotations

import uuid

from sqlalchemy import String, cast, func, select
from sqlalchemy.orm import Session

from heard.errors import NotFoundError
from heard.store.database import Database
from heard.store.models import Meeting

__all__ = ["find_meeting_id", "resolve_meeting_id"]


def resolve_meeting_id(
    session: Session, meeting_id: uuid.UUID | str, owner: str | None = None
) -> uuid.UUID:
    """The meeting's id from a UUID or a unique prefix of one; ``NotFoundError`` otherwise.

    With ``owner``, someone else's meeting is not found either (its existence does not leak).
    """
    if isinstance(meeting_id, uuid.UUID):
        found = session.get(Meeting, meeting_id)
        if found is None or (owner is not None and found.owner != owner):
            raise NotFoundError(f"no meeting {meeting_id}")
        return found.id
    text = meeting_id.strip().lower()
    try:
        exact = uuid.UUID(text)
    except ValueError:
        exact = None
    if exact is not None:
        return resolve_meeting_id(session, exact, owner)
    if len(text) < 8 or any(c not in "0123456789abcdef-" for c in text):
        raise NotFoundError(
            f"no meeting {meeting_id!r} (give its id, or at least 8 characters of it)"
        )
    # UUIDs are stored without dashes on SQLite and as uuid on PostgreSQL; compare as text.
    column = func.replace(cast(Meeting.id, String), "-", "")
    query = select(Meeting.id).where(column.like(text.replace("-", "") + "%"))
    if owner is not None:
        query = query.where(Meeting.owner == owner)
    ids = session.scalars(query.limit(2)).all()
    if not ids:
        raise NotFoundError(f"no meeting {meeting_id!r}")
    if len(ids) > 1:
        raise NotFoundError(f"meeting id {meeting_id!r} is ambiguous; give more characters")
    return ids[0]


def find_meeting_id(
    db: Database, meeting_id: uuid.UUID | str, owner: str | None = None
) -> uuid.UUID:
    """The full id of a meeting given by id or unique prefix (``NotFoundError`` if none)."""
    with db.session() as s:
        return resolve_meeting_id(s, meeting_id, owner)
