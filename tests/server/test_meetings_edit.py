"""What the meeting web app stands on: a track's audio played back (range requests, signed
links), progress as server-sent events, renaming a participant, deleting a meeting, search
across meetings, and local mode (``heard serve --local``). The recognizer and diarizer are
the fakes of heard.testing; tests/server/test_meetings_app.py drives the real ones from a
browser."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import defaultdict
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from fastapi.testclient import TestClient

from heard.meetings.run import run_pipeline
from heard.meetings.runner import Watched
from heard.server import tickets
from heard.server.app import ServerSettings, create_app
from heard.server.guard import from_this_machine
from heard.server.state import state_of
from heard.speech import Segment
from heard.store.database import Database
from heard.store.evidence import load_utterances
from heard.store.meetings import TrackSpec, create_meeting
from heard.store.models import TrackStatus
from heard.store.tracks import ClaimedTrack, claim_track
from heard.store.users import add_user, revoke_tokens
from heard.store.views import track_states
from heard.testing import FakeDiarizer, FakeTranscriber
from tests.conftest import AUDIO

Client = tuple[TestClient, dict[str, str], dict[str, str]]
HERE = ("127.0.0.1", 50000)
"""A test client's address on this machine's loopback (local mode answers no other)."""


def _call(client: TestClient, headers: dict[str, str], db: Database) -> str:
    """A two-person call uploaded as one recording and run: Speaker 1 says hello and the
    budget, Speaker 2 answers."""
    created = client.post(
        "/v1/meetings",
        json={"title": "call", "participants": [{"name": "call", "speakers": "auto"}]},
        headers=headers,
    )
    mid: str = created.json()["id"]
    wav = (AUDIO / "stereo_diarization.wav").read_bytes()
    assert client.put(f"/v1/meetings/{mid}/tracks/call", content=wav, headers=headers).is_success
    location = track_states(db, mid)[0].location
    said = [Segment(0.0, 1.0, "hello there"), Segment(1.5, 2.5, "the budget is approved"),
            Segment(3.0, 4.0, "thanks")]  # fmt: skip
    turns = [(0.0, 1.2, 0), (1.4, 2.6, 0), (2.9, 4.2, 1)]
    run_pipeline(mid, db=db, transcriber=FakeTranscriber({location: said}),
                 diarizer=FakeDiarizer({location: turns}))  # fmt: skip
    return mid


def _one_track(client: TestClient, headers: dict[str, str], upload: bool = True) -> str:
    """A meeting of one participant, "a", with JFK's speech uploaded as their track."""
    mid: str = client.post("/v1/meetings", json={"title": "t", "participants": [{"name": "a"}]},
                           headers=headers).json()["id"]  # fmt: skip
    if upload:
        body = (AUDIO / "jfk.flac").read_bytes()
        put = client.put(f"/v1/meetings/{mid}/tracks/a", content=body, headers=headers)
        assert put.is_success, put.text
    return mid


def _phrases(client: TestClient, mid: str, headers: dict[str, str]) -> list[tuple[str, str]]:
    got = client.get(f"/v1/meetings/{mid}/phrases", headers=headers).json()
    return [(p["participant"], p["text"]) for p in got]


# ---- playback ----


def test_a_track_plays_back_by_signed_link_with_ranges(server: Client, db: Database) -> None:
    client, alice, bob = server
    mid = _call(client, alice, db)
    links = client.get(f"/v1/meetings/{mid}/playback", headers=alice).json()
    assert [(t["participant"], t["voices"]) for t in links] == [
        ("call", ["Speaker 1", "Speaker 2"])
    ]
    url = links[0]["url"]
    whole = (AUDIO / "stereo_diarization.wav").read_bytes()
    # the link alone opens it (an audio element sends no token), a range at a time
    part = client.get(url, headers={"Range": "bytes=100-199"})
    assert part.status_code == 206
    assert part.content == whole[100:200]
    assert part.headers["content-type"] == "audio/wav"
    assert part.headers["content-range"] == f"bytes 100-199/{len(whole)}"
    assert client.get(url).content == whole
    # the bearer token opens it too; bob's does not, nor no token at all
    path = urlsplit(url).path
    assert client.get(path, headers=alice).content == whole
    assert client.get(path, headers=bob).status_code == 404
    assert client.get(path).status_code == 401


