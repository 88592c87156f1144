"""Leases: how a process that holds runs and claims (a server) shows the store it still does.

Each such process renews its row in ``holders`` every few seconds. A holder whose row is
older than the lease is gone, wherever it ran: its claims expire with the lease and its runs
may be taken over (``heard.meetings.runner``). A holder with no row (``heard transcribe``, a
worker) is judged as before: at once when it was a process of this host
(``heard.store.holder``), else by the stuck timeout.

A store that was away was away for every holder: none could renew. So an observer judges
others by their leases only once it has itself renewed without a gap for a whole lease; by
then every holder that lived through the outage has renewed too. Times are the hosts' own
clocks: hosts sharing a store must keep them in step (NTP) to well within a lease.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import CursorResult, delete, select, update
from sqlalchemy.exc import IntegrityError

from heard.store.database import Database
from heard.store.holder import LOCAL, Holders, holder_is_gone
from heard.store.models import Holder

__all__ = ["MAX_LEASE_S", "Leases", "end_lease", "judge", "renew_lease"]

MAX_LEASE_S = 600.0
"""The longest lease a setting may ask for."""
ENDED_AGO = timedelta(hours=1)
"""How long ago a holder that stopped cleanly says it renewed: past any lease, so what it
gave back is taken over at once."""
FORGOTTEN_AFTER = timedelta(days=1)
"""Rows not renewed for this long are removed (a claim naming one then waits for the stuck
timeout, as one with no lease does)."""


def renew_lease(db: Database, holder: str, now: datetime) -> None:
    """``holder`` still runs (one transaction; ``StoreError`` when the store is away)."""
    with db.session() as s:
        renewed = s.execute(update(Holder).where(Holder.holder == holder).values(renewed_at=now))
        if cast(CursorResult[Any], renewed).rowcount == 1:
            return
    try:
        with db.session() as s:
            s.add(Holder(holder=holder, renewed_at=now))
    except IntegrityError:  # made meanwhile (a renewal that ran twice): renew it
        with db.session() as s:
            s.execute(update(Holder).where(Holder.holder == holder).values(renewed_at=now))


def end_lease(db: Database, holder: str, now: datetime) -> None:
    """``holder`` stopped cleanly: what it gave back may be taken over at once."""
    with db.session() as s:
        s.execute(update(Holder).where(Holder.holder == holder).values(renewed_at=now - ENDED_AGO))


class Leases(Holders):
    """The holders as the leases show them at one moment (``judge``)."""

    def __init__(self, expired: frozenset[str], renewing: frozenset[str]) -> None:
        self._expired, self._renewing = expired, renewing

    def gone(self, holder: str | None) -> bool:
        return holder_is_gone(holder) or (holder is not None and holder in self._expired)

    def renewing(self, holder: str | None) -> bool:
        return holder is not None and holder in self._renewing and not holder_is_gone(holder)


def judge(db: Database, now: datetime, lease_s: float, *, by_lease: bool = True) -> Holders:
    """The holders as seen at ``now``. A process of this host that no longer runs is gone;
    with ``by_lease`` (the observer has been in touch with the store for a whole lease), so is
    one whose lease ran out ``lease_s`` ago, and one that renewed since runs. Removes rows
    long forgotten."""
    if not by_lease:
        return LOCAL
    cutoff = now - timedelta(seconds=lease_s)
    with db.session() as s:
        s.execute(delete(Holder).where(Holder.renewed_at < now - FORGOTTEN_AFTER))
        rows = s.execute(select(Holder.holder, Holder.renewed_at)).all()
    expired = frozenset(h for h, at in rows if at < cutoff)
    return Leases(expired, frozenset(h for h, _ in rows) - expired)
