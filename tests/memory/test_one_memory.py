"""One memory, whatever the entry point: the same evidence and pages, stored through REST or
through the CLI, rank the same for the same question."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from heard.memory.factory import MemoryParts
from heard.memory.workspace import load_page
from heard.server.app import ServerSettings, create_app
from heard.settings import settings
from heard.store.database import Database
from heard.store.users import add_user
from tests.cli.run import heard

PAGES = Path(__file__).resolve().parents[1] / "data" / "memory" / "pages"
# times with offsets: the REST server indexes them as posted, the CLI as the database keeps
# them (UTC); d1 is 10 June in Sydney and 9 June in UTC
UTTERANCES = [
    {"id": "d1", "speaker": "Maya", "text": "Rhea moved the launch to Friday.", "session": "s1",
     "t": "2023-06-10T01:00:00+10:00"},
    {"id": "d2", "speaker": "Rhea", "text": "I will be in the Tokyo office next week.",
     "session": "s1", "t": "2023-06-02T09:00:00-07:00"},
    {"id": "d3", "speaker": "Maya", "text": "The budget review is on Monday.", "session": "s2",
     "t": "2023-06-09T12:00:00Z"},
    {"id": "d4", "speaker": "Omar", "text": "Lunch for Rhea: vegetarian, no peanuts.",
     "session": "s2", "t": "2023-05-20T12:00:00Z"},
]  # fmt: skip
QUESTIONS = [
    "What can Rhea eat?",
    "When is the launch?",
    "Who is in Tokyo next week?",
    "What did Maya say of Friday on June 6, 2023?",
]


def rest_ranking(tmp_path: Path, question: str) -> list[str]:
    db = Database(f"sqlite:///{tmp_path / 'rest.db'}")
    # as `heard serve` builds it: the memory's parts from the environment (HEARD_DENSE)
    parts = MemoryParts.from_settings(settings())
    app = create_app(ServerSettings(db, tmp_path / "uploads", memory=parts))
    _, token = add_user(db, "ana")
    headers = {"Authorization": f"Bearer {token}"}
    with TestClient(app) as client:
        stored = client.post("/v1/memory/evidence", json={"utterances": UTTERANCES},
                             headers=headers)  # fmt: skip
        assert stored.status_code == 201, stored.text
        for path in sorted(PAGES.glob("*.md")):
            page = load_page(path)
            body = {"summary": page.summary, "aliases": list(page.aliases),
                    "edges": list(page.edges), "body": page.body}  # fmt: skip
            assert client.put(f"/v1/memory/pages/{page.slug}", json=body,
                              headers=headers).status_code == 200  # fmt: skip
        hits = client.post("/v1/memory/recall", json={"query": question}, headers=headers)
        assert hits.status_code == 200, hits.text
        return [h["id"] for h in hits.json()]


def cli_ranking(tmp_path: Path, question: str) -> list[str]:
    utterances = tmp_path / "u.jsonl"
    utterances.write_text("".join(json.dumps(u) + "\n" for u in UTTERANCES))
    shutil.copytree(PAGES, tmp_path / "memory" / "pages")
    assert heard("memory", "ingest", str(utterances), cwd=tmp_path).returncode == 0
    result = heard("memory", "recall", question, "--json", cwd=tmp_path,
                   env={"HEARD_DENSE": os.environ["HEARD_DENSE"]})  # fmt: skip
    assert result.returncode == 0, result.stderr
    return [h["id"] for h in json.loads(result.stdout)]


@pytest.mark.parametrize("dense", ["0", "1"], ids=["lexical", "dense"])
@pytest.mark.parametrize("question", QUESTIONS)
def test_rest_and_the_cli_rank_the_same(
    tmp_path: Path, question: str, dense: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HEARD_DENSE", dense)  # the same settings for both, as in one deployment
    (tmp_path / "rest").mkdir()
    (tmp_path / "cli").mkdir()
    rest = rest_ranking(tmp_path / "rest", question)
    cli = cli_ranking(tmp_path / "cli", question)
    assert rest == cli
    assert len(rest) >= 3
