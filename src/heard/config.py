"""Settings read from the environment, each with a default that needs no service.

* ``HEARD_DATABASE_URL``: SQLAlchemy URL of the store. Default: a SQLite file in the
  user's data directory (``~/.local/share/heard/heard.db`` on Linux). For
  deployments: ``postgresql+psycopg://USER@HOST:5432/DB``.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["DATABASE_URL_ENV", "data_dir", "database_url"]

DATABASE_URL_ENV = "HEARD_DATABASE_URL"


def data_dir() -> Path:
    from platformdirs import user_data_dir

    return Path(user_data_dir("heard", appauthor=False))


def database_url(explicit: str | None = None) -> str:
    """The store's URL: ``explicit``, else ``$HEARD_DATABASE_URL``, else the SQLite default."""
    if explicit:
        return explicit
    env = os.environ.get(DATABASE_URL_ENV)
    if env:
        return env
    return f"sqlite:///{data_dir() / 'heard.db'}"