def test_a_link_opens_only_its_path_until_it_expires_or_its_token_goes(
    server: Client, db: Database
) -> None:
    client, alice, _ = server
    mid = _call(client, alice, db)
    url = client.get(f"/v1/meetings/{mid}/playback", headers=alice).json()[0]["url"]
    split = urlsplit(url)
    query = {k: v[0] for k, v in parse_qs(split.query).items()}
    assert "heard_" not in url  # the token itself is never in a link
    other = split.path.replace("/tracks/call/", "/tracks/someone/")
    assert client.get(f"{other}?{split.query}").status_code == 401
    forged = dict(query, sig="0" * 64)
    assert client.get(split.path, params=forged).status_code == 401
    later = dict(query, expires=str(int(query["expires"]) + 60))  # moved on: the sig breaks
    assert client.get(split.path, params=later).status_code == 401
    token = alice["Authorization"].split()[1]
    user = tickets.token_digests(db, uuid.UUID(query["user"]))
    assert user is not None
    secret = state_of(client.app).settings.link_secret  # type: ignore[arg-type]
    stale = tickets.sign(secret, token, user[0], split.path, now=time.time() - tickets.TICKET_S - 1)
    assert client.get(f"{split.path}?{tickets.sign(secret, token, user[0], split.path)}").is_success
    # made with the digest alone (what the database holds), it opens nothing
    assert (
        client.get(f"{split.path}?{tickets.sign(b'', token, user[0], split.path)}").status_code
        == 401
    )
    assert client.get(f"{split.path}?{stale}").status_code == 401
    assert client.get(url).status_code == 200
    revoke_tokens(db, "alice", token)
    assert client.get(url).status_code == 401


def test_audio_of_a_track_with_no_upload_or_lost_file_is_a_404(
    server: Client, db: Database
) -> None:
    client, alice, _ = server
    mid = _one_track(client, alice, upload=False)
    assert client.get(f"/v1/meetings/{mid}/playback", headers=alice).json() == []
    assert client.get(f"/v1/meetings/{mid}/tracks/a/audio", headers=alice).status_code == 404
    client.put(f"/v1/meetings/{mid}/tracks/a", content=(AUDIO / "jfk.flac").read_bytes(),
               headers=alice)  # fmt: skip
    Path(track_states(db, mid)[0].location).unlink()
    lost = client.get(f"/v1/meetings/{mid}/tracks/a/audio", headers=alice)
    assert lost.status_code == 404
    assert "no longer kept" in lost.json()["detail"]


def test_track_audio_answers_head_and_is_never_sniffed(server: Client) -> None:
    """Issue 57: HEAD on a track's audio was a 405, and its answers said nothing to stop a
    browser reading an upload as another type than the one sent."""
    client, alice, _ = server
    mid = _one_track(client, alice)
    path = f"/v1/meetings/{mid}/tracks/a/audio"
    got = client.get(path, headers=alice)
    head = client.head(path, headers=alice)
    assert head.status_code == 200
    assert head.content == b""
    assert head.headers["content-length"] == str(len(got.content))
    assert head.headers["content-type"] == got.headers["content-type"] == "audio/flac"
    for answer in (got, head, client.get(path, headers={**alice, "Range": "bytes=0-99"})):
        assert answer.headers["x-content-type-options"] == "nosniff"


# ---- progress ----


