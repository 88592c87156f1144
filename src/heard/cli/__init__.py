"""The ``heard`` command line: thin shells over the library.

Errors heard raises on purpose (``HeardError``) become one line on stderr and
exit code 2; anything else is a bug and keeps its traceback.
"""

from heard.cli import (
    cadence,
    demo,
    live,
    meetings,
    memory,
    models,
    serve,
    stream,
    transcript,
    worker,
    wyoming,
)
from heard.cli.app import app

__all__ = [
    "app",
    "cadence",
    "demo",
    "live",
    "meetings",
    "memory",
    "models",
    "serve",
    "stream",
    "transcript",
    "worker",
    "wyoming",
]
