"""The store a command opens: light on purpose. ``heard memory`` and ``heard live`` open the
store with it and need nothing of the meeting pipeline (``heard.cli.meeting_jobs``), whose
imports a recall would pay for at every start (tests/test_startup.py holds this)."""

from __future__ import annotations

from heard.errors import InputError, NotFoundError
from heard.settings import database_url
from heard.store.database import Database, safe_url

__all__ = ["open_store", "queue_database"]


def open_store(url: str | None, meeting_id: str | None = None) -> Database:
    """The store, its schema upgraded; asking for a meeting in an empty store is not found."""
    db = Database(database_url(url))
    if db.has_schema():
        db.migrate()
    elif meeting_id is not None:
        raise NotFoundError(f"no meeting {meeting_id!r} (no meetings in {db.safe_url})")
    return db


def queue_database(url: str | None) -> Database:
    """The store a ``--queue`` command writes to: the one the workers open. They read
    ``$HEARD_DATABASE_URL`` (or the SQLite default) where they run, so a ``--db`` naming another
    database would leave its meetings pending forever, each task finding nothing: refused."""
    workers = database_url(None)
    if url and url != workers:
        raise InputError(
            f"--queue with --db {safe_url(url)}: the workers open "
            f"{safe_url(workers)} ($HEARD_DATABASE_URL); set HEARD_DATABASE_URL to the one "
            "database, here and where the workers run, and leave out --db"
        )
    return Database(workers)
