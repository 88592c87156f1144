from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from heard.errors import ConflictError, InputError
from heard.memory.utterances import ingest_file, load_index
from heard.store.database import Database
from heard.store.evidence import load_utterances, store_utterances
from heard.utterance import Evidence
from tests.cli.run import Ran
from tests.cli.run import heard as run_heard

UTTERANCES: list[dict[str, object]] = [
    {
        "id": "D1:1",
        "speaker": "Caroline",
        "text": "I went to a support group yesterday.",
        "session": "s1",
        "t": "2023-05-08T13:56:00Z",
    },
    {"id": "D1:2", "speaker": "Melanie", "text": "That sounds powerful!", "session": "s1"},
    {
        "id": "D1:3",
        "speaker": "Caroline",
        "text": "Great. I am thinking about counseling as a career.",
        "session": "s1",
    },
]


def write(tmp_path: Path, rows: list[dict[str, object]] | str, name: str = "u.jsonl") -> Path:
    path = tmp_path / name
    path.write_text(rows if isinstance(rows, str) else "".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_ingest_then_recall(db: Database, tmp_path: Path) -> None:
    assert ingest_file(db, write(tmp_path, UTTERANCES)) == 3
    index = load_index(db)
    hits = index.recall("What career is Caroline thinking about?", k=2)
    assert hits[0].id == "D1:3"
    assert hits[0].speaker == "Caroline"


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (
            [{"id": "x", "speaker": "a", "text": "hi", "type": "partial"}],
            "only finals are admissible",
        ),
        ([{"id": "x", "speaker": "a"}], "text"),
        (
            [{"id": "x", "speaker": "a", "text": "hi"}, {"id": "x", "speaker": "b", "text": "yo"}],
            "appears twice",
        ),
        ([{"id": "x", "speaker": "a", "text": "hi", "t": "yesterday"}], "t"),
        ([{"id": "x", "speaker": "a", "text": "hi", "t": "2023-05-08T13:56:00"}], "t"),
        # no UTC date (the store keeps UTC): refused by name, not an OverflowError
        (
            [{"id": "x", "speaker": "a", "text": "hi", "t": "0001-01-01T00:00:00+10:00"}],
            "t.*out of range once in UTC",
        ),
        # a file line is checked as a request's utterance is (heard.utterance.UtteranceIn)
        ([{"id": "x", "speaker": "a", "text": "nul \x00 here"}], "text.*NUL"),
        ([{"id": "x", "speaker": "a", "text": "y" * 20_001}], "text.*at most 20000"),
        ([{"id": "x", "speaker": "a", "text": "hi", "t": 1683554160}], "t.*ISO 8601"),
        ([{"id": "x", "speaker": "a", "text": "hi", "lang": "es"}], "lang.*Extra inputs"),
        ("{broken\n", "malformed JSON"),
        ("", "no utterances"),
    ],
)
def test_bad_files_store_nothing(
    db: Database, tmp_path: Path, content: list[dict[str, object]] | str, problem: str
) -> None:
    good = {"id": "ok", "speaker": "a", "text": "fine"}
    rows: list[dict[str, object]] | str = [good, *content] if isinstance(content, list) else content
    with pytest.raises(InputError, match=problem):
        ingest_file(db, write(tmp_path, rows))
    assert len(load_index(db)) == 0


def test_an_utterance_keeps_its_language_through_the_store(db: Database, tmp_path: Path) -> None:
    said = {"id": "es1", "speaker": "Lucía", "text": "Sí.", "language": "es"}
    ingest_file(db, write(tmp_path, [said, UTTERANCES[0]]))
    assert [u.language for u in load_utterances(db)] == ["es", ""]


def test_evidence_is_built_by_keyword_only() -> None:
    with pytest.raises(TypeError):
        Evidence("id", "ana", "text")  # type: ignore[misc]


def test_ids_already_stored_are_refused_whole(db: Database, tmp_path: Path) -> None:
    ingest_file(db, write(tmp_path, UTTERANCES[:1]))
    with pytest.raises(InputError, match="already in memory: D1:1"):
        ingest_file(db, write(tmp_path, UTTERANCES, "all.jsonl"))
    assert len(load_index(db)) == 1


def heard(*args: str, db_url: str) -> Ran:
    return run_heard(*args, env={"HEARD_DATABASE_URL": db_url})


def test_memory_cli(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'mem.db'}"
    empty = heard("memory", "recall", "anything", db_url=url)
    assert empty.returncode == 2
    assert "memory is empty" in empty.stderr
    stored = heard("memory", "ingest", str(write(tmp_path, UTTERANCES)), db_url=url)
    assert stored.returncode == 0, stored.stderr
    assert "stored 3 utterances" in stored.stdout
    result = heard("memory", "recall", "support group", "-k", "2", "--json", db_url=url)
    items = json.loads(result.stdout)
    assert items[0]["id"] == "D1:1"
    assert {i["kind"] for i in items} == {"evidence"}
    blank = heard("memory", "recall", "  ", db_url=url)
    assert blank.returncode == 2
    assert "query is empty" in blank.stderr
    long = heard("memory", "recall", "support " * 1000, db_url=url)
    assert long.returncode == 0
    assert "query was cut" in long.stderr
    for command in (
        ["memory", "--help"],
        ["memory", "ingest", "--help"],
        ["memory", "recall", "--help"],
    ):
        assert heard(*command, db_url=url).returncode == 0


def test_two_writers_of_one_id_get_one_success_and_one_conflict(db: Database) -> None:
    # as two server processes posting the same id: whoever loses the race gets a conflict
    for round_ in range(8):
        item = Evidence(
            id=f"race-{round_}",
            speaker="ana",
            text="same id, two writers",
            conversation="c",
            session="s",
        )
        barrier = threading.Barrier(2)
        outcomes: list[str] = []

        def write(
            item: Evidence = item,
            barrier: threading.Barrier = barrier,
            outcomes: list[str] = outcomes,
        ) -> None:
            barrier.wait()
            try:
                store_utterances(db, [item])
                outcomes.append("stored")
            except ConflictError:
                outcomes.append("conflict")

        threads = [threading.Thread(target=write) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(outcomes) == ["conflict", "stored"]
