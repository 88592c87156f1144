"""The HTTP status of each of heard's errors: one table, read by the server's one handler."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from heard.errors import (
    ConflictError,
    HeardError,
    InputError,
    MissingDependencyError,
    NotFoundError,
    ServiceError,
    UnknownNameError,
)

__all__ = ["EXCERPT_CHARS", "STATUS_OF", "invalid_detail", "status_of"]

STATUS_OF: dict[type[HeardError], int] = {
    NotFoundError: 404,
    ConflictError: 409,
    InputError: 422,
    UnknownNameError: 422,
    ServiceError: 503,
    MissingDependencyError: 503,
}
"""Each error class and its status; a subclass takes its nearest ancestor's row."""


def status_of(error: HeardError) -> int:
    """The status of ``error``'s nearest class in the table; 500 for one not in it (a bug)."""
    for cls in type(error).__mro__:
        if cls in STATUS_OF:
            return STATUS_OF[cls]
    return 500


EXCERPT_CHARS = 80
"""A reply quotes at most this much of what it refuses: never the whole (maybe huge) input."""


def excerpt(value: object) -> str:
    """A short, always-encodable quote of an input value."""
    text = value if isinstance(value, str) else repr(value)
    if len(text) > EXCERPT_CHARS:
        text = f"{text[:EXCERPT_CHARS]}... ({len(text)} characters)"
    return text.encode("utf-8", "backslashreplace").decode("utf-8")  # lone surrogates too


def invalid_detail(errors: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A request validation's errors as the 422 lists them: where, what and a short excerpt."""
    return [
        {
            "loc": [part if isinstance(part, int) else excerpt(part) for part in e["loc"]],
            "msg": excerpt(e["msg"]) if len(str(e["msg"])) > 2 * EXCERPT_CHARS else e["msg"],
            "type": e["type"],
            "input": excerpt(e.get("input")),
        }
        for e in errors
    ]
