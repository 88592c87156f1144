"""The HTTP status of each of heard's errors: one table, read by the server's one handler."""

from __future__ import annotations

from heard.errors import (
    ConflictError,
    HeardError,
    InputError,
    MissingDependencyError,
    NotFoundError,
    ServiceError,
    UnknownNameError,
)

__all__ = ["STATUS_OF", "status_of"]

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
