"""The server the REST and live tests talk to: alice and bob, on SQLite and PostgreSQL."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from heard.server.app import ServerSettings, create_app
from heard.store.database import Database
from heard.store.users import add_user


@pytest.fixture
def server(
    db: Database, tmp_path: Path
) -> Iterator[tuple[TestClient, dict[str, str], dict[str, str]]]:
    app = create_app(ServerSettings(db, tmp_path / "uploads"))
    _, alice = add_user(db, "alice")
    _, bob = add_user(db, "bob")
    with TestClient(app) as client:
        yield client, {"Authorization": f"Bearer {alice}"}, {"Authorization": f"Bearer {bob}"}


@pytest.fixture
def another_process() -> Iterator[int]:
    """The pid of a live process that is not this one."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        yield proc.pid
    finally:
        proc.kill()
        proc.wait()
