"""Text every store keeps as given: what a request, an event or an utterance may carry.

PostgreSQL refuses NUL characters; a lone surrogate (a ``\\ud800`` JSON escape with no pair)
is not UTF-8, so no database, file or socket can hold it. Both are refused where text comes
in, naming the field, rather than failing later where it is stored or sent. Times are kept
in UTC: one that has no UTC date (1 January of year 1 at +10:00) is refused the same way.
"""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["MAX_NAME_CHARS", "storable", "storable_time"]

MAX_NAME_CHARS = 200
"""A speaker's or participant's name, an id, a session: the store's column width."""


def storable(value: str) -> str:
    """``value``, if a store can keep it; ``ValueError`` saying why not."""
    if "\x00" in value:
        raise ValueError("NUL characters are not allowed")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("lone surrogates are not text (an unpaired \\u escape)") from None
    return value


def storable_time(value: datetime) -> datetime:
    """``value`` (aware) in UTC, as the store keeps it; ``ValueError`` if UTC has no such date."""
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise ValueError("out of range once in UTC (years 1 to 9999)") from None
