"""Each row of the server's error table, through a real request: status and body."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from heard.errors import (
    AudioError,
    BrokerError,
    BusyError,
    ConflictError,
    EventLogError,
    HeardError,
    InputError,
    MissingDependencyError,
    NoRoomError,
    NotFoundError,
    ProviderError,
    SlowBodyError,
    StoreError,
    TooLargeError,
    TurnStateError,
    UnknownNameError,
)
from heard.server.app import ServerSettings, create_app
from heard.server.errors import STATUS_OF, STORE_TROUBLE, status_of
from heard.store.database import Database

CASES: list[tuple[HeardError, int]] = [
    (NotFoundError("no meeting 'x'"), 404),
    (ConflictError("evidence id 'a' is taken"), 409),
    (BusyError("this user is storing evidence already"), 429),
    (TooLargeError("audio larger than 536870912 bytes"), 413),
    (SlowBodyError("the body stopped arriving (nothing for 30 s); nothing was kept"), 408),
    (InputError("bad title"), 422),
    (AudioError("x.wav: not audio"), 422),
    (EventLogError("e.jsonl", 2, "malformed JSON"), 422),
    (UnknownNameError("mode", "fast", ["relaxed", "balanced"]), 422),
    (StoreError("cannot reach the database"), 503),
    (BrokerError("cannot reach the broker"), 503),
    (ProviderError("timed out"), 503),
    (NoRoomError("the server has no room for this upload now; nothing was kept"), 507),
    (MissingDependencyError("reinstall heard"), 503),
    (TurnStateError("turn 1 is already final"), 500),
]


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    db = Database(f"sqlite:///{tmp_path / 'h.db'}")
    app = create_app(ServerSettings(db, tmp_path / "uploads"))
    raised = {str(i): error for i, (error, _) in enumerate(CASES)}

    def fail(case: str) -> None:
        raise raised[case]

    app.add_api_route("/test/fail/{case}", fail)
    with TestClient(app, raise_server_exceptions=False) as test_client:
        yield test_client
    db.dispose()


def test_every_row_of_the_table_is_covered() -> None:
    for cls in STATUS_OF:
        assert any(isinstance(error, cls) for error, _ in CASES), cls
    for error, status in CASES:
        assert status_of(error) == status


@pytest.mark.parametrize(("case", "status"), [(str(i), s) for i, (_, s) in enumerate(CASES)])
def test_an_error_gets_its_status_and_a_one_line_body(
    client: TestClient, case: str, status: int
) -> None:
    response = client.get(f"/test/fail/{case}")
    assert response.status_code == status
    error = CASES[int(case)][0]
    expected = "internal error" if status == 500 else str(error)
    if isinstance(error, StoreError):  # which database, and what it said, is the operator's
        expected = STORE_TROUBLE
    assert response.json() == {"detail": expected}
