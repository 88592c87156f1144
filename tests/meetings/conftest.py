"""The worker tests' ``workers``: a test module that asks for them gives ``env``, what its
workers read (test_celery.py's run on fakes, test_worker_real.py's as users run them)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.meetings.workers import Workers


@pytest.fixture
def workers(env: dict[str, str], tmp_path: Path) -> Iterator[Workers]:
    w = Workers(env, tmp_path)
    yield w
    w.stop()
