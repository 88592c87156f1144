"""heard serve's tokens, its pages and its OpenAPI spec, on SQLite and PostgreSQL."""

from __future__ import annotations

from heard.store.database import Database
from heard.store.models import ApiToken
from heard.store.users import add_user, authenticate, digest


def test_tokens_are_stored_hashed_and_authenticate(db: Database) -> None:
    user, token = add_user(db, "carol")
    with db.session() as s:
        digests = [t.digest for t in s.query(ApiToken).all()]
    assert token not in digests
    assert digest(token) in digests
    assert authenticate(db, token) == user
    assert authenticate(db, token + "x") is None
    assert authenticate(db, "not-a-token") is None


def test_requests_without_a_valid_token_get_401(server) -> None:  # type: ignore[no-untyped-def]
    client, _, _ = server
    for method, path in [("get", "/v1/me"), ("get", "/v1/meetings"), ("post", "/v1/memory/recall")]:
        assert client.request(method, path).status_code == 401
        bad = client.request(method, path, headers={"Authorization": "Bearer heard_nope"})
        assert bad.status_code == 401
        assert bad.headers["www-authenticate"] == "Bearer"


def test_pages_run_only_heards_scripts_and_refuse_frames(server) -> None:  # type: ignore[no-untyped-def]
    client, _, _ = server
    for page in ["/", "/meetings"]:
        headers = client.get(page).headers
        policy = headers["content-security-policy"]
        assert "frame-ancestors 'none'" in policy
        assert "script-src 'self' blob:;" in policy  # no inline or foreign script
        assert headers["x-frame-options"] == "DENY"


def test_a_422_quotes_a_short_excerpt_of_what_it_refuses(server) -> None:  # type: ignore[no-untyped-def]
    client, alice, _ = server
    huge = "x" * 1_000_000
    body = {"title": huge, "participants": [{"name": "a"}]}
    refused = client.post("/v1/meetings", json=body, headers=alice)
    assert refused.status_code == 422
    assert len(refused.content) < 1000  # not the megabyte back
    (error,) = refused.json()["detail"]
    assert error["loc"] == ["body", "title"]
    assert error["input"].startswith("xxxx")
    assert "1000000 characters" in error["input"]
    # a lone surrogate in the input still gets a 422 that can be encoded
    surrogate = b'{"query": "\\ud800", "k": "many"}'
    odd = client.post(
        "/v1/memory/recall",
        content=surrogate,
        headers={**alice, "Content-Type": "application/json"},
    )
    assert odd.status_code == 422
    assert [e["loc"] for e in odd.json()["detail"]] == [["body", "query"], ["body", "k"]]


def test_openapi_lists_every_route(server) -> None:  # type: ignore[no-untyped-def]
    client, _, _ = server
    spec = client.get("/openapi.json").json()
    assert set(spec["paths"]) == {
        "/v1/me",
        "/v1/meetings",
        "/v1/meetings/{meeting_id}",
        "/v1/meetings/{meeting_id}/tracks/{participant}",
        "/v1/meetings/{meeting_id}/run",
        "/v1/meetings/{meeting_id}/phrases",
        "/v1/meetings/{meeting_id}/export",
        "/v1/meetings/{meeting_id}/events",
        "/v1/meetings/{meeting_id}/playback",
        "/v1/meetings/{meeting_id}/participants/{participant}",
        "/v1/meetings/{meeting_id}/tracks/{participant}/audio",
        "/v1/search",
        "/v1/memory/evidence",
        "/v1/memory/recall",
        "/v1/memory/pages",
        "/v1/memory/pages/{slug}",
        "/v1/audio/transcriptions",
        "/v1/audio/translations",
        "/v1/models",
        "/v1/models/{model_id}",
        "/v1/listen",
    }
    export = spec["paths"]["/v1/meetings/{meeting_id}/export"]["get"]["responses"]["200"]
    assert export["content"]["application/json"]["schema"]["type"] == "array"  # format=json
    upload = spec["paths"]["/v1/meetings/{meeting_id}/tracks/{participant}"]["put"]
    assert "application/octet-stream" in upload["requestBody"]["content"]
