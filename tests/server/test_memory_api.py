"""The memory routes: evidence, recall and pages, per user, on SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from heard.server.app import ServerSettings, create_app
from heard.store.database import Database
from heard.store.users import add_user, authenticate


def test_evidence_and_recall_are_per_user(server) -> None:  # type: ignore[no-untyped-def]
    client, alice, bob = server
    lines = [
        {"id": "d1", "speaker": "Maya", "text": "The Lisbon office opens in April."},
        {"id": "d2", "speaker": "Tom", "text": "Budget approvals go through Priya."},
    ]
    assert client.post("/v1/memory/evidence", json={"utterances": lines}, headers=alice).json() == {
        "stored": 2
    }
    again = client.post("/v1/memory/evidence", json={"utterances": lines[:1]}, headers=alice)
    assert again.status_code == 409  # the id is taken; nothing stored
    # bob may use the same ids: memory is per user
    assert (
        client.post("/v1/memory/evidence", json={"utterances": lines[1:]}, headers=bob).status_code
        == 201
    )
    hits = client.post(
        "/v1/memory/recall", json={"query": "when does Lisbon open"}, headers=alice
    ).json()
    assert hits[0]["id"] == "d1"
    assert (
        client.post(
            "/v1/memory/recall", json={"query": "when does Lisbon open"}, headers=bob
        ).json()
        == []
    )
    partial = client.post(
        "/v1/memory/evidence", json={"utterances": [{**lines[0], "type": "partial"}]}, headers=alice
    )
    assert partial.status_code == 422
    assert client.post("/v1/memory/recall", json={"query": ""}, headers=alice).status_code == 422
    assert (
        client.post("/v1/memory/recall", json={"query": "x" * 3000}, headers=alice).status_code
        == 422
    )


def test_pages_crud_recall_and_isolation(server) -> None:  # type: ignore[no-untyped-def]
    client, alice, bob = server
    page = {"summary": "Rhea Sharma, product lead; vegetarian", "aliases": ["Rhea Sharma"],
            "edges": ["tokyo-office"], "body": "Allergic to peanuts."}  # fmt: skip
    put = client.put("/v1/memory/pages/rhea", json=page, headers=alice)
    assert put.status_code == 200, put.text
    assert put.json() == {"slug": "rhea", **page}
    assert [p["slug"] for p in client.get("/v1/memory/pages", headers=alice).json()] == ["rhea"]
    hits = client.post(
        "/v1/memory/recall", json={"query": "what does Rhea eat"}, headers=alice
    ).json()
    assert (hits[0]["id"], hits[0]["kind"]) == ("rhea", "page")
    # bob: not listed, not readable, not deletable, not recalled - the same 404 as nothing
    assert client.get("/v1/memory/pages", headers=bob).json() == []
    assert client.get("/v1/memory/pages/rhea", headers=bob).status_code == 404
    assert client.get("/v1/memory/pages/nobody", headers=bob).status_code == 404
    assert client.delete("/v1/memory/pages/rhea", headers=bob).status_code == 404
    assert (
        client.post("/v1/memory/recall", json={"query": "what does Rhea eat"}, headers=bob).json()
        == []
    )
    # bad input
    assert client.put("/v1/memory/pages/Bad Slug", json=page, headers=alice).status_code == 422
    assert (
        client.put(
            "/v1/memory/pages/ok", json={**page, "edges": ["../etc"]}, headers=alice
        ).status_code
        == 422
    )
    assert client.put("/v1/memory/pages/ok", json={"summary": 5}, headers=alice).status_code == 422
    # replace, then delete
    client.put("/v1/memory/pages/rhea", json={**page, "body": "Loves ramen."}, headers=alice)
    assert client.get("/v1/memory/pages/rhea", headers=alice).json()["body"] == "Loves ramen."
    assert client.delete("/v1/memory/pages/rhea", headers=alice).status_code == 204
    assert client.get("/v1/memory/pages/rhea", headers=alice).status_code == 404


def test_a_page_that_cannot_be_read_does_not_take_the_users_memory_down(
    db: Database, tmp_path: Path
) -> None:
    app = create_app(ServerSettings(db, tmp_path / "uploads"))
    _, token = add_user(db, "dana")
    alice = {"Authorization": f"Bearer {token}"}
    with TestClient(app) as client:
        good = {"summary": "Rhea Sharma, product lead", "aliases": [], "edges": [], "body": "x"}
        assert client.put("/v1/memory/pages/rhea", json=good, headers=alice).status_code == 200
        # a summary YAML would read back otherwise is written so that it reads back
        odd = {**good, "summary": "line\u2028---\u2029mid\u0085end"}
        put = client.put("/v1/memory/pages/odd", json=odd, headers=alice)
        assert put.status_code == 200, put.text
        assert put.json()["summary"] == odd["summary"]
    # a file that is not UTF-8 lands in the folder (a disk, an editor); the server restarts
    user = authenticate(db, token)
    assert user is not None
    folder = tmp_path / "workspaces" / user.owner / "pages"
    (folder / "broken.md").write_bytes("---\nsummary: caf\xe9\n---\n".encode("latin-1"))
    with TestClient(create_app(ServerSettings(db, tmp_path / "uploads"))) as client:
        hits = client.post("/v1/memory/recall", json={"query": "Rhea product lead"}, headers=alice)
        assert hits.status_code == 200, hits.text
        assert hits.json()[0]["id"] == "rhea"
        slugs = [p["slug"] for p in client.get("/v1/memory/pages", headers=alice).json()]
        assert sorted(slugs) == ["odd", "rhea"]
