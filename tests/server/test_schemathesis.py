"""Schemathesis against the served OpenAPI spec: generated requests, no 5xx, responses as
documented (status codes, content types, bodies matching their schemas).

Besides what the schema allows, the bodies carry text no store keeps: a hook puts NUL
characters and lone surrogates into generated strings (NaN and infinities cannot go through
the test client's JSON encoder; tests/server/test_hostile_input.py sends those raw). The
app runs on the test PostgreSQL when one answers (it refuses NUL itself, so a field that
lets one through is a 500), else on SQLite; under CI, PostgreSQL must answer."""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from sqlalchemy import create_engine, text
from sqlalchemy.exc import OperationalError

from heard.asr.whisper import FasterWhisperTranscriber
from heard.server.app import ServerSettings, create_app
from heard.store.database import Database
from heard.store.users import add_user

# Schemathesis reads the spec when the module is collected, so the app is built here.
FOLDER = Path(tempfile.mkdtemp(prefix="heard-schemathesis-"))
POSTGRES = os.environ.get("HEARD_TEST_DATABASE_URL", "")
SCHEMA = f"heard_test_{uuid.uuid4().hex[:12]}"


def _database() -> Database:
    if POSTGRES:
        try:
            admin = create_engine(POSTGRES, isolation_level="AUTOCOMMIT")
            with admin.connect() as conn:
                conn.execute(text(f'CREATE SCHEMA "{SCHEMA}"'))
            admin.dispose()
            options = {"connect_args": {"options": f"-csearch_path={SCHEMA}"}}
            return Database(POSTGRES, engine_options=options)
        except OperationalError:
            if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
                raise
    return Database(f"sqlite:///{FOLDER / 'heard.db'}")


DB = _database()
# a recognizer for /v1/audio/transcriptions (loaded only if a generated file decodes)
APP = create_app(ServerSettings(DB, FOLDER / "uploads", workspaces=FOLDER / "memory",
                                transcriber=FasterWhisperTranscriber()))  # fmt: skip
_, TOKEN = add_user(DB, "fuzz")
# Every case comes from one client address, and each checks that a bad token is a 401: past
# 20 of them the address would get 429s instead (tests/server/test_abuse.py tests that limit).
APP.state.heard.failures.failed = lambda address: None  # type: ignore[method-assign]
# A request body over 1 MiB is refused with 413 before it is read (each route documents it),
# so 413 is a rejection too, beside schemathesis' usual list.
REJECTED = ["400", "401", "403", "404", "405", "406", "409", "413", "415", "422", "428", "429",
            "5xx"]  # fmt: skip
CONFIG = schemathesis.config.SchemathesisConfig.from_dict(
    {"checks": {"negative_data_rejection": {"expected-statuses": REJECTED}}}
)
schema = schemathesis.openapi.from_asgi("/openapi.json", APP, config=CONFIG)


@pytest.fixture(scope="module", autouse=True)
def _cleanup() -> Iterator[None]:
    yield
    DB.dispose()
    if DB.engine.dialect.name == "postgresql":
        admin = create_engine(POSTGRES, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text(f'DROP SCHEMA "{SCHEMA}" CASCADE'))
        admin.dispose()
    shutil.rmtree(FOLDER, ignore_errors=True)


UNSTORABLE_TEXT = ("\x00", "\ud800", "a\x00b", "\udfff z")


def _spoil(value: Any, choice: int) -> Any:
    """``value`` with its ``choice``-th string made unstorable (by count, in order)."""
    leaves: list[int] = [0]

    def walk(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items()}
        if isinstance(v, list):
            return [walk(x) for x in v]
        if isinstance(v, str):
            leaves[0] += 1
            if leaves[0] - 1 == choice:
                return v + UNSTORABLE_TEXT[choice % len(UNSTORABLE_TEXT)]
        return v

    return walk(value)


@schemathesis.hook
def flatmap_body(context: schemathesis.HookContext, body: Any) -> Any:
    """Half the JSON bodies keep what was generated; the others get one unstorable string.
    (A form cannot carry a lone surrogate: the client cannot encode it; the form's rows in
    tests/server/test_openai_api.py send NUL and junk.)"""
    if not isinstance(body, dict | list) or context.operation.path.startswith("/v1/audio/"):
        return st.just(body)
    return st.one_of(st.just(body), st.integers(0, 8).map(lambda i: _spoil(body, i)))


@schema.parametrize()
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
def test_api_conforms_to_its_spec(case: schemathesis.Case) -> None:
    # Rules a schema cannot state are left out of the "valid request accepted" check:
    # participant names unique regardless of case, and ids taken by earlier examples (409).
    case.call_and_validate(
        headers={"Authorization": f"Bearer {TOKEN}"},
        excluded_checks=[schemathesis.checks.positive_data_acceptance],
    )
