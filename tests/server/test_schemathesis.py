"""Schemathesis against the served OpenAPI spec: generated requests, no 5xx, responses as
documented (status codes, content types, bodies matching their schemas)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from heard.server.app import ServerSettings, create_app
from heard.store.database import Database
from heard.store.users import add_user

# Schemathesis reads the spec when the module is collected, so the app is built here.
FOLDER = Path(tempfile.mkdtemp(prefix="heard-schemathesis-"))
DB = Database(f"sqlite:///{FOLDER / 'heard.db'}")
APP = create_app(ServerSettings(DB, FOLDER / "uploads"))
_, TOKEN = add_user(DB, "fuzz")
schema = schemathesis.openapi.from_asgi("/openapi.json", APP)


@pytest.fixture(scope="module", autouse=True)
def _cleanup() -> Iterator[None]:
    yield
    DB.dispose()
    shutil.rmtree(FOLDER, ignore_errors=True)


@schema.parametrize()
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
def test_api_conforms_to_its_spec(case: schemathesis.Case) -> None:
    # Rules a schema cannot state are left out of the "valid request accepted" check:
    # participant names unique regardless of case, and ids taken by earlier examples (409).
    case.call_and_validate(
        headers={"Authorization": f"Bearer {TOKEN}"},
        excluded_checks=[schemathesis.checks.positive_data_acceptance],
    )
