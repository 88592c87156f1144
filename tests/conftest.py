from __future__ import annotations

import os
from pathlib import Path

import pytest

from heard.samples import sample_path

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"  # what the tests read, with sources and licences in its README
AUDIO = DATA / "audio"

# Loading an embedder costs time on every CLI call, so the suite is lexical unless a test (the dense
# tests in tests/memory/test_dense.py) asks for the model itself.
os.environ["HEARD_DENSE"] = "0"


def _listing(folder: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in folder.rglob("*")
    }


_DATA_BEFORE = _listing(DATA)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The tests read tests/data and never write there (a copy is theirs to change)."""
    changed = sorted(set(_listing(DATA).items()) ^ set(_DATA_BEFORE.items()))
    if changed:
        names = ", ".join(sorted({name for name, _ in changed})[:5])
        print(f"\ntests changed tests/data: {names}", file=sys.stderr)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(autouse=True)
def _stores_closed() -> Iterator[None]:
    """Every store a test opens is disposed when it ends, as a CLI command's are (heard.scopes):
    a connection left to the garbage collector is a ResourceWarning on Python 3.13, raised in
    whichever later test the collector runs."""
    from heard.scopes import closed_at_end

    with closed_at_end():
        yield


@pytest.fixture
def jfk_log() -> Path:
    return sample_path("jfk_partials.jsonl")


@pytest.fixture
def runon_log() -> Path:
    return sample_path("runon_partials.jsonl")


# --- services: PostgreSQL and Redis at the test URLs -------------------------------------------
# `bash tools/test.sh` runs the suite under tools/services.py, which points the URLs at servers
# that answer (starting throwaway ones when it must). A test that needs one carries the
# `services` marker: without the service it is skipped with one reason, and under CI it fails.

import functools  # noqa: E402
import sys  # noqa: E402
import uuid  # noqa: E402
from collections.abc import Iterator  # noqa: E402

from sqlalchemy import create_engine, text  # noqa: E402

from heard.store.database import Database  # noqa: E402

if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
from tools.services import POSTGRES, REDIS, Service  # noqa: E402

SERVICE_FIXTURES = {"postgres_url": POSTGRES, "redis_url": REDIS}
IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}


@functools.cache
def _problem(service: Service, url: str) -> str | None:
    return service.problem(url)


def service_url(service: Service) -> str:
    """The URL where ``service`` answers; skips the test without it, or fails it under CI."""
    url = os.environ.get(service.env) or service.default_url
    reason = _problem(service, url)
    if reason is not None:
        message = (
            f"{service.name} does not answer at {url} ({reason}); "
            f"`bash tools/test.sh` starts one, or set {service.env} to yours"
        )
        if IN_CI:
            pytest.fail(f"under CI every services test runs: {message}", pytrace=False)
        pytest.skip(message)
    return url


@pytest.fixture(scope="session")
def postgres_url() -> str:
    return service_url(POSTGRES)


@pytest.fixture(scope="session")
def redis_url() -> str:
    return service_url(REDIS)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if SERVICE_FIXTURES.keys() & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.services)


def postgres_database(url: str) -> Iterator[Database]:
    """A Database in a schema of its own on the PostgreSQL at ``url``, dropped afterwards."""
    schema = f"heard_test_{uuid.uuid4().hex[:12]}"
    admin = create_engine(url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    db = Database(url, engine_options={"connect_args": {"options": f"-csearch_path={schema}"}})
    try:
        yield db
    finally:
        db.dispose()
        with admin.connect() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


@pytest.fixture
def postgres_schema_url(postgres_url: str) -> Iterator[str]:
    """A URL whose connections work in a schema of their own (for processes of their own:
    workers, servers), dropped afterwards."""
    schema = f"heard_test_{uuid.uuid4().hex[:12]}"
    admin = create_engine(postgres_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    yield f"{postgres_url}?options=-csearch_path%3D{schema}"
    with admin.connect() as conn:
        conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
    admin.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.services)])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    if request.param == "sqlite":
        database = Database(f"sqlite:///{tmp_path / 'heard.db'}")
        database.migrate()
        yield database
        database.dispose()
    else:
        for database in postgres_database(request.getfixturevalue("postgres_url")):
            database.migrate()
            yield database
