"""``POST /v1/audio/transcriptions`` (issue 31): driven by the official ``openai`` SDK against a
real server on loopback, and by hand with what no SDK would send."""

from __future__ import annotations

import itertools
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jiwer
import openai
import pytest
from fastapi.testclient import TestClient

from heard.asr.whisper import FasterWhisperTranscriber
from heard.errors import BusyError
from heard.limits import Slots
from heard.server.app import ServerSettings, create_app
from heard.server.state import state_of
from heard.speech import Segment, Transcription
from heard.store.database import Database
from heard.store.users import add_user
from heard.testing import FakeTranscriber
from tests.conftest import AUDIO
from tests.reading import assert_reads
from tests.server.threaded import serving

JFK = AUDIO / "jfk.flac"


def normalized(text: str) -> str:
    return " ".join(jiwer.RemovePunctuation()(text.lower()).split())


@pytest.fixture(scope="module")
def recognizer() -> FasterWhisperTranscriber:
    return FasterWhisperTranscriber()


@pytest.fixture
def sdk(
    tmp_path: Path, recognizer: FasterWhisperTranscriber
) -> Iterator[tuple[openai.OpenAI, str, Path]]:
    """The OpenAI SDK pointed at a real server with heard's recognizer, a heard token as its
    key; and the server's uploads folder."""
    db = Database(f"sqlite:///{tmp_path / 'h.db'}")
    uploads = tmp_path / "uploads"
    app = create_app(ServerSettings(db, uploads, transcriber=recognizer))
    _, token = add_user(db, "ana")
    try:
        with serving(app) as host:
            client = openai.OpenAI(api_key=token, base_url=f"http://{host}/v1", max_retries=0)
            yield client, host, uploads
    finally:
        db.dispose()


@pytest.mark.asr
def test_every_response_format_through_the_openai_sdk(
    sdk: tuple[openai.OpenAI, str, Path], recognizer: FasterWhisperTranscriber
) -> None:
    client, _, uploads = sdk
    heard_text = " ".join(s.text for s in recognizer.transcribe(JFK).segments)

    def create(**options: Any) -> Any:
        with JFK.open("rb") as f:
            return client.audio.transcriptions.create(model="whisper-1", file=f, **options)

    as_json = create()
    assert as_json.text == heard_text
    assert_reads(as_json.text)
    assert create(response_format="text") == heard_text + "\n"
    srt = create(response_format="srt")
    assert re.match(r"1\n00:00:00,\d{3} --> 00:00:0\d,\d{3}\n", srt), srt
    assert normalized(" ".join(srt.split("\n")[2::4])) == normalized(heard_text)
    vtt = create(response_format="vtt")
    assert vtt.startswith("WEBVTT\n")
    assert "<v " not in vtt  # one recognizer's track: no speaker spans
    assert re.search(r"\n00:00:00\.\d{3} --> 00:00:0\d\.\d{3}\n", vtt), vtt
    cues = [line for line in vtt.split("\n\n")[1:] if line]
    assert normalized(" ".join(c.split("\n", 1)[1] for c in cues)) == normalized(heard_text)
    verbose = create(response_format="verbose_json", timestamp_granularities=["word", "segment"])
    assert verbose.language == "english"
    assert verbose.duration == pytest.approx(11.0, abs=0.1)
    assert verbose.text == heard_text
    words = verbose.words
    assert [normalized(w.word) for w in words] == normalized(heard_text).split()
    assert all(a.start <= b.start for a, b in itertools.pairwise(words))
    assert words[0].start < 1.0
    assert words[-1].end <= verbose.duration
    assert [s.id for s in verbose.segments] == list(range(len(verbose.segments)))
    assert verbose.segments[0].start == 0.0
    words_only = create(response_format="verbose_json", timestamp_granularities=["word"])
    assert words_only.words
    assert getattr(words_only, "segments", None) is None
    assert not any((uploads / ".transcriptions").iterdir())  # every upload's copy removed


