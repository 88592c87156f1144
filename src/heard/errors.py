"""Exceptions raised by heard: every one of them is declared here.

Library code raises these; only the CLI and server edges turn them into messages, exit codes
and HTTP statuses (the server's table is ``heard.server.errors``). The tree, which
tests/test_errors.py holds against the classes::

    HeardError
    ├── InputError              bad user input (files, events, arguments)
    │   ├── EventLogError       a transcript-event log that cannot be read
    │   ├── AudioError          an audio file that is missing, empty or undecodable
    │   ├── NotFoundError       an id (meeting, track, page, user) that does not exist
    │   ├── ModelError          a recognition model, language or device not to be had as asked
    │   ├── ConflictError       an id or name that is taken already; nothing was stored
    │   ├── BusyError           more than a user may ask at once, or in a minute; try later
    │   ├── TooLargeError       an input over a size or length limit
    │   ├── SlowBodyError       a request body that stopped arriving before its end
    │   └── RepeatedKeyError    a JSON object that names a key twice (also a ValueError)
    ├── UnknownNameError        a strategy name not in its registry
    ├── TurnStateError          an accumulator used out of order
    ├── SocketCloseError        a live socket to close with a code and a reason
    ├── MissingDependencyError  an optional extra is not installed
    └── ServiceError            a service heard relies on failed or cannot be reached
        ├── StoreError          the database: unreachable, unopenable, or not heard's
        ├── BrokerError         the Celery broker
        ├── ProviderError       an LLM call: transport, timeout, refusal, no tool call
        ├── StoppingError       this process is shutting down: the work was given back
        └── NoRoomError         no room to keep what was sent: the disk, or the user's share
"""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "AudioError",
    "BrokerError",
    "BusyError",
    "ConflictError",
    "EventLogError",
    "HeardError",
    "InputError",
    "MissingDependencyError",
    "ModelError",
    "NoRoomError",
    "NotFoundError",
    "ProviderError",
    "RepeatedKeyError",
    "ServiceError",
    "SlowBodyError",
    "SocketCloseError",
    "StoppingError",
    "StoreError",
    "TooLargeError",
    "TurnStateError",
    "UnknownNameError",
]


class HeardError(Exception):
    """Base class of every error heard raises on purpose."""


class InputError(HeardError):
    """Input supplied by the user is missing, malformed or out of range."""


class EventLogError(InputError):
    """A transcript-event log (JSONL) could not be read.

    ``line`` is 1-based, or ``None`` when the problem is the file as a whole.
    """

    def __init__(self, path: Path | str, line: int | None, problem: str) -> None:
        self.path = str(path)
        self.line = line
        self.problem = problem
        where = self.path if line is None else f"{self.path}:{line}"
        super().__init__(f"{where}: {problem}")


class AudioError(InputError):
    """An audio file is missing, empty, not audio, or cannot be decoded."""


class NotFoundError(InputError, LookupError):
    """An id (meeting, track, page) that does not exist, or is not the caller's."""


class ModelError(InputError):
    """A recognition model, language, device or compute type that cannot be had as asked;
    the message names it and how to get it."""


class ConflictError(InputError):
    """Something with that id or name exists already; nothing was stored."""


class BusyError(InputError):
    """More work than one user may ask for at once, or in a minute; nothing was done.
    ``retry_after_s`` says when asking again may succeed."""

    def __init__(self, message: str, retry_after_s: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class TooLargeError(InputError):
    """An input over a limit of size or length (a body, a track's duration); nothing of it
    was kept."""


class SlowBodyError(InputError):
    """A request body that stopped arriving before its end; nothing of it was kept."""


class RepeatedKeyError(InputError, ValueError):
    """A JSON object names a key twice: a parser keeps the last, a proxy or a log may read
    the first (``heard.storable.unique_keys``)."""


class UnknownNameError(HeardError, KeyError):
    """A name that is not registered; the message lists the valid names."""

    def __init__(self, kind: str, name: str, valid: list[str]) -> None:
        self.kind = kind
        self.name = name
        self.valid = valid
        super().__init__(f"unknown {kind} {name!r}; choose one of: {', '.join(valid)}")

    def __str__(self) -> str:  # KeyError would quote the whole message
        return str(self.args[0])


class TurnStateError(HeardError):
    """A transcript accumulator was fed out of order (e.g. a partial after a final)."""


class SocketCloseError(HeardError):
    """A live socket is to be closed with a WebSocket close ``code`` and a ``reason``: what a
    protocol's codec raises on what it cannot go on after (``heard.server.session`` closes
    the socket)."""

    def __init__(self, code: int, reason: str) -> None:
        super().__init__(reason)
        self.code, self.reason = code, reason


class MissingDependencyError(HeardError, ImportError):
    """An optional dependency is missing; the message names the extra to install."""


class ServiceError(HeardError):
    """A service heard relies on (database, broker, LLM) failed or cannot be reached."""


class StoreError(ServiceError):
    """The database cannot be reached, opened or written, or is not heard's."""


class BrokerError(ServiceError):
    """The Celery broker cannot be reached."""


class ProviderError(ServiceError):
    """The LLM call failed: transport, timeout, refusal, or no tool call in the answer."""


class StoppingError(ServiceError):
    """This process is shutting down: the work it was doing stopped and nothing of it was
    kept; asked again (or resumed at the next start), it is done whole."""


class NoRoomError(ServiceError):
    """No room to keep what was sent: the disk is full, or the user's stored audio would pass
    their limit; nothing of it was kept."""
