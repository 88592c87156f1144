"""What a scope opened, closed when it ends: ``closed_at_end`` around a CLI command disposes
every store the command made, however it made it (``heard.store.database.Database`` reports
itself here), so none is left to the garbage collector, which Python 3.13 warns about for
each SQLite connection. Light on purpose: a command that opens nothing loads nothing."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Protocol

__all__ = ["Disposable", "closed_at_end", "opened"]


class Disposable(Protocol):
    def dispose(self) -> None: ...


_OPENED: ContextVar[list[Disposable] | None] = ContextVar("heard_opened", default=None)


@contextmanager
def closed_at_end() -> Iterator[None]:
    """Dispose, last first, of what ``opened`` was told of inside the block: of every one,
    even where one fails (the first failure is raised after, unless the block raised)."""
    held: list[Disposable] = []
    token = _OPENED.set(held)
    try:
        yield
    finally:
        _OPENED.reset(token)
        failed: list[Exception] = []
        for resource in reversed(held):
            try:
                resource.dispose()
            except Exception as e:  # noqa: BLE001 - the others are still disposed of
                failed.append(e)
        if failed and sys.exc_info()[1] is None:
            raise failed[0]


def opened(resource: Disposable) -> None:
    """``resource`` was opened: the innermost ``closed_at_end`` block disposes of it."""
    if (held := _OPENED.get()) is not None:
        held.append(resource)
