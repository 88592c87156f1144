"""The fixtures of the worker tests: a test module gives ``env`` (what its workers read:
test_celery.py's run on fakes, test_worker_real.py's as users run them); ``db`` and ``workers``
build on it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.meetings.workers import Workers

from heard.store.database import Database


@pytest.fixture
def workers(env: dict[str, str], tmp_path: Path) -> Iterator[Workers]:
    w = Workers(env, tmp_path)
    yield w
    w.stop()


@pytest.fixture
def db(env: dict[str, str]) -> Iterator[Database]:
    database = Database(env["HEARD_DATABASE_URL"])
    database.migrate()
    yield database
    database.dispose()
