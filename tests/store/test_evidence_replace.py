"""Replacing a conversation's evidence (a meeting's phrases, on every build) while another
writer replaces it too, on PostgreSQL, where racing builds of one meeting really interleave."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from tests.conftest import postgres_database

from heard.store.database import Database
from heard.store.evidence import load_utterances, replace_conversation
from heard.store.models import EvidenceRow, MemoryVersion
from heard.utterance import Evidence


@pytest.fixture
def pg(postgres_url: str) -> Iterator[Database]:
    for database in postgres_database(postgres_url):
        database.migrate()
        yield database


def said(text: str) -> list[Evidence]:
    return [Evidence(id="m:0:x", speaker="ana", text=text, conversation="meeting:m")]


def test_a_replacement_waits_for_one_in_flight_and_then_replaces_it(pg: Database) -> None:
    replace_conversation(pg, said("first"), conversation="meeting:m")
    outcome: list[BaseException | int] = []
    with pg.session() as s:  # another build, in the middle of its replacement
        s.get_one(MemoryVersion, "", with_for_update=True)
        s.query(EvidenceRow).delete()
        s.add(EvidenceRow(owner="", ext_id="m:0:x", speaker="ana", text="second",
                          conversation="meeting:m"))  # fmt: skip
        s.flush()
        racing = threading.Thread(target=lambda: _replace(pg, outcome))
        racing.start()
        racing.join(1.0)
        assert racing.is_alive()  # it waits for this one instead of racing it
    racing.join(30)
    assert outcome == [1]
    assert [e.text for e in load_utterances(pg)] == ["third"]


def _replace(db: Database, outcome: list[BaseException | int]) -> None:
    try:
        outcome.append(replace_conversation(db, said("third"), conversation="meeting:m"))
    except BaseException as e:  # noqa: BLE001 - the test reads it
        outcome.append(e)
