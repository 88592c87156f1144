"""Runs a process has accepted (a server's 202 to ``POST /v1/meetings/{id}/run``) and not
finished: the meeting records which process took the run (``Meeting.run_by``, named as a
track's claim is: ``heard.store.holder``) from before the answer until the run ends.

A run waiting in a server's queue lives only in that process; when the process is gone (kill
-9, a crash, a stop that dropped what waited), its record is what is left of the run: the next
server to start takes it back and runs it, and until some process does, the meeting reads
``interrupted`` (``heard.meetings.jobs``). Each function is one transaction.
"""

from __future__ import annotations

import uuid
from typing import Any, cast

from sqlalchemy import CursorResult, select, update

from heard.store.database import Database
from heard.store.holder import LOCAL, Holders, this_holder
from heard.store.models import Meeting

__all__ = ["accept_run", "end_run", "lost_run_meeting_ids", "runs_of", "take_run"]


def accept_run(db: Database, meeting_id: uuid.UUID, holder: str | None = None) -> None:
    """``holder`` (default: this process) has taken a run of the meeting: kept before the
    run is answered for, so that the run outlives the process that took it."""
    with db.session() as s:
        s.execute(
            update(Meeting).where(Meeting.id == meeting_id).values(run_by=holder or this_holder())
        )


def end_run(db: Database, meeting_id: uuid.UUID, holder: str | None) -> None:
    """The run ``holder`` took is over (a run taken since by another process is left as it
    is); ``holder`` None: whoever took it, as when the run goes to the workers' broker, which
    keeps it from then on."""
    with db.session() as s:
        query = update(Meeting).where(Meeting.id == meeting_id)
        if holder is not None:
            query = query.where(Meeting.run_by == holder)
        s.execute(query.values(run_by=None))


def lost_run_meeting_ids(db: Database, holders: Holders = LOCAL) -> list[uuid.UUID]:
    """Every meeting (any owner's) whose run a process that is gone took and never ended."""
    with db.session() as s:
        taken = s.execute(
            select(Meeting.id, Meeting.run_by)
            .where(Meeting.run_by.is_not(None))
            .order_by(Meeting.id)
        ).all()
    return [meeting_id for meeting_id, run_by in taken if holders.gone(run_by)]


def runs_of(db: Database, holder: str) -> list[uuid.UUID]:
    """The meetings whose runs ``holder`` took and has not ended."""
    with db.session() as s:
        return list(
            s.scalars(select(Meeting.id).where(Meeting.run_by == holder).order_by(Meeting.id))
        )


def take_run(db: Database, meeting_id: uuid.UUID, holder: str, holders: Holders) -> bool:
    """``holder`` takes the meeting's run over from a process ``holders`` knows is gone (or
    from no one):
    a compare-and-set on who had it, so of servers racing for it one wins. Whether it won."""
    with db.session() as s:
        had = s.scalar(select(Meeting.run_by).where(Meeting.id == meeting_id))
        if had == holder or (had is not None and not holders.gone(had)):
            return False
        taken = s.execute(
            update(Meeting)
            .where(Meeting.id == meeting_id,
                   Meeting.run_by.is_(None) if had is None else Meeting.run_by == had)
            .values(run_by=holder)
        )  # fmt: skip
        return cast(CursorResult[Any], taken).rowcount == 1
