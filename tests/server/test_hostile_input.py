"""Input no store can keep (NUL, lone surrogates, NaN and infinities) gets a 422 naming the
field, on SQLite and on PostgreSQL (which refuses NUL itself): never a 500, nothing stored,
and the refused text never reaches the log."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from heard.server.app import ServerSettings, create_app
from heard.store.database import Database
from heard.store.users import add_user

SECRET = "zebra-7731"
"""Put in every refused value: the log must never show it."""
NUL = f"{SECRET}\\u0000"
SURROGATE = f"{SECRET}\\ud800"
MEETING = '{"title": "%s", "participants": [{"name": "%s", "offset_s": %s}]}'
LANGUAGE = '{"title": "t", "participants": [{"name": "ana", "language": "%s"}]}'
SPEAKERS = '{"title": "t", "participants": [{"name": "call", "speakers": %s, "names": [%s]}]}'
UTTERANCE = '{"utterances": [{"id": "%s", "speaker": "%s", "text": "%s"}]}'

# (name, method, path, raw JSON body, the field the 422 names)
CASES = [
    ("title NUL", "POST", "/v1/meetings", MEETING % (NUL, "ana", "0"), ["body", "title"]),
    ("title surrogate", "POST", "/v1/meetings", MEETING % (SURROGATE, "ana", "0"),
     ["body", "title"]),
    ("participant NUL", "POST", "/v1/meetings", MEETING % ("t", NUL, "0"),
     ["body", "participants", 0, "name"]),
    ("speakers NUL", "POST", "/v1/meetings", SPEAKERS % (f'"{NUL}"', '"ana"'),
     ["body", "participants", 0, "speakers"]),
    ("speaker name NUL", "POST", "/v1/meetings", SPEAKERS % ('"auto"', f'"a{NUL}"'),
     ["body", "participants", 0, "names", 0]),
    ("speaker name bidi", "POST", "/v1/meetings", SPEAKERS % ('"2"', f'"{SECRET}\\u202e"'),
     ["body", "participants", 0, "names", 0]),
    ("language NUL", "POST", "/v1/meetings", LANGUAGE % NUL,
     ["body", "participants", 0, "language"]),
    ("language surrogate", "POST", "/v1/meetings", LANGUAGE % SURROGATE,
     ["body", "participants", 0, "language"]),
    ("offset NaN", "POST", "/v1/meetings", MEETING % ("t", "ana", "NaN"),
     ["body", "participants", 0, "offset_s"]),
    ("offset Infinity", "POST", "/v1/meetings", MEETING % ("t", "ana", "-Infinity"),
     ["body", "participants", 0, "offset_s"]),
    ("offset 1e999", "POST", "/v1/meetings", MEETING % ("t", "ana", "1e999"),
     ["body", "participants", 0, "offset_s"]),
    ("evidence id NUL", "POST", "/v1/memory/evidence", UTTERANCE % (NUL, "ana", "hi"),
     ["body", "utterances", 0, "id"]),
    ("evidence speaker surrogate", "POST", "/v1/memory/evidence",
     UTTERANCE % ("d1", SURROGATE, "hi"), ["body", "utterances", 0, "speaker"]),
    ("evidence text NUL", "POST", "/v1/memory/evidence", UTTERANCE % ("d1", "ana", NUL),
     ["body", "utterances", 0, "text"]),
    ("recall query surrogate", "POST", "/v1/memory/recall", f'{{"query": "{SURROGATE}"}}',
     ["body", "query"]),
    ("recall k NaN", "POST", "/v1/memory/recall", '{"query": "q", "k": NaN}', ["body", "k"]),
    ("page summary NUL", "PUT", "/v1/memory/pages/p", f'{{"summary": "{NUL}"}}',
     ["body", "summary"]),
    ("page alias surrogate", "PUT", "/v1/memory/pages/p", f'{{"aliases": ["{SURROGATE}"]}}',
     ["body", "aliases", 0]),
    ("page body NUL", "PUT", "/v1/memory/pages/p", f'{{"body": "{NUL}"}}', ["body", "body"]),
    # a time with no UTC date: the store keeps UTC
    ("evidence t before year 1 in UTC", "POST", "/v1/memory/evidence",
     '{"utterances": [{"id": "d1", "speaker": "ana", "text": "hi", '
     '"t": "0001-01-01T00:00:00+10:00"}]}', ["body", "utterances", 0, "t"]),
    ("meeting started_at after 9999 in UTC", "POST", "/v1/meetings",
     '{"title": "t", "participants": [{"name": "a"}], "started_at": "9999-12-31T23:00:00-02:00"}',
     ["body", "started_at"]),
    # issue 28: names and titles are shown and exported as they read: no control characters
    ("title with a line break and a cue", "POST", "/v1/meetings",
     MEETING % (f"{SECRET}\\n00:00:00.000 --> 10:00:00.000\\nfake", "ana", "0"), ["body", "title"]),
    ("participant ESC", "POST", "/v1/meetings", MEETING % ("t", f"{SECRET}\\u001b[31m", "0"),
     ["body", "participants", 0, "name"]),
    ("participant bidi override", "POST", "/v1/meetings",
     MEETING % ("t", f"{SECRET}\\u202e", "0"), ["body", "participants", 0, "name"]),
    ("participant with a slash", "POST", "/v1/meetings", MEETING % ("t", f"{SECRET}/x", "0"),
     ["body", "participants", 0, "name"]),
    ("evidence speaker line break", "POST", "/v1/memory/evidence",
     UTTERANCE % ("d1", f"{SECRET}\\n", "hi"), ["body", "utterances", 0, "speaker"]),
    # issue 28: a number is a JSON number, not a string of digits
    ("recall k as a string", "POST", "/v1/memory/recall", '{"query": "q", "k": "5"}',
     ["body", "k"]),
    ("offset as a string", "POST", "/v1/meetings", MEETING % ("t", "ana", '"5"'),
     ["body", "participants", 0, "offset_s"]),
    ("participant in the URL NUL", "PUT", f"/v1/meetings/{{meeting}}/tracks/{SECRET}%00",
     None, ["path", "participant"]),
]  # fmt: skip


@pytest.fixture
def api(db: Database, tmp_path: Path) -> Iterator[tuple[TestClient, str]]:
    app = create_app(ServerSettings(db, tmp_path / "uploads", workspaces=tmp_path / "memory"))
    _, token = add_user(db, "ana")
    with TestClient(app, raise_server_exceptions=False) as client:
        client.headers["Authorization"] = f"Bearer {token}"
        made = client.post("/v1/meetings", json={"title": "t", "participants": [{"name": "a"}]})
        assert made.status_code == 201
        yield client, made.json()["id"]


@pytest.mark.parametrize(
    ("method", "path", "body", "loc"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_unstorable_input_is_a_422_naming_the_field(
    api: tuple[TestClient, str],
    caplog: pytest.LogCaptureFixture,
    method: str,
    path: str,
    body: str | None,
    loc: list[str | int],
) -> None:
    client, meeting = api
    before = (client.get("/v1/meetings").json(), client.get("/v1/memory/pages").json())
    caplog.set_level(logging.DEBUG)
    response = client.request(
        method,
        path.format(meeting=meeting),
        content=body.encode() if body is not None else b"RIFF",
        headers={"Content-Type": "application/json" if body is not None else "audio/wav"},
    )
    assert response.status_code == 422, response.text
    assert [e["loc"] for e in response.json()["detail"]] == [loc]
    # nothing stored, the next request on the same client answers, the log never saw it
    assert (client.get("/v1/meetings").json(), client.get("/v1/memory/pages").json()) == before
    recalled = client.post("/v1/memory/recall", json={"query": "hi"})
    assert recalled.status_code == 200
    assert recalled.json() == []
    # (the test client's own log names the URL it asked for: that is not the server's)
    server_side = [r for r in caplog.records if not r.name.startswith(("httpx", "httpcore"))]
    assert all(SECRET not in r.getMessage() for r in server_side)


def test_the_table_covers_every_string_and_number_a_request_takes() -> None:
    from heard.server import schemas

    covered = {tuple(str(p) for p in c[-1] if isinstance(p, str))[-1] for c in CASES}
    for model in (schemas.MeetingIn, schemas.ParticipantIn, schemas.UtteranceIn,
                  schemas.RecallIn, schemas.PageIn):  # fmt: skip
        for name, field in model.model_fields.items():
            if field.annotation in (str, float, int) or "str" in str(field.annotation):
                assert name in covered or name in {"session", "conversation", "edges"}, (
                    f"{model.__name__}.{name}"
                )


@pytest.mark.parametrize(
    ("method", "path", "raw"),
    [
        ("POST", "/v1/memory/recall", '{"query": "a", "k": 1, "k": 100}'),
        ("POST", "/v1/meetings", '{"title": "t", "participants": [{"name": "a", "name": "b"}]}'),
        ("PUT", "/v1/memory/pages/p", '{"summary": "one", "summary": "two"}'),
    ],
    ids=["recall k twice", "participant name twice", "page summary twice"],
)
def test_a_key_named_twice_is_a_422_naming_it_and_nothing_is_done(
    api: tuple[TestClient, str], method: str, path: str, raw: str
) -> None:
    """Issue 28: the last of two equal keys must not win silently."""
    client, _ = api
    reply = client.request(method, path, content=raw, headers={"Content-Type": "application/json"})
    assert reply.status_code == 422
    assert "twice in one object" in reply.json()["detail"]
    assert client.get("/v1/memory/pages").json() == []
    assert len(client.get("/v1/meetings").json()) == 1  # the fixture's own
