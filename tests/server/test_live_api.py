"""The /v1/live WebSocket: events and audio in; hypotheses, captions, context and finals out."""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import pytest
from starlette.websockets import WebSocketDisconnect

from heard.store.database import Database
from heard.store.evidence import load_utterances
from heard.store.users import authenticate, revoke_tokens
from heard.transcript.words import normalized_key
from tests.conftest import AUDIO
from tests.reading import assert_reads

SECRET = "zebra-7731"
"""Text that must never reach a log or a close reason."""


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
            ('{"type": "end", "x": ' + "[" * 60_000, 1007),  # nested too deeply to parse
            ('{"t_ms": 1, "type": "partial", "type": "end", "text": "x"}', 1007),  # a key twice
        ]:
            with client.websocket_connect(f"/v1/live?token={token}") as ws:
                ws.send_bytes(bad) if isinstance(bad, bytes) else ws.send_text(bad)
                with pytest.raises(WebSocketDisconnect) as closed:
                    ws.receive_json()
                assert closed.value.code == code
        healthy.send_text(events((0, "final", "still here"))[0])
        assert healthy.receive_json()["type"] == "hypothesis"
    assert "frame 1" in caplog.text


@pytest.mark.parametrize(
    ("frame", "field"),
    [
        (f'{{"t_ms": 0, "type": "final", "text": "{SECRET}\\ud800"}}', "text"),
        (f'{{"t_ms": 0, "type": "final", "text": "{SECRET}\\u0000"}}', "text"),
        (f'{{"t_ms": 0, "type": "partial", "text": "ok", "speaker": "{SECRET}\\udfff"}}',
         "speaker"),
        (f'{{"t_ms": 0, "type": "final", "text": "ok", "speaker": "{SECRET * 500}"}}', "speaker"),
        (f'{{"t_ms": 0, "type": "final", "text": "ok", "speaker": "{SECRET}\\nNOTE"}}', "speaker"),
    ],
    ids=["lone surrogate", "NUL", "surrogate speaker", "5,000-character speaker",
         "speaker with a line break"],
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


def keys(words: list[str]) -> list[str]:
    return [normalized_key(w) for w in words]


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
            time.sleep(0.01)  # 10x real time: within the token's audio rate (2x, bursts of 10 s)
        ws.send_text('{"type": "end"}')
        finals: list[str] = []
        caption: list[str] = []  # the released caption, units applied as the page applies them
        hypotheses = 0
        # issue 28: the answer to "end" comes after all it flushed: the last final is in
        while (message := ws.receive_json())["type"] != "end":
            hypotheses += message["type"] == "hypothesis"
            if message["type"] == "final":
                assert message["speaker"] == "jfk"
                finals.append(message["text"])
            elif message["type"] == "release":
                at, replaces = message["position"], message["replaces"]
                caption[at : at + replaces] = message["text"].split()

    # at 10x real time a step takes what has arrived, so the buffers (and tiny.en's reading
    # of a word or two: "asked not") differ from run to run
    assert_reads(" ".join(finals))
    assert hypotheses >= len(finals)
    # every final word released, once (a word is the same word however it is punctuated, as
    # the release invariant holds it: tests/release/test_invariant.py)
    assert keys(caption) == keys(" ".join(finals).split())


@pytest.mark.asr
def test_a_stream_that_stops_sending_frees_its_place_on_the_decoder(server) -> None:  # type: ignore[no-untyped-def]
    """Issue 29: streams share one decode service; one that goes away mid-sentence leaves
    nothing queued on it, and the next stream is decoded as if it had been alone."""
    from heard.asr.audio import load_audio
    from heard.asr.service import shared_service
    from heard.asr.whisper import WhisperOptions

    client, alice, bob = server
    token = alice["Authorization"].split()[1]
    pcm = (load_audio(AUDIO / "jfk.flac") * 32767).astype("<i2").tobytes()
    gone = bob["Authorization"].split()[1]  # another user, so the audio rates stay apart
    with client.websocket_connect(f"/v1/live?token={gone}&speaker=gone") as ws:
        for i in range(0, 3 * 32_000, 3200):
            ws.send_bytes(pcm[i : i + 3200])
        assert ws.receive_json()["type"] in ("audio", "hypothesis")
    # it hung up without an "end"; the next one streams all of JFK
    with client.websocket_connect(f"/v1/live?token={token}&speaker=jfk") as ws:
        for i in range(0, len(pcm), 3200):
            ws.send_bytes(pcm[i : i + 3200])
            time.sleep(0.01)
        ws.send_text('{"type": "end"}')
        finals = []
        while (message := ws.receive_json())["type"] != "end":
            if message["type"] == "final":
                finals.append(message["text"])
    assert_reads(" ".join(finals))  # all of JFK, as if the first stream had never been
    service = shared_service(WhisperOptions())
    assert service.decoded > 0, "the server's streams were decoded on the shared service"
    assert service._queue == [], "nothing left waiting"


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
    from heard.asr.microphone import Pacer

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


def test_the_pacer_narrows_again_once_decoding_keeps_up() -> None:
    """Issue 29: one slow early step set the step to 2 s for the rest of a connection."""
    from heard.asr.microphone import Pacer

    pacer = Pacer(chunk_ms=1000, max_ms=4000)
    assert [pacer.observe(1.9, 1.0) for _ in range(2)] == [None, 2000]  # a slow start
    assert [pacer.observe(0.6, 2.0) for _ in range(4)] == [None, None, None, 1000]
    assert pacer.observe(0.3, 1.0) is None
    assert [pacer.observe(0.3, 1.0) for _ in range(8)] == [None] * 8  # never below the first
    # a step that only just keeps up (rtf 0.5) is not fast enough to halve: no flip-flop
    pacer = Pacer(chunk_ms=1000, max_ms=4000)
    pacer.observe(1.9, 1.0)
    pacer.observe(1.9, 1.0)
    assert [pacer.observe(1.0, 2.0) for _ in range(8)] == [None] * 8
    assert pacer.chunk_ms == 2000


def test_live_context_holds_the_users_pages_and_end_needs_no_exact_spacing(server) -> None:  # type: ignore[no-untyped-def]
    from heard.server.live import is_end

    client, alice, _ = server
    page = {"summary": "Rhea Sharma, product lead; vegetarian", "body": "Allergic to peanuts."}
    client.put("/v1/memory/pages/rhea", json=page, headers=alice)
    token = alice["Authorization"].split()[1]
    with client.websocket_connect(f"/v1/live?token={token}") as ws:
        ws.send_text(events((0, "final", "What does Rhea eat?"))[0])
        while (message := ws.receive_json())["type"] != "context":
            pass
    assert message["pages"][0] == "rhea"
    assert all(is_end(m) for m in ['{"type":"end"}', '{ "type" : "end" }', '{"type": "end"}'])
    assert not any(is_end(m) for m in ['{"type": "final", "text": "end"}', '"end"', "{end"])


def acknowledged(ws: Any, text: str) -> None:
    """Read until the server acknowledges the final ``text`` (or closes the socket)."""
    while (m := ws.receive_json())["type"] != "final" or m["text"] != text:
        pass


def test_a_revoked_token_ends_its_open_socket_before_another_final_is_stored(
    server, db: Database
) -> None:  # type: ignore[no-untyped-def]
    client, alice, _ = server
    token = alice["Authorization"].split()[1]
    user = authenticate(db, token)
    assert user is not None
    with client.websocket_connect(f"/v1/live?token={token}") as ws:
        ws.send_text(events((0, "final", "The Lisbon office opens in May."))[0])
        acknowledged(ws, "The Lisbon office opens in May.")
        revoke_tokens(db, "alice", token)
        ws.send_text(events((900, "final", "The Porto office opens in June."))[0])
        with pytest.raises(WebSocketDisconnect) as closed:
            acknowledged(ws, "The Porto office opens in June.")
    assert (closed.value.code, closed.value.reason) == (1008, "the token was revoked")
    texts = [u.text for u in load_utterances(db, owner=user.owner)]
    assert texts == ["The Lisbon office opens in May."]