def test_progress_streams_as_events_until_the_meeting_is_finished(
    db: Database, tmp_path: Path
) -> None:
    _, token = add_user(db, "ana")
    headers = {"Authorization": f"Bearer {token}"}
    fake = FakeTranscriber({}, before=lambda _: time.sleep(0.6))  # each track takes a while
    fake.by_location = defaultdict(lambda: [Segment(0.0, 1.0, "hello")])
    app = create_app(ServerSettings(db, tmp_path / "uploads", transcriber=fake))
    with TestClient(app) as client:
        mid = client.post("/v1/meetings", json={"title": "t", "participants": [
            {"name": "a"}, {"name": "b"}]}, headers=headers).json()["id"]  # fmt: skip
        for name in ("a", "b"):
            body = (AUDIO / "jfk.flac").read_bytes()
            client.put(f"/v1/meetings/{mid}/tracks/{name}", content=body, headers=headers)
        assert client.post(f"/v1/meetings/{mid}/run", headers=headers).json()["started"]
        states = []
        with client.stream("GET", f"/v1/meetings/{mid}/events", headers=headers) as stream:
            assert stream.headers["content-type"].startswith("text/event-stream")
            event = ""
            for line in stream.iter_lines():
                if line.startswith("event: "):
                    event = line[7:]
                elif line.startswith("data: "):
                    assert event == "progress"
                    states.append(json.loads(line[6:]))
        fractions = [s["fraction"] for s in states]
        assert fractions == sorted(fractions)  # it only goes forward
        assert states[-1]["finished"]
        assert states[-1]["fraction"] == 1.0
        assert states[-1]["status"] == "complete"
        assert not any(s["finished"] for s in states[:-1])
        assert any(0 < s["fraction"] < 1 for s in states)  # one track done, one not yet
        assert client.get(f"/v1/meetings/{mid}/events", headers=headers).text.count("event:") == 1


def _events(client: TestClient, path: str, headers: dict[str, str]) -> list[tuple[str, str]]:
    """Each (event, data) of a stream, until it ends."""
    out, event = [], ""
    with client.stream("GET", path, headers=headers) as stream:
        for line in stream.iter_lines():
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: "):
                out.append((event, line[6:]))
    return out