@pytest.mark.asr
def test_the_sdk_gets_openai_shaped_errors_that_name_no_server_path(
    sdk: tuple[openai.OpenAI, str, Path],
) -> None:
    client, host, uploads = sdk
    with pytest.raises(openai.BadRequestError) as bad_file:
        client.audio.transcriptions.create(model="whisper-1", file=("talk.wav", b"junk" * 500))
    assert bad_file.value.body["param"] == "file"
    assert bad_file.value.body["message"].startswith("talk.wav: cannot read as audio")
    assert str(uploads) not in str(bad_file.value.body)
    with JFK.open("rb") as f, pytest.raises(openai.BadRequestError) as bad_model:
        client.audio.transcriptions.create(model="gpt-4o-transcribe" * 100, file=f)
    assert bad_model.value.body["param"] == "model"  # any name is served, but not a huge one
    assert len(bad_model.value.body["message"]) < 300  # and the name is not echoed
    with JFK.open("rb") as f, pytest.raises(openai.BadRequestError) as bad_language:
        client.audio.transcriptions.create(model="whisper-1", file=f, language="es")
    assert bad_language.value.body["param"] == "language"
    wrong_key = openai.OpenAI(api_key="not-a-token", base_url=f"http://{host}/v1", max_retries=0)
    with JFK.open("rb") as f, pytest.raises(openai.AuthenticationError) as refused:
        wrong_key.audio.transcriptions.create(model="whisper-1", file=f)
    assert refused.value.body["code"] == "invalid_api_key"


@pytest.fixture
def api(db: Database, tmp_path: Path) -> Iterator[tuple[TestClient, Path]]:
    """A server whose recognizer is a fake (nothing here decodes far)."""
    uploads = tmp_path / "uploads"
    app = create_app(ServerSettings(db, uploads, transcriber=FakeTranscriber({})))
    _, token = add_user(db, "ana")
    with TestClient(app, raise_server_exceptions=False) as client:
        client.headers["Authorization"] = f"Bearer {token}"
        yield client, uploads


WAV = ("a.wav", b"RIFF" + b"\x00" * 40, "audio/wav")
# (name, form fields, files, the param OpenAI's error names)
HOSTILE = [
    ("no file", {"model": "whisper-1"}, None, "file"),
    ("no model", {}, {"file": WAV}, "model"),
    ("a model with NUL", {"model": "whisper-1\x00"}, {"file": WAV}, "model"),
    ("an unknown format", {"model": "whisper-1", "response_format": "xml"}, {"file": WAV},
     "response_format"),
    ("temperature a word", {"model": "whisper-1", "temperature": "hot"}, {"file": WAV},
     "temperature"),
    ("temperature 2", {"model": "whisper-1", "temperature": "2"}, {"file": WAV}, "temperature"),
    ("granularity char", {"model": "whisper-1", "response_format": "verbose_json",
                          "timestamp_granularities[]": "char"}, {"file": WAV},
     "timestamp_granularities[]"),
    ("a language of 100 letters", {"model": "whisper-1", "language": "x" * 100}, {"file": WAV},
     "language"),
    ("a file that is not audio", {"model": "whisper-1"},
     {"file": ("a.wav", b"\x00\xff" * 4096, "audio/wav")}, "file"),
    ("a file named with NUL", {"model": "whisper-1"},
     {"file": ("a\x00.wav", b"junk" * 10, "audio/wav")}, "file"),
    ("a file named like the limit", {"model": "whisper-1"},  # not a 413 for its name
     {"file": ("keep it at most short.wav", b"junk" * 10, "audio/wav")}, "file"),
]  # fmt: skip


@pytest.mark.parametrize(("data", "files", "param"), [c[1:] for c in HOSTILE],
                         ids=[c[0] for c in HOSTILE])  # fmt: skip
def test_hostile_forms_are_400s_naming_the_field(
    api: tuple[TestClient, Path], data: dict[str, str], files: Any, param: str
) -> None:
    client, uploads = api
    response = client.post("/v1/audio/transcriptions", data=data, files=files)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert error["param"] == param
    assert str(uploads) not in response.text
    copies = uploads / ".transcriptions"
    assert not copies.exists() or not any(copies.iterdir())


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b'{"model": "whisper-1"}', "application/json"),
        (b'--x\r\nContent-Disposition: form-data; name="file"\r\n\r\nabc', "multipart/form-data"),
        (b"garbage", "multipart/form-data; boundary=x"),
    ],
    ids=["json, not a form", "a form with no boundary", "a form cut short"],
)
def test_a_body_that_is_not_a_form_is_a_400(
    api: tuple[TestClient, Path], body: bytes, content_type: str
) -> None:
    client, _ = api
    response = client.post(
        "/v1/audio/transcriptions", content=body, headers={"Content-Type": content_type}
    )
    assert response.status_code == 400, response.text
    assert response.json()["error"]["type"] == "invalid_request_error"


