from __future__ import annotations

import os
from pathlib import Path

import pytest

from heard.samples import sample_path

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("HEARD_SHARED_DATA", REPO.parent / "shared" / "data"))

# Loading MiniLM costs seconds per CLI call, so the suite is lexical unless a test (the dense
# tests in tests/memory/test_dense.py) asks for the model itself.
os.environ["HEARD_DENSE"] = "0"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not (SHARED_DATA / "audio" / "jfk.flac").is_file():
        raise pytest.UsageError(
            f"the shared test data is not at {SHARED_DATA}: clone heard beside shared/, "
            "or set HEARD_SHARED_DATA to the shared/data folder"
        )


@pytest.fixture
def jfk_log() -> Path:
    return sample_path("jfk_partials.jsonl")


@pytest.fixture
def runon_log() -> Path:
    return sample_path("runon_partials.jsonl")


# --- databases: every store test runs on SQLite and on the PostgreSQL at 127.0.0.1 ----------

import uuid  # noqa: E402
from collections.abc import Iterator  # noqa: E402

from sqlalchemy import create_engine, text  # noqa: E402

from heard.store.database import Database  # noqa: E402

POSTGRES_URL = os.environ.get(
    "HEARD_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)


def postgres_database() -> Iterator[Database]:
    """A Database in a schema of its own, dropped afterwards."""
    schema = f"heard_test_{uuid.uuid4().hex[:12]}"
    admin = create_engine(POSTGRES_URL, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    except Exception as e:  # noqa: BLE001
        pytest.fail(f"PostgreSQL at {POSTGRES_URL} is not reachable ({e}); it must be running")
    db = Database(
        POSTGRES_URL, engine_options={"connect_args": {"options": f"-csearch_path={schema}"}}
    )
    try:
        yield db
    finally:
        db.dispose()
        with admin.connect() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    if request.param == "sqlite":
        database = Database(f"sqlite:///{tmp_path / 'heard.db'}")
        database.migrate()
        yield database
        database.dispose()
    else:
        for database in postgres_database():
            database.migrate()
            yield database