def test_a_stream_ends_when_its_token_is_revoked_or_nothing_moves(
    db: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 57: a stream outlived its token's revocation by 34 s, and the stream of a meeting
    never run never ended."""
    import heard.server.progress as routes

    monkeypatch.setattr(routes, "STILL_S", 1.5)
    monkeypatch.setattr(routes, "TOKEN_CHECK_S", 0.5)
    _, token = add_user(db, "ana")
    headers = {"Authorization": f"Bearer {token}"}
    app = create_app(ServerSettings(db, tmp_path / "uploads", transcriber=FakeTranscriber({})))
    with TestClient(app) as client:
        mid = _one_track(client, headers)  # uploaded, never run

        def follow() -> tuple[threading.Thread, list[tuple[str, str]]]:
            got: list[tuple[str, str]] = []
            path = f"/v1/meetings/{mid}/events"
            reader = threading.Thread(target=lambda: got.extend(_events(client, path, headers)),
                                      daemon=True)  # fmt: skip
            reader.start()
            return reader, got

        reader, never_run = follow()
        reader.join(timeout=60)  # (ended by the app's shutdown if it never ends)
        assert [e for e, _ in never_run] == ["progress", "idle"]
        monkeypatch.setattr(routes, "STILL_S", 600.0)
        reader, revoked = follow()
        time.sleep(1.0)
        revoke_tokens(db, "ana", token)
        reader.join(timeout=60)
        assert revoked[-1] == ("gone", '{"detail": "the token was revoked"}')


def test_a_diarized_track_counts_both_passes() -> None:
    watched = Watched()
    track = ClaimedTrack(uuid.uuid4(), "call", "x.wav", None, 0, speakers="auto")
    watched.started(track)
    watched.advanced(track, 10, 10)  # who spoke when: done
    assert watched.fraction(track.id) == 0.5
    watched.advanced(track, 2, 10)  # the words: a fifth in
    assert watched.fraction(track.id) == pytest.approx(0.6)
    watched.finished(track, TrackStatus.DONE)
    assert watched.fraction(track.id) is None


def test_events_of_someone_elses_meeting_are_a_404(server: Client, db: Database) -> None:
    client, alice, bob = server
    mid = _call(client, alice, db)
    assert client.get(f"/v1/meetings/{mid}/events", headers=bob).status_code == 404


# ---- rename ----


def test_a_renamed_speaker_is_renamed_everywhere_and_stays_so(server: Client, db: Database) -> None:
    client, alice, _bob = server
    mid = _call(client, alice, db)
    renamed = client.put(f"/v1/meetings/{mid}/participants/Speaker 2", json={"name": "Bob"},
                         headers=alice)  # fmt: skip
    assert renamed.status_code == 200, renamed.text
    assert "Bob" in renamed.json()["participants"]
    expected = [("Speaker 1", "hello there the budget is approved"), ("Bob", "thanks")]
    assert _phrases(client, mid, alice) == expected
    for fmt, line in (("srt", "Bob: thanks"), ("txt", "Bob"), ("vtt", "<v Bob>thanks")):
        assert line in client.get(f"/v1/meetings/{mid}/export?format=" + fmt, headers=alice).text
    # a rebuild (the run again) keeps the name: it is stored on the recording
    run_pipeline(mid, db=db, transcriber=FakeTranscriber({}))
    assert _phrases(client, mid, alice) == expected
    # memory's evidence says who said it now
    said = {e.text: e.speaker for e in load_utterances(db, owner=_owner(client, alice))}
    assert said["thanks"] == "Bob"


def _owner(client: TestClient, headers: dict[str, str]) -> str:
    return str(client.get("/v1/me", headers=headers).json()["id"])


def test_an_own_track_participant_is_renamed(server: Client, db: Database) -> None:
    client, alice, _ = server
    mid = _one_track(client, alice)
    run_pipeline(mid, db=db, transcriber=FakeTranscriber({
        track_states(db, mid)[0].location: [Segment(0, 1, "ask not")]}))  # fmt: skip
    assert client.put(f"/v1/meetings/{mid}/participants/a", json={"name": "JFK"},
                      headers=alice).status_code == 200  # fmt: skip
    assert _phrases(client, mid, alice) == [("JFK", "ask not")]
    # the track goes by the new name too
    assert client.get(f"/v1/meetings/{mid}/tracks/JFK/audio", headers=alice).status_code == 200


@pytest.mark.parametrize(
    ("old", "new", "status"),
    [
        ("Speaker 2", "speaker 1", 409),  # another participant's name, in any case
        ("Nobody", "Ana", 404),
        ("Speaker 2", "", 422),
        ("Speaker 2", "a/b", 422),
        ("Speaker 2", "x\u202ey", 422),
        ("Speaker 2", "x" * 201, 422),
    ],
)
def test_a_rename_that_cannot_be_is_refused_and_changes_nothing(
    server: Client, db: Database, old: str, new: str, status: int
) -> None:
    client, alice, _ = server
    mid = _call(client, alice, db)
    before = _phrases(client, mid, alice)
    reply = client.put(f"/v1/meetings/{mid}/participants/{old}", json={"name": new},
                       headers=alice)  # fmt: skip
    assert reply.status_code == status, reply.text
    assert _phrases(client, mid, alice) == before


def test_someone_elses_meeting_cannot_be_renamed_or_deleted(server: Client, db: Database) -> None:
    client, alice, bob = server
    mid = _call(client, alice, db)
    assert client.put(f"/v1/meetings/{mid}/participants/Speaker 1", json={"name": "x"},
                      headers=bob).status_code == 404  # fmt: skip
    assert client.delete(f"/v1/meetings/{mid}", headers=bob).status_code == 404
    assert client.get(f"/v1/meetings/{mid}", headers=alice).status_code == 200


# ---- delete ----


def test_a_deleted_meeting_takes_its_audio_and_memory_with_it(
    server: Client, db: Database, tmp_path: Path
) -> None:
    client, alice, _ = server
    mid = _call(client, alice, db)
    kept = Path(track_states(db, mid)[0].location)
    assert kept.is_file()
    assert client.get("/v1/search", params={"q": "budget"}, headers=alice).json()
    assert client.delete(f"/v1/meetings/{mid}", headers=alice).status_code == 204
    assert not kept.exists()
    assert not kept.parent.exists()
    assert client.get(f"/v1/meetings/{mid}", headers=alice).status_code == 404
    assert client.delete(f"/v1/meetings/{mid}", headers=alice).status_code == 404
    assert client.get("/v1/search", params={"q": "budget"}, headers=alice).json() == []
    assert load_utterances(db, owner=_owner(client, alice)) == []
    # the memory that held its phrases forgets them too
    recalled = client.post("/v1/memory/recall", json={"query": "budget"}, headers=alice)
    assert recalled.json() == []


def test_a_meeting_being_transcribed_is_not_deleted(server: Client, db: Database) -> None:
    client, alice, _ = server
    mid = _one_track(client, alice)
    from heard.store.models import utc_now

    assert claim_track(db, track_states(db, mid)[0].id, utc_now()) is not None
    refused = client.delete(f"/v1/meetings/{mid}", headers=alice)
    assert refused.status_code == 409
    assert "being transcribed" in refused.json()["detail"]
    assert Path(track_states(db, mid)[0].location).is_file()


def test_deleting_a_command_line_meeting_leaves_the_users_files(
    db: Database, tmp_path: Path
) -> None:
    own = tmp_path / "mine.flac"
    own.write_bytes((AUDIO / "jfk.flac").read_bytes())
    mid = create_meeting(db, title="cli", tracks=[TrackSpec("me", str(own))])
    app = create_app(ServerSettings(db, tmp_path / "uploads", local=True))
    with TestClient(app, base_url="http://127.0.0.1:8000", client=HERE) as client:
        assert client.delete(f"/v1/meetings/{mid}").status_code == 204
    assert own.is_file()


# ---- search ----


def test_search_finds_the_phrase_that_says_it_in_the_callers_meetings(
    server: Client, db: Database
) -> None:
    client, alice, bob = server
    mid = _call(client, alice, db)
    found = client.get("/v1/search", params={"q": "approved budget"}, headers=alice)
    assert found.status_code == 200
    hits = found.json()
    assert [(h["meeting_id"], h["position"], h["participant"]) for h in hits] == [
        (mid, 0, "Speaker 1")
    ]
    assert hits[0]["text"] == "hello there the budget is approved"
    assert hits[0]["title"] == "call"
    assert client.get("/v1/search", params={"q": "budget"}, headers=bob).json() == []
    assert client.get("/v1/search", params={"q": "the"}, headers=alice).json() == []
    assert client.get("/v1/search", params={"q": ""}, headers=alice).status_code == 422


# ---- local mode ----


def test_local_mode_answers_this_machine_without_a_token_as_the_cli_user(
    db: Database, tmp_path: Path
) -> None:
    mid = create_meeting(db, title="from the cli", tracks=[TrackSpec("me", "/x.wav")])
    _, token = add_user(db, "ana")
    local = create_app(ServerSettings(db, tmp_path / "uploads", local=True))
    with TestClient(local, base_url="http://127.0.0.1:8000", client=HERE) as client:
        assert [m["id"] for m in client.get("/v1/meetings").json()] == [str(mid)]
        assert client.get("/v1/me").json()["name"] == "local"
        # a token still acts as its own user
        mine = client.get("/v1/meetings", headers={"Authorization": f"Bearer {token}"}).json()
        assert mine == []
        # a page of another site (a foreign Origin), or a name that is not loopback (DNS
        # rebinding), is not this machine's user
        assert client.get("/v1/meetings", headers={"Origin": "http://evil.test"}).status_code == 401
        assert client.get("/v1/meetings", headers={"Host": "evil.test"}).status_code == 401
        same = {"Origin": "http://127.0.0.1:8000"}
        assert client.get("/v1/meetings", headers=same).status_code == 200
        # through a proxy, or from another site's page by a browser's own account
        for header in ({"X-Forwarded-For": "203.0.113.9"}, {"Forwarded": "for=203.0.113.9"},
                       {"Sec-Fetch-Site": "cross-site"}):  # fmt: skip
            assert client.get("/v1/meetings", headers=header).status_code == 401
    # from another machine, whatever it names as the host
    with TestClient(local, base_url="http://127.0.0.1:8000", client=("192.0.2.7", 1)) as client:
        assert client.get("/v1/meetings").status_code == 401
    with TestClient(local, base_url="http://localhost:8000", client=HERE) as client:
        assert client.get("/v1/meetings").status_code == 200
    # without --local, no token is no one
    served = create_app(ServerSettings(db, tmp_path / "uploads"))
    with TestClient(served, base_url="http://127.0.0.1:8000", client=HERE) as client:
        assert client.get("/v1/meetings").status_code == 401


def test_serve_refuses_local_mode_off_loopback() -> None:
    from typer.testing import CliRunner

    from heard.cli import app as cli

    refused = CliRunner().invoke(cli, ["serve", "--local", "--host", "0.0.0.0"])
    assert refused.exit_code == 2
    assert "loopback" in refused.output


def test_a_finished_meeting_is_its_owners_evidence(db: Database) -> None:
    mid = create_meeting(db, title="t", tracks=[TrackSpec("ana", "/a.wav")])
    run_pipeline(mid, db=db, transcriber=FakeTranscriber({"/a.wav": [Segment(0, 1, "hi all")]}))
    said = load_utterances(db, owner="")
    assert [(e.speaker, e.text, e.conversation) for e in said] == [
        ("ana", "hi all", f"meeting:{mid}")
    ]
    run_pipeline(mid, db=db, transcriber=FakeTranscriber({}))  # again: not twice
    assert len(load_utterances(db, owner="")) == 1


@pytest.mark.parametrize(
    "headers",
    [
        [("host", "127.0.0.1:evil.example")],
        [("host", "127.0.0.1:8000"), ("host", "evil.example")],
        [("host", "127.0.0.1:8000"), ("origin", "http://evil.example"),
         ("origin", "http://127.0.0.1:8000")],
        [("host", "127.0.0.1:8000"), ("sec-fetch-site", "cross-site"),
         ("sec-fetch-site", "same-origin")],
        [("host", "127.0.0.1:8000"), ("origin", "http://127.0.0.1:8000.evil.example")],
        # issue 71: a proxy's headers, however spelled, each alone
        *([("host", "127.0.0.1:8000"), (name, value)] for name, value in [
            ("x-forwarded-proto", "https"), ("via", "1.1 proxy"), ("cf-connecting-ip", "192.0.2.7"),
            ("true-client-ip", "192.0.2.7"), ("x_forwarded_for", "192.0.2.7")]),
    ],
)  # fmt: skip
def test_local_mode_refuses_a_look_alike_host_and_repeated_headers(
    db: Database, tmp_path: Path, headers: list[tuple[str, str]]
) -> None:
    """Issue 57: local mode read the last of repeated Host, Origin and Sec-Fetch-Site headers
    (a proxy may read the first), and took ``127.0.0.1:evil.example`` for this machine."""
    local = create_app(ServerSettings(db, tmp_path / "uploads", local=True))
    raw = [(k.encode(), v.encode()) for k, v in headers]
    assert not from_this_machine(list(headers), HERE)
    with TestClient(local, client=HERE) as client:
        # httpx sends what it is given as it is (a dict would fold the repeats)
        refused = client.request("GET", "http://127.0.0.1:8000/v1/me", headers=raw)
        assert refused.status_code == 401
        assert client.get("http://127.0.0.1:8000/v1/me").json()["name"] == "local"


@pytest.mark.parametrize(
    ("names", "why"),
    [
        (["Alice", "Аlice"], "mixes Cyrillic and Latin"),  # a Cyrillic A
        (["José", "Jose\u0301"], "named twice"),  # NFC and NFD
        (["Alice", "Al\u200bice"], "invisible characters"),
        (["АВС", "ABC"], "named twice"),  # all Cyrillic, drawn like Latin
        (["ana", "ɑna"], "named twice"),  # issue 71: Latin alpha
        (["ana", "ᴀna"], "named twice"),  # issue 71: a small capital
        (["."], "'.' and '..' are not names"),
        ([".."], "'.' and '..' are not names"),
    ],
)
def test_look_alike_and_unaddressable_participant_names_are_refused(
    server: Client, names: list[str], why: str
) -> None:
    """Issue 57: look-alike names (zero-width, Cyrillic, NFC/NFD twins) sat beside the real
    one, and a participant named "." or ".." could be neither uploaded nor played."""
    client, alice, _ = server
    people = [{"name": n} for n in names]
    made = client.post("/v1/meetings", headers=alice, json={"title": "t", "participants": people})
    assert made.status_code == 422, made.text
    assert why in made.text
    if len(names) == 1 or why != "named twice":  # the name itself is refused: a rename too
        mid = _one_track(client, alice)
        renamed = client.put(f"/v1/meetings/{mid}/participants/a", headers=alice,
                             json={"name": names[-1]})  # fmt: skip
        assert renamed.status_code == 422
        assert why in renamed.text


def test_a_participant_cannot_be_renamed_to_a_twin_of_another(server: Client, db: Database) -> None:
    client, alice, _ = server
    mid = client.post("/v1/meetings", headers=alice, json={"title": "t", "participants": [
        {"name": "José"}, {"name": "Bob"}]}).json()["id"]  # fmt: skip
    twin = client.put(f"/v1/meetings/{mid}/participants/Bob", headers=alice,
                      json={"name": "Jose\u0301"})  # fmt: skip
    assert twin.status_code == 409
    assert "has a participant" in twin.json()["detail"]


def test_local_mode_live_socket_needs_no_token_and_stores_for_the_local_user(
    db: Database, tmp_path: Path
) -> None:
    from starlette.websockets import WebSocketDisconnect

    app = create_app(ServerSettings(db, tmp_path / "uploads", local=True))
    final = json.dumps({"t_ms": 0, "type": "final", "text": "We ship on Friday.", "speaker": "ana"})
    with TestClient(app, base_url="http://127.0.0.1:8000", client=HERE) as client:
        with client.websocket_connect("ws://127.0.0.1:8000/v1/live?mode=relaxed") as ws:
            ws.send_text(final)
            while ws.receive_json()["type"] != "final":  # acknowledged once stored
                pass
        foreign = {"Origin": "http://evil.test"}
        with (
            pytest.raises(WebSocketDisconnect) as refused,
            client.websocket_connect("ws://127.0.0.1:8000/v1/live", headers=foreign) as ws,
        ):
            ws.receive_json()
        assert refused.value.code == 1008
    assert [e.text for e in load_utterances(db, owner="")] == ["We ship on Friday."]


def test_a_token_users_signed_link_plays_in_local_mode_too(db: Database, tmp_path: Path) -> None:
    _, token = add_user(db, "ana")
    headers = {"Authorization": f"Bearer {token}"}
    local = create_app(ServerSettings(db, tmp_path / "uploads", local=True))
    with TestClient(local, base_url="http://127.0.0.1:8000", client=HERE) as client:
        mid = _one_track(client, headers)
        url = client.get(f"/v1/meetings/{mid}/playback", headers=headers).json()[0]["url"]
        assert client.get(url).content == (AUDIO / "jfk.flac").read_bytes()  # ana's, no token


def test_an_upload_that_ends_after_its_meeting_was_deleted_keeps_nothing(
    server: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import heard.meetings.uploads as routes
    from heard.store.meetings import delete_meeting

    client, alice, _ = server
    mid = _one_track(client, alice, upload=False)
    kept = routes.upload_track

    def deleted_meanwhile(db: Database, track_id: uuid.UUID, location: str) -> str:
        delete_meeting(db, mid)
        return kept(db, track_id, location)

    monkeypatch.setattr(routes, "upload_track", deleted_meanwhile)
    body = (AUDIO / "jfk.flac").read_bytes()
    refused = client.put(f"/v1/meetings/{mid}/tracks/a", content=body, headers=alice)
    assert refused.status_code == 404
    assert "deleted" in refused.json()["detail"]
    assert list((tmp_path / "uploads").rglob("*.audio")) == []


def test_the_local_users_uploads_have_a_folder_of_their_own(db: Database, tmp_path: Path) -> None:
    _, token = add_user(db, "ana")
    local = create_app(ServerSettings(db, tmp_path / "uploads", local=True))
    with TestClient(local, base_url="http://127.0.0.1:8000", client=HERE) as client:
        for headers in ({}, {"Authorization": f"Bearer {token}"}):
            _one_track(client, headers)
    folders = sorted(p.parent.parent.name for p in (tmp_path / "uploads").rglob("*.audio"))
    assert len(folders) == 2
    assert "local" in folders


def test_renaming_a_recording_keeps_its_speakers_names(server: Client, db: Database) -> None:
    client, alice, _ = server
    rooms = [{"name": "roomA", "speakers": "auto"}, {"name": "roomB", "speakers": "auto"}]
    mid = client.post("/v1/meetings", json={"title": "t", "participants": rooms},
                      headers=alice).json()["id"]  # fmt: skip
    for room, audio in (("roomA", "jfk.flac"), ("roomB", "stereo_diarization.wav")):
        body = (AUDIO / audio).read_bytes()
        assert client.put(f"/v1/meetings/{mid}/tracks/{room}", content=body,
                          headers=alice).is_success  # fmt: skip
    where = {t.participant: t.location for t in track_states(db, mid)}
    said = {where["roomA"]: [Segment(0.0, 1.0, "one")], where["roomB"]: [Segment(5.0, 6.0, "two")]}
    turns = {where["roomA"]: [(0.0, 1.0, 0)], where["roomB"]: [(5.0, 6.0, 0)]}
    run_pipeline(mid, db=db, transcriber=FakeTranscriber(said), diarizer=FakeDiarizer(turns))
    before = [("roomA speaker 1", "one"), ("roomB speaker 1", "two")]
    assert _phrases(client, mid, alice) == before
    assert client.put(f"/v1/meetings/{mid}/participants/roomB", json={"name": "Kitchen"},
                      headers=alice).status_code == 200  # fmt: skip
    links = client.get(f"/v1/meetings/{mid}/playback", headers=alice).json()
    assert {t["participant"]: t["voices"] for t in links}["Kitchen"] == ["roomB speaker 1"]
    run_pipeline(mid, db=db, transcriber=FakeTranscriber({}))  # rebuilt: the names stay
    assert _phrases(client, mid, alice) == before


def test_search_remembers_a_built_meeting_memory_has_nothing_of(
    server: Client, db: Database
) -> None:
    from heard.meetings.memory import forget_meeting

    client, alice, _ = server
    mid = _call(client, alice, db)
    forget_meeting(db, uuid.UUID(mid), _owner(client, alice))  # as one built before memory
    assert load_utterances(db, owner=_owner(client, alice)) == []
    hits = client.get("/v1/search", params={"q": "budget"}, headers=alice).json()
    assert [h["meeting_id"] for h in hits] == [mid]