def test_too_big_and_no_token_in_openais_shape(api: tuple[TestClient, Path]) -> None:
    client, _ = api
    huge = client.post(
        "/v1/audio/transcriptions",
        content=b"x",
        headers={"Content-Type": "multipart/form-data; boundary=x", "Content-Length": str(2**40)},
    )
    assert huge.status_code == 413
    assert huge.json()["error"]["code"] == "file_too_large"
    anonymous = client.post("/v1/audio/transcriptions", headers={"Authorization": ""})
    assert anonymous.status_code == 401
    assert anonymous.json()["error"]["code"] == "invalid_api_key"
    # heard's own routes keep heard's shape
    assert client.get("/v1/meetings/x", headers={"Authorization": ""}).json() == {
        "detail": "a valid bearer token is required"
    }


def test_a_server_with_no_recognizer_says_so(db: Database, tmp_path: Path) -> None:
    app = create_app(ServerSettings(db, tmp_path / "uploads"))  # as with --queue
    _, token = add_user(db, "ana")
    with TestClient(app) as client:
        auth = {"Authorization": f"Bearer {token}"}
        response = client.post("/v1/audio/transcriptions", data={"model": "whisper-1"},
                               files={"file": WAV}, headers=auth)  # fmt: skip
    assert response.status_code == 503
    assert "--queue" in response.json()["error"]["message"]


def test_one_file_per_user_and_a_bound_for_the_server() -> None:
    slots = Slots(total=2)
    with slots.taken("ana"):
        with pytest.raises(BusyError, match="this user is transcribing"), slots.taken("ana"):
            pass
        with (
            slots.taken("ben"),
            pytest.raises(BusyError, match="transcribing 2 files"),
            slots.taken("cy"),
        ):
            pass
    with slots.taken("ana"), slots.taken("cy"):  # all given back
        pass


def test_files_past_the_queue_are_429s_the_others_wait_their_turn(
    db: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While one file runs, the same user's next ones wait (an SDK's parallel requests are
    all served); past the user's share of the queue, a 429 with Retry-After."""
    from heard.server.routes import openai as route

    started, release = threading.Event(), threading.Event()

    def hold(_: str) -> None:
        started.set()
        assert release.wait(30)

    class Held(FakeTranscriber):
        def transcribe(self, audio: Any, **options: Any) -> Transcription:
            hold(str(audio))
            return Transcription((Segment(0.0, 1.0, "ask not"),), "en")

    monkeypatch.setattr(route.os, "cpu_count", lambda: 2)  # one file at a time
    fake = Held({})
    app = create_app(ServerSettings(db, tmp_path / "uploads", transcriber=fake))
    state_of(app).transcribing.per_user = 1  # one may wait
    _, token = add_user(db, "ana")
    auth = {"Authorization": f"Bearer {token}"}
    answers: list[int] = []
    with TestClient(app, raise_server_exceptions=False) as client:

        def post() -> None:
            with JFK.open("rb") as f:
                answer = client.post("/v1/audio/transcriptions", data={"model": "whisper-1"},
                                     files={"file": f}, headers=auth)  # fmt: skip
            answers.append(answer.status_code)

        running = [threading.Thread(target=post) for _ in range(2)]
        for thread in running:
            thread.start()
        assert started.wait(30)
        deadline = time.monotonic() + 10
        while not state_of(app).transcribing._queue and time.monotonic() < deadline:
            time.sleep(0.01)  # the second is waiting its turn
        with JFK.open("rb") as f:
            third = client.post("/v1/audio/transcriptions", data={"model": "whisper-1"},
                                files={"file": f}, headers=auth)  # fmt: skip
        release.set()
        for thread in running:
            thread.join(30)
    assert answers == [200, 200]
    assert third.status_code == 429, third.text
    assert third.json()["error"]["type"] == "rate_limit_exceeded"
    assert int(third.headers["Retry-After"]) >= 1


def test_a_bug_is_a_500_in_openais_shape(db: Database, tmp_path: Path) -> None:
    fake = FakeTranscriber({}, before=lambda _: (_ for _ in ()).throw(RuntimeError("bug")))
    app = create_app(ServerSettings(db, tmp_path / "uploads", transcriber=fake))
    _, token = add_user(db, "ana")
    with TestClient(app, raise_server_exceptions=False) as client, JFK.open("rb") as f:
        auth = {"Authorization": f"Bearer {token}"}
        reply = client.post("/v1/audio/transcriptions", data={"model": "whisper-1"},
                            files={"file": f}, headers=auth)  # fmt: skip
    assert reply.status_code == 500
    assert reply.json() == {"error": {"message": "internal error", "type": "server_error",
                                      "param": None, "code": None}}  # fmt: skip
    assert not any((tmp_path / "uploads" / ".transcriptions").iterdir())


