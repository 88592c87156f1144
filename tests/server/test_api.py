"""heard serve's REST API and /v1/live WebSocket, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from heard.pipeline.run import run_pipeline
from heard.server.app import ServerSettings, create_app
from heard.speech import Segment, Transcription
from heard.store.database import Database
from heard.store.meetings import track_states
from heard.store.models import ApiToken
from heard.store.users import add_user, authenticate, digest
from heard.testing import FakeTranscriber
from tests.conftest import AUDIO


@pytest.fixture
def server(
    db: Database, tmp_path: Path
) -> Iterator[tuple[TestClient, dict[str, str], dict[str, str]]]:
    app = create_app(ServerSettings(db, tmp_path / "uploads"))
    _, alice = add_user(db, "alice")
    _, bob = add_user(db, "bob")
    with TestClient(app) as client:
        yield client, {"Authorization": f"Bearer {alice}"}, {"Authorization": f"Bearer {bob}"}


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


def test_meeting_lifecycle_and_isolation(server, db: Database) -> None:  # type: ignore[no-untyped-def]
    client, alice, bob = server
    created = client.post(
        "/v1/meetings",
        json={
            "title": "stand-up",
            "participants": [{"name": "left"}, {"name": "right", "offset_s": 0}],
        },
        headers=alice,
    )
    assert created.status_code == 201, created.text
    meeting = created.json()
    mid = meeting["id"]
    assert [t["status"] for t in meeting["tracks"]] == ["recording", "recording"]
    wav = (AUDIO / "stereo_diarization.wav").read_bytes()
    for name in ("left", "right"):
        up = client.put(f"/v1/meetings/{mid}/tracks/{name}", content=wav, headers=alice)
        assert up.status_code == 200, up.text
    assert {
        t["status"] for t in client.get(f"/v1/meetings/{mid}", headers=alice).json()["tracks"]
    } == {"pending"}
    assert client.post(f"/v1/meetings/{mid}/run", headers=alice).status_code == 202
    # transcription is off in this app: run the pipeline with canned segments per upload
    canned = {
        t.location: [Segment(0.0, 1.5, f"hello from {t.participant}")]
        for t in track_states(db, mid)
    }
    run_pipeline(mid, db=db, transcriber=FakeTranscriber(canned))
    phrases = client.get(f"/v1/meetings/{mid}/phrases", headers=alice).json()
    assert phrases
    assert {p["participant"] for p in phrases} <= {"left", "right"}
    for fmt, needle in [
        ("srt", " --> "),
        ("vtt", "WEBVTT"),
        ("json", '"participant"'),
        ("md", "stand-up"),
        ("txt", "left"),
    ]:
        export = client.get(f"/v1/meetings/{mid}/export", params={"format": fmt}, headers=alice)
        assert export.status_code == 200
        assert needle in export.text
    assert [m["id"] for m in client.get("/v1/meetings", headers=alice).json()] == [mid]
    # bob sees nothing of it: the same 404 as for a meeting that does not exist
    assert client.get("/v1/meetings", headers=bob).json() == []
    missing = "00000000-0000-0000-0000-000000000000"
    for path in ["", "/phrases", "/export"]:
        theirs = client.get(f"/v1/meetings/{mid}{path}", headers=bob)
        nobodys = client.get(f"/v1/meetings/{missing}{path}", headers=bob)
        assert theirs.status_code == nobodys.status_code == 404
    assert (
        client.put(f"/v1/meetings/{mid}/tracks/left", content=wav, headers=bob).status_code == 404
    )
    assert client.post(f"/v1/meetings/{mid}/run", headers=bob).status_code == 404


def test_bad_input_gets_4xx_and_nothing_half_written(server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    client, alice, _ = server
    assert (
        client.post(
            "/v1/meetings", json={"title": "", "participants": []}, headers=alice
        ).status_code
        == 422
    )
    dup = client.post(
        "/v1/meetings",
        json={"title": "x", "participants": [{"name": "a"}, {"name": "A"}]},
        headers=alice,
    )
    assert dup.status_code == 422
    assert "named twice" in dup.json()["detail"]
    mid = client.post(
        "/v1/meetings", json={"title": "x", "participants": [{"name": "a"}]}, headers=alice
    ).json()["id"]
    corrupt = client.put(
        f"/v1/meetings/{mid}/tracks/a", content=b"RIFF not audio at all", headers=alice
    )
    assert corrupt.status_code == 422
    assert "not decodable audio" in corrupt.json()["detail"]
    assert str(tmp_path) not in corrupt.json()["detail"]  # the server's folders stay its own
    empty = client.put(f"/v1/meetings/{mid}/tracks/a", content=b"", headers=alice)
    assert empty.status_code == 422
    unknown = client.put(f"/v1/meetings/{mid}/tracks/zed", content=b"x", headers=alice)
    assert unknown.status_code == 404
    assert not list((tmp_path / "uploads").rglob("*.audio"))
    assert (
        client.get(f"/v1/meetings/{mid}", headers=alice).json()["tracks"][0]["status"]
        == "recording"
    )
    assert client.get("/v1/meetings/not-a-uuid", headers=alice).status_code == 422


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


def events(*items: tuple[int, str, str]) -> list[str]:
    return [
        json.dumps({"t_ms": t, "type": kind, "text": text, "speaker": "ana"})
        for t, kind, text in items
    ]


def test_live_websocket_streams_hypotheses_captions_context_and_finals(server) -> None:  # type: ignore[no-untyped-def]
    client, alice, _ = server
    client.post(
        "/v1/memory/evidence",
        json={
            "utterances": [
                {"id": "d1", "speaker": "Maya", "text": "The Lisbon office opens in April."}
            ]
        },
        headers=alice,
    )
    token = alice["Authorization"].split()[1]
    with client.websocket_connect(f"/v1/live?token={token}&mode=relaxed") as ws:
        for frame in events(
            (0, "partial", "when does the"),
            (400, "partial", "when does the Lisbon office"),
            (800, "partial", "when does the Lisbon office open"),
            (1200, "final", "When does the Lisbon office open?"),
        ):
            ws.send_text(frame)
        received = []
        while not {"context", "final"} <= {m["type"] for m in received}:
            received.append(ws.receive_json())
        # the final is acknowledged once stored: a recall right after it finds it
        hits = client.post(
            "/v1/memory/recall", json={"query": "Lisbon office open"}, headers=alice
        ).json()
        assert any(h["text"] == "When does the Lisbon office open?" for h in hits), hits
    kinds = [m["type"] for m in received]
    assert kinds.count("hypothesis") == 4
    assert received[1]["stable"] == "when does the"
    assert {"release", "final", "context"} <= set(kinds)
    assert kinds.index("final") > kinds.index("hypothesis", 3)  # after the final's hypothesis
    final = next(m for m in received if m["type"] == "final")
    assert final == {"type": "final", "speaker": "ana", "turn": final["turn"],
                     "text": "When does the Lisbon office open?"}  # fmt: skip
    release = next(m for m in received if m["type"] == "release")
    assert release["text"] == "When does the Lisbon office open?"
    context = next(m for m in received if m["type"] == "context")
    assert context["evidence"][0]["id"] == "d1"


def test_live_websocket_rejects_bad_frames_without_harming_others(
    server, caplog: pytest.LogCaptureFixture
) -> None:  # type: ignore[no-untyped-def]
    client, alice, _ = server
    token = alice["Authorization"].split()[1]
    with pytest.raises(WebSocketDisconnect) as refused, client.websocket_connect("/v1/live") as ws:
        ws.receive_json()
    assert refused.value.code == 1008
    caplog.set_level(logging.WARNING, "heard.server.live")
    with client.websocket_connect(f"/v1/live?token={token}") as healthy:
        for bad, code in [
            ("{oops", 1007),
            ('{"t_ms": -1, "type": "final", "text": "x"}', 1007),
            ("x" * 70_000, 1009),
            (b"\x00\x01\x02", 1007),
        ]:
            with client.websocket_connect(f"/v1/live?token={token}") as ws:
                ws.send_bytes(bad) if isinstance(bad, bytes) else ws.send_text(bad)
                with pytest.raises(WebSocketDisconnect) as closed:
                    ws.receive_json()
                assert closed.value.code == code
        healthy.send_text(events((0, "final", "still here"))[0])
        assert healthy.receive_json()["type"] == "hypothesis"
    assert "frame 1" in caplog.text


SECRET = "zebra-7731"


@pytest.mark.parametrize(
    ("frame", "field"),
    [
        (f'{{"t_ms": 0, "type": "final", "text": "{SECRET}\\ud800"}}', "text"),
        (f'{{"t_ms": 0, "type": "final", "text": "{SECRET}\\u0000"}}', "text"),
        (f'{{"t_ms": 0, "type": "partial", "text": "ok", "speaker": "{SECRET}\\udfff"}}',
         "speaker"),
        (f'{{"t_ms": 0, "type": "final", "text": "ok", "speaker": "{SECRET * 500}"}}', "speaker"),
    ],
    ids=["lone surrogate", "NUL", "surrogate speaker", "5,000-character speaker"],
)  # fmt: skip
def test_live_text_no_store_can_keep_is_refused_and_logged_without_it(
    server, caplog: pytest.LogCaptureFixture, frame: str, field: str
) -> None:  # type: ignore[no-untyped-def]
    client, alice, _ = server
    token = alice["Authorization"].split()[1]
    caplog.set_level(logging.DEBUG)
    with client.websocket_connect(f"/v1/live?token={token}") as ws:
        ws.send_text(frame)
        with pytest.raises(WebSocketDisconnect) as closed:
            ws.receive_json()
    assert closed.value.code == 1007
    assert f"field '{field}'" in closed.value.reason
    assert f"field '{field}'" in caplog.text
    assert SECRET not in caplog.text
    assert SECRET not in closed.value.reason
    # and the connection after it works as ever
    with client.websocket_connect(f"/v1/live?token={token}") as ws:
        ws.send_text(events((0, "final", "still here"))[0])
        assert ws.receive_json()["type"] == "hypothesis"


def test_a_final_that_cannot_be_stored_is_an_error_not_an_ack(
    server, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    from heard.errors import StoreError
    from heard.live.retriever import MemoryRetriever

    def broken(self: MemoryRetriever, evidence: object) -> None:
        raise StoreError("the database went away")

    monkeypatch.setattr(MemoryRetriever, "_remember", broken)
    client, alice, _ = server
    token = alice["Authorization"].split()[1]
    with client.websocket_connect(f"/v1/live?token={token}") as ws:
        ws.send_text(events((0, "final", "remember this"))[0])
        ws.send_text('{"type": "end"}')
        received: list[dict[str, Any]] = []
        while not {"error", "end"} <= {m["type"] for m in received} and len(received) < 20:
            received.append(ws.receive_json())
    kinds = [m["type"] for m in received]
    assert "final" not in kinds
    error = next(m for m in received if m["type"] == "error")
    assert error["speaker"] == "ana"
    assert "not stored" in error["detail"]
    assert "end" in kinds  # the end frame is answered too


@pytest.mark.asr
def test_every_frame_gets_an_answer(server) -> None:  # type: ignore[no-untyped-def]
    client, alice, _ = server
    token = alice["Authorization"].split()[1]
    silence = b"\x00\x00" * 1600  # 100 ms
    with client.websocket_connect(f"/v1/live?token={token}&speaker=ana") as ws:
        answers = []
        for _ in range(3):
            ws.send_bytes(silence)
            answers.append(ws.receive_json())
        ws.send_text('{"type": "end"}')
        answers.append(ws.receive_json())
        ws.send_text(events((0, "partial", "hello there"))[0])
        answers.append(ws.receive_json())
    assert answers == [
        {"type": "audio", "received_ms": 100},
        {"type": "audio", "received_ms": 200},
        {"type": "audio", "received_ms": 300},
        {"type": "end"},
        {**answers[4], "type": "hypothesis"},
    ]


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
        "/v1/memory/evidence",
        "/v1/memory/recall",
        "/v1/memory/pages",
        "/v1/memory/pages/{slug}",
    }
    upload = spec["paths"]["/v1/meetings/{meeting_id}/tracks/{participant}"]["put"]
    assert "application/octet-stream" in upload["requestBody"]["content"]


@pytest.mark.asr
def test_live_websocket_transcribes_pcm_audio(server) -> None:  # type: ignore[no-untyped-def]
    """Real speech as the microphone: JFK in 100 ms PCM16 frames through the real recognizer."""
    from heard.asr.audio import load_audio

    client, alice, _ = server
    token = alice["Authorization"].split()[1]
    samples = load_audio(AUDIO / "jfk.flac")
    pcm = (samples * 32767).astype("<i2").tobytes()
    with client.websocket_connect(f"/v1/live?token={token}&speaker=jfk&mode=balanced") as ws:
        for i in range(0, len(pcm), 3200):
            ws.send_bytes(pcm[i : i + 3200])
        ws.send_text('{"type": "end"}')
        finals: list[str] = []
        caption: list[str] = []  # the released caption, units applied as the page applies them
        hypotheses = 0
        while (
            not finals
            or "country" not in " ".join(finals)
            or len(caption) < len(" ".join(finals).split())
        ):
            message = ws.receive_json()
            hypotheses += message["type"] == "hypothesis"
            if message["type"] == "final":
                assert message["speaker"] == "jfk"
                finals.append(message["text"])
            elif message["type"] == "release":
                at, replaces = message["position"], message["replaces"]
                caption[at : at + replaces] = message["text"].split()
    text = " ".join(finals).lower()
    assert "ask not what your country can do for you" in text
    assert hypotheses >= len(finals)
    assert " ".join(caption) == " ".join(finals)  # every final word released, once


def test_live_is_not_a_caption_mode_users_choose(server) -> None:  # type: ignore[no-untyped-def]
    client, alice, _ = server
    token = alice["Authorization"].split()[1]
    with (
        pytest.raises(WebSocketDisconnect) as refused,
        client.websocket_connect(f"/v1/live?token={token}&mode=live") as ws,
    ):
        ws.receive_json()
    assert refused.value.code == 1008
    assert refused.value.reason == "unknown caption mode 'live': relaxed or balanced"


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


def test_live_context_comes_only_from_the_users_own_memory(server) -> None:  # type: ignore[no-untyped-def]
    client, alice, bob = server
    secret = {"id": "s1", "speaker": "Maya", "text": "The Lisbon office opens in April."}
    client.post("/v1/memory/evidence", json={"utterances": [secret]}, headers=alice)
    contexts = {}
    for name, headers in (("alice", alice), ("bob", bob)):
        token = headers["Authorization"].split()[1]
        with client.websocket_connect(f"/v1/live?token={token}") as ws:
            ws.send_text(events((0, "final", "When does the Lisbon office open?"))[0])
            while (message := ws.receive_json())["type"] != "context":
                pass
            contexts[name] = [e["id"] for e in message["evidence"]]
    assert contexts == {"alice": ["s1"], "bob": []}


def test_the_pacer_widens_steps_only_after_repeated_slow_ones() -> None:
    from heard.live.microphone import Pacer

    pacer = Pacer(chunk_ms=1000, max_ms=4000)
    assert pacer.observe(0.5, 1.0) is None  # keeping up
    assert pacer.observe(1.5, 1.0) is None  # one slow step is noise
    assert pacer.observe(0.9, 1.0) is None  # and the count starts again
    assert pacer.observe(1.2, 1.0) is None
    assert pacer.observe(1.2, 1.0) == 2000  # two in a row: decode half as often
    assert pacer.last_rtf == pytest.approx(1.2)
    assert pacer.observe(3.0, 2.0) is None
    assert pacer.observe(3.0, 2.0) == 4000
    assert pacer.observe(9.0, 4.0) is None
    assert pacer.observe(9.0, 4.0) is None  # never past the maximum
    assert pacer.chunk_ms == 4000


def test_live_context_holds_the_users_pages_and_end_needs_no_exact_spacing(server) -> None:  # type: ignore[no-untyped-def]
    from heard.server.live import _is_end

    client, alice, _ = server
    page = {"summary": "Rhea Sharma, product lead; vegetarian", "body": "Allergic to peanuts."}
    client.put("/v1/memory/pages/rhea", json=page, headers=alice)
    token = alice["Authorization"].split()[1]
    with client.websocket_connect(f"/v1/live?token={token}") as ws:
        ws.send_text(events((0, "final", "What does Rhea eat?"))[0])
        while (message := ws.receive_json())["type"] != "context":
            pass
    assert message["pages"][0] == "rhea"
    assert all(_is_end(m) for m in ['{"type":"end"}', '{ "type" : "end" }', '{"type": "end"}'])
    assert not any(_is_end(m) for m in ['{"type": "final", "text": "end"}', '"end"', "{end"])


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


def test_a_participants_language_goes_in_and_comes_out_with_how_it_was_found(  # type: ignore[no-untyped-def]
    server, db: Database
) -> None:
    client, alice, _ = server
    created = client.post(
        "/v1/meetings",
        json={"title": "bilingual", "participants": [{"name": "ana", "language": "es"},
                                                      {"name": "bob"}]},
        headers=alice,
    )  # fmt: skip
    assert created.status_code == 201, created.text
    mid = created.json()["id"]
    asked = {t["participant"]: t["language_asked"] for t in created.json()["tracks"]}
    assert asked == {"ana": "es", "bob": None}
    wav = (AUDIO / "stereo_diarization.wav").read_bytes()
    for name in ("ana", "bob"):
        assert client.put(
            f"/v1/meetings/{mid}/tracks/{name}", content=wav, headers=alice
        ).is_success
    tracks = {t.participant: t.location for t in track_states(db, mid)}
    fake = FakeTranscriber({
        tracks["ana"]: [Segment(0.0, 1.5, "hola a todos")],
        tracks["bob"]: Transcription((Segment(2.0, 3.0, "hello"),), "en", 0.93),
    })  # fmt: skip
    run_pipeline(mid, db=db, transcriber=fake)
    assert fake.languages == [None, "es"] or fake.languages == ["es", None]  # ana's was passed
    out = {
        t["participant"]: t
        for t in client.get(f"/v1/meetings/{mid}", headers=alice).json()["tracks"]
    }
    assert (out["ana"]["language"], out["ana"]["language_probability"]) == ("es", None)
    assert (out["bob"]["language"], out["bob"]["language_probability"]) == ("en", 0.93)
    phrases = client.get(f"/v1/meetings/{mid}/phrases", headers=alice).json()
    assert {(p["participant"], p["language"]) for p in phrases} == {("ana", "es"), ("bob", "en")}
    vtt = client.get(f"/v1/meetings/{mid}/export", params={"format": "vtt"}, headers=alice).text
    assert "NOTE Languages: ana es (given); bob en (detected, 0.93)" in vtt


@pytest.mark.parametrize("language", ["xx", "english", 7, "e\u0000s"])
def test_a_language_whisper_does_not_know_is_a_422_naming_the_field(  # type: ignore[no-untyped-def]
    server, language: object
) -> None:
    client, alice, _ = server
    bad = client.post(
        "/v1/meetings",
        json={"title": "x", "participants": [{"name": "ana", "language": language}]},
        headers=alice,
    )
    assert bad.status_code == 422
    assert "language" in bad.text
    assert client.get("/v1/meetings", headers=alice).json() == []


def test_a_meeting_whose_process_died_reads_interrupted(db: Database, tmp_path: Path) -> None:
    """Issue 27: REST says what `heard status` says of a track left `transcribing` by a process
    that is gone (killed, crashed, the server restarted), and so of its meeting."""
    import subprocess
    import sys
    from datetime import UTC, datetime

    from heard.store.holder import this_holder
    from heard.store.meetings import TrackSpec, create_meeting, track_states
    from heard.store.tracks import claim_track

    user, token = add_user(db, "dora")
    headers = {"Authorization": f"Bearer {token}"}
    tracks = [TrackSpec("a", str(AUDIO / "jfk.flac")), TrackSpec("b", str(AUDIO / "jfk.flac"))]
    meeting_id = create_meeting(db, title="cut short", tracks=tracks, owner=user.owner)
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    dead = f"{this_holder().split(':')[0]}:{child.pid}:-"
    first, second = track_states(db, meeting_id, user.owner)
    assert claim_track(db, first.id, datetime.now(UTC), holder=dead) is not None
    assert claim_track(db, second.id, datetime.now(UTC)) is not None  # this process: alive
    with TestClient(create_app(ServerSettings(db, tmp_path / "uploads"))) as client:
        shown = client.get(f"/v1/meetings/{meeting_id}", headers=headers).json()
        listed = client.get("/v1/meetings", headers=headers).json()
    assert shown["status"] == "interrupted"
    assert {t["participant"]: t["status"] for t in shown["tracks"]} == {
        "a": "interrupted",
        "b": "transcribing",
    }
    assert [m["status"] for m in listed] == ["interrupted"]