# -- stream=true: deltas as the file decodes (issue 73) ------------------------------------


def _streaming_server(db: Database, tmp_path: Path, fake: FakeTranscriber) -> Any:
    app = create_app(ServerSettings(db, tmp_path / "uploads", transcriber=fake))
    _, token = add_user(db, "ana")
    return app, token


def test_stream_sends_each_delta_while_later_segments_are_still_decoding(
    db: Database, tmp_path: Path
) -> None:
    """The fake holds its second segment back until the client has read the first delta:
    a route that waits for the whole transcription (as it did before issue 73) never
    lets the client see it in time."""
    client_has_first = threading.Event()
    waited: list[bool] = []

    def after(segment: Segment) -> None:
        if segment.text == "ask not":
            waited.append(client_has_first.wait(10))

    segments = [Segment(0.0, 1.0, "ask not"), Segment(1.0, 2.5, "what your country can do")]
    app, token = _streaming_server(db, tmp_path, FakeTranscriber({"*": segments}, after=after))
    events = []
    with (
        serving(app) as host,
        openai.OpenAI(api_key=token, base_url=f"http://{host}/v1", max_retries=0) as client,
        JFK.open("rb") as f,
    ):
        for event in client.audio.transcriptions.create(
            model="gpt-4o-transcribe", file=f, stream=True
        ):
            events.append(event)
            client_has_first.set()
    assert waited == [True]
    assert [e.type for e in events] == ["transcript.text.delta"] * 2 + ["transcript.text.done"]
    assert [e.delta for e in events[:2]] == ["ask not", " what your country can do"]  # type: ignore[union-attr]
    assert events[-1].text == "ask not what your country can do"  # type: ignore[union-attr]


def test_stream_failing_after_its_first_delta_ends_with_an_error_event(
    db: Database, tmp_path: Path
) -> None:
    """The answer has started (200): the failure is an ``error`` event in OpenAI's error shape,
    which the SDK raises, and the upload is gone."""

    def after(segment: Segment) -> None:
        raise RuntimeError("the recognizer broke")

    fake = FakeTranscriber({"*": [Segment(0.0, 1.0, "ask not"), Segment(1.0, 2.0, "what")]},
                           after=after)  # fmt: skip
    app, token = _streaming_server(db, tmp_path, fake)
    got = []
    with (
        serving(app) as host,
        openai.OpenAI(api_key=token, base_url=f"http://{host}/v1", max_retries=0) as client,
        JFK.open("rb") as f,
    ):
        stream = client.audio.transcriptions.create(model="whisper-1", file=f, stream=True)
        with pytest.raises(openai.APIError, match="internal error"):
            got.extend(stream)
    assert [e.type for e in got] == ["transcript.text.delta"]
    assert not any((tmp_path / "uploads" / ".transcriptions").iterdir())


def test_stream_of_a_bad_file_is_still_an_error_status(db: Database, tmp_path: Path) -> None:
    """What fails before the first segment is answered as without ``stream``: a 400 naming
    the file, not a 200 with an error inside."""
    app, token = _streaming_server(db, tmp_path, FakeTranscriber({"*": []}))
    with TestClient(app) as client:
        reply = client.post(
            "/v1/audio/transcriptions",
            data={"model": "whisper-1", "stream": "true"},
            files={"file": ("notes.wav", b"RIFF not really audio")},
            headers={"Authorization": f"Bearer {token}"},
        )
    assert reply.status_code == 400, reply.text
    assert "notes.wav" in reply.json()["error"]["message"]


def test_stream_of_silence_is_only_the_done_event(db: Database, tmp_path: Path) -> None:
    app, token = _streaming_server(db, tmp_path, FakeTranscriber({"*": []}))
    with (
        serving(app) as host,
        openai.OpenAI(api_key=token, base_url=f"http://{host}/v1", max_retries=0) as client,
        JFK.open("rb") as f,
    ):
        events = list(client.audio.transcriptions.create(model="whisper-1", file=f, stream=True))
    assert [e.type for e in events] == ["transcript.text.done"]
    assert events[0].text == ""  # type: ignore[union-attr]
