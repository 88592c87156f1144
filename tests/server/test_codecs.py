"""The live sockets' protocols without a model (issue 41): the server's recognizers are
``heard.testing.ScriptedRecognizer`` (``ServerSettings.recognizers``), so what is checked is
the codec's side: audio formats in (containers, several channels), the Realtime session's
events, and the REST queue that serves every request of one key instead of refusing two."""

from __future__ import annotations

import base64
import io
import json
import threading
import time
import wave
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import av
import httpx
import numpy as np
import pytest
from fastapi.testclient import TestClient
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from heard.asr.microphone import RecognizerFactory
from heard.asr.streaming import StreamOptions
from heard.asr.whisper import WhisperOptions
from heard.errors import BusyError
from heard.server.app import ServerSettings, create_app
from heard.server.quotas import FairQueue
from heard.server.state import state_of
from heard.speech import Segment, Transcription, Word
from heard.store.database import Database
from heard.store.users import add_user
from heard.testing import FakeTranscriber, ScriptedRecognizer
from tests.server.threaded import serving

SAID = [Word(0.3, 0.6, "we"), Word(0.7, 1.0, "ship"), Word(1.1, 1.5, "friday.")]


def scripted(whisper: WhisperOptions, stream: StreamOptions | None) -> RecognizerFactory:
    return lambda speaker: ScriptedRecognizer(SAID)


class SlowTranscriber(FakeTranscriber):
    """Canned JFK text, a moment per file: requests overlap."""

    def transcribe(self, audio: Any, **options: Any) -> Transcription:
        time.sleep(0.3)
        return Transcription((Segment(0.0, 1.0, "ask not"),), "en")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, str]]:
    folder = tmp_path_factory.mktemp("codecs")
    db = Database(f"sqlite:///{folder / 'h.db'}")
    settings = ServerSettings(db, folder / "uploads", transcriber=SlowTranscriber({}),
                              recognizers=scripted)  # fmt: skip
    app = create_app(settings)
    # one at a time, on any machine
    state_of(app).transcribing = FairQueue(1, stopping=settings.stopping)
    _, ana = add_user(db, "ana")
    _, ben = add_user(db, "ben")
    try:
        with serving(app) as host:
            yield host, ana, ben
    finally:
        db.dispose()


def tone(seconds: float, rate: int = 16_000) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    return (np.sin(2 * np.pi * 220 * t) * 8000).astype("<i2")


def ogg_opus(samples: np.ndarray, rate: int = 16_000) -> bytes:
    """``samples`` in an Ogg Opus file, as a browser's MediaRecorder or Deepgram's opus
    clients send it."""
    out = io.BytesIO()
    with av.open(out, "w", format="ogg") as container:
        stream = container.add_stream("libopus", rate=48_000)
        stream.layout = "mono"
        for i in range(0, len(samples), 960):
            frame = av.AudioFrame.from_ndarray(samples[i : i + 960].reshape(1, -1),
                                               format="s16", layout="mono")  # fmt: skip
            frame.sample_rate = rate
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
    return out.getvalue()


def listen(host: str, token: str, query: str, chunks: list[bytes]) -> list[dict[str, Any]]:
    got: list[dict[str, Any]] = []
    with connect(f"ws://{host}/v1/listen?{query}",
                 additional_headers={"Authorization": f"Token {token}"}) as ws:  # fmt: skip
        for chunk in chunks:
            ws.send(chunk)
            time.sleep(0.01)
        ws.send(json.dumps({"type": "CloseStream"}))
        got = [json.loads(m) for m in ws]
    return got


def finals(messages: list[dict[str, Any]], channel: int = 0) -> str:
    return " ".join(m["channel"]["alternatives"][0]["transcript"] for m in messages
                    if m["type"] == "Results" and m["is_final"]
                    and m["channel_index"][0] == channel)  # fmt: skip


def test_an_ogg_opus_stream_is_decoded_as_it_comes(server: tuple[str, str, str]) -> None:
    """No encoding given and Ogg's first bytes: a container, demuxed and decoded as its bytes
    arrive (here 2 s of it in 1 KB pieces); its audio reaches the recognizer whole."""
    host, ana, _ = server
    data = ogg_opus(tone(2.0))
    got = listen(host, ana, "model=nova-3", [data[i : i + 1024] for i in range(0, len(data), 1024)])
    assert finals(got) == "we ship friday."
    assert got[-1]["type"] == "Metadata"
    assert got[-1]["duration"] == pytest.approx(2.0, abs=0.05)


def test_a_container_stream_left_midway_stops_decoding(server: tuple[str, str, str]) -> None:
    """A client that leaves (no CloseStream) leaves no decoding thread behind."""
    host, ana, _ = server

    def decoding() -> int:
        return sum(t.name == "heard-container" for t in threading.enumerate())

    before = decoding()
    data = ogg_opus(tone(3.0))
    with connect(f"ws://{host}/v1/listen",
                 additional_headers={"Authorization": f"Token {ana}"}) as ws:  # fmt: skip
        ws.send(data[: len(data) // 2])
        deadline = time.monotonic() + 5
        while decoding() == before and time.monotonic() < deadline:
            time.sleep(0.02)
        assert decoding() == before + 1
    deadline = time.monotonic() + 10
    while decoding() > before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert decoding() == before


def test_each_channel_is_its_own_stream(server: tuple[str, str, str]) -> None:
    host, ana, _ = server
    left, right = tone(2.0), tone(2.0) // 2
    pcm = np.stack([left, right], axis=1).astype("<i2").tobytes()
    got = listen(host, ana, "channels=2&multichannel=true&sample_rate=16000&encoding=linear16",
                 [pcm[i : i + 6400] for i in range(0, len(pcm), 6400)])  # fmt: skip
    assert finals(got, 0) == finals(got, 1) == "we ship friday."
    assert {tuple(m["channel_index"]) for m in got if m["type"] == "Results"} == {(0, 2), (1, 2)}
    assert got[-1]["channels"] == 2
    assert got[-1]["duration"] == pytest.approx(2.0, abs=0.01)


def realtime(
    host: str, token: str, events: list[dict[str, Any]], until: str
) -> list[dict[str, Any]]:
    got: list[dict[str, Any]] = []
    with connect(f"ws://{host}/v1/realtime?intent=transcription",
                 additional_headers={"Authorization": f"Bearer {token}"}) as ws:  # fmt: skip
        for event in events:
            ws.send(json.dumps(event))
            time.sleep(0.005)
        while not got or got[-1]["type"] != until:
            got.append(json.loads(ws.recv(timeout=20)))
    return got


def appends(samples: np.ndarray, rate: int = 24_000) -> list[dict[str, Any]]:
    step = rate // 10
    return [{"type": "input_audio_buffer.append",
             "audio": base64.b64encode(samples[i : i + step].tobytes()).decode()}
            for i in range(0, len(samples), step)]  # fmt: skip


def test_realtime_without_turn_detection_completes_on_commit(
    server: tuple[str, str, str],
) -> None:
    """Pipecat's default: no server VAD, the client commits when its own VAD says the user
    stopped. The deltas add up to the completed transcript; every event names the item."""
    host, ana, _ = server
    update = {"type": "session.update", "session": {"type": "transcription", "audio": {"input": {
        "format": {"type": "audio/pcm", "rate": 24000},
        "transcription": {"model": "gpt-realtime-whisper", "language": "en"},
        "turn_detection": None}}}}  # fmt: skip
    got = realtime(host, ana, [update, *appends(tone(2.5, 24_000)),
                               {"type": "input_audio_buffer.commit"}],
                   "conversation.item.input_audio_transcription.completed")  # fmt: skip
    kinds = [m["type"] for m in got]
    assert kinds[:2] == ["session.created", "session.updated"]
    assert got[1]["session"]["audio"]["input"]["turn_detection"] is None
    assert "input_audio_buffer.speech_stopped" not in kinds  # no server VAD
    deltas = "".join(m["delta"] for m in got if m["type"].endswith("transcription.delta"))
    assert deltas == got[-1]["transcript"] == "we ship friday."
    assert kinds[-2] == "input_audio_buffer.committed"
    assert got[-1]["usage"]["type"] == "duration"
    assert len({m["item_id"] for m in got if "item_id" in m}) == 1


def test_realtime_answers_what_it_cannot_take_and_goes_on(server: tuple[str, str, str]) -> None:
    host, ana, _ = server
    bad = [{"type": "response.create"}, {"type": "input_audio_buffer.append", "audio": "%%%"},
           {"type": "session.update", "session": {"audio": {"input": {"format": {
               "type": "audio/flac"}}}}},
           {"type": "input_audio_buffer.clear"}]  # fmt: skip
    got = realtime(host, ana, bad, "input_audio_buffer.cleared")
    errors = [m["error"] for m in got if m["type"] == "error"]
    assert [e["code"] for e in errors] == ["unknown_event", "invalid_audio", "invalid_format"]
    assert "response.create" in errors[0]["message"]


@pytest.mark.parametrize(
    "session",
    [{"audio": "pcm"}, {"audio": {"input": {"format": {"type": ["audio/pcm"]}}}},
     {"audio": {"input": {"turn_detection": {"silence_duration_ms": float("inf")}}}},
     {"audio": {"input": {"turn_detection": "server_vad"}}},
     {"audio": {"input": {"transcription": {"language": 7}}}}],
)  # fmt: skip
def test_a_malformed_session_update_is_an_error_event_and_the_session_goes_on(
    server: tuple[str, str, str], session: dict[str, Any]
) -> None:
    host, ana, _ = server
    events = [{"type": "session.update", "session": session}, {"type": "input_audio_buffer.clear"}]
    got = realtime(host, ana, events, "input_audio_buffer.cleared")
    errors = [m["error"]["code"] for m in got if m["type"] == "error"]
    assert errors in (["invalid_session"], ["invalid_format"], ["unsupported_language"])


def test_a_revoked_token_gets_no_more_realtime_transcripts(tmp_path: Path) -> None:
    """The token is checked before each committed word goes out: revoked mid-stream, the
    socket closes with 1008 and no delta follows."""
    from websockets.exceptions import ConnectionClosed

    from heard.store.users import revoke_tokens

    db = Database(f"sqlite:///{tmp_path / 'h.db'}")
    app = create_app(ServerSettings(db, tmp_path / "uploads", recognizers=scripted))
    _, token = add_user(db, "cy")
    got: list[dict[str, Any]] = []

    def stream(ws: Any) -> None:
        got.append(json.loads(ws.recv(timeout=10)))  # session.created
        revoke_tokens(db, "cy")
        for event in appends(tone(2.5, 24_000)):
            ws.send(json.dumps(event))
            time.sleep(0.005)
        ws.send(json.dumps({"type": "input_audio_buffer.commit"}))
        while True:
            got.append(json.loads(ws.recv(timeout=20)))

    try:
        with (
            serving(app) as there,
            connect(
                f"ws://{there}/v1/realtime", additional_headers={"Authorization": f"Bearer {token}"}
            ) as ws,
            pytest.raises(ConnectionClosed) as closed,
        ):
            stream(ws)
    finally:
        db.dispose()
    assert closed.value.rcvd is not None
    assert closed.value.rcvd.code == 1008
    assert got[0]["type"] == "session.created"
    assert not [m for m in got if m["type"].endswith("transcription.delta")]


def test_deepgram_prerecorded_errors_come_in_deepgrams_shape(server: tuple[str, str, str]) -> None:
    host, ana, _ = server
    with httpx.Client(base_url=f"http://{host}/v1", timeout=30) as http:
        nobody = http.post("/listen", content=b"x", headers={"Authorization": "Token nope"})
        junk = http.post("/listen", content=b"junk" * 100,
                         headers={"Authorization": f"Token {ana}"})  # fmt: skip
        summary = http.post("/listen?summarize=v2", content=b"x",
                            headers={"Authorization": f"Token {ana}"})  # fmt: skip
    assert nobody.status_code == 401
    assert nobody.json()["err_code"] == "INVALID_AUTH"
    assert junk.status_code == 400
    assert "cannot read as audio" in junk.json()["err_msg"]
    assert summary.status_code == 400
    assert "summarize" in summary.json()["err_msg"]


def test_deepgram_prerecorded_audio_over_the_longest_track_is_a_413(tmp_path: Path) -> None:
    """Issue 57: ``POST /v1/listen`` answered 400 for audio longer than a track may be, where
    the docs say 413."""
    db = Database(f"sqlite:///{tmp_path / 'h.db'}")
    app = create_app(ServerSettings(db, tmp_path / "uploads", transcriber=SlowTranscriber({}),
                                    max_track_s=1.0))  # fmt: skip
    _, ana = add_user(db, "ana")
    wav = io.BytesIO()
    with wave.open(wav, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16_000)
        w.writeframes(tone(2.0).tobytes())
    with TestClient(app) as client:
        answer = client.post("/v1/listen", content=wav.getvalue(),
                             headers={"Authorization": f"Token {ana}"})  # fmt: skip
    db.dispose()
    assert answer.status_code == 413
    assert answer.json()["err_code"] == "PAYLOAD_TOO_LARGE"
    assert "a track may hold at most 1 s" in answer.json()["err_msg"]
    assert str(tmp_path) not in answer.text


@pytest.mark.parametrize(
    ("path", "frame"),
    [("/v1/listen", '{"type": "\\ud800"}'),
     ("/v1/live", '{"type": "final", "t_ms": 0, "text": "\\ud800"}')],
)  # fmt: skip
def test_a_lone_surrogate_gets_a_close_frame(
    server: tuple[str, str, str], path: str, frame: str
) -> None:
    """A text no UTF-8 holds, quoted back in the close's reason, still closes with 1007 (issue
    45: /v1/listen sent no close frame, and the client saw 1006)."""
    from websockets.exceptions import ConnectionClosed

    host, ana, _ = server

    def answers(ws: Any) -> None:
        ws.send(frame)
        while True:
            ws.recv(timeout=10)

    with connect(f"ws://{host}{path}?token={ana}") as ws, pytest.raises(ConnectionClosed) as closed:
        answers(ws)
    assert closed.value.rcvd is not None
    assert closed.value.rcvd.code == 1007


def test_realtime_refuses_a_bad_key_in_openais_shape(server: tuple[str, str, str]) -> None:
    host, _, _ = server
    with pytest.raises(InvalidStatus) as refused:
        connect(f"ws://{host}/v1/realtime", additional_headers={"Authorization": "Bearer nope"})
    assert refused.value.response.status_code == 401
    body = json.loads(refused.value.response.body or b"{}")
    assert body["error"]["code"] == "invalid_api_key"


def test_three_files_at_once_on_one_key_are_all_transcribed(
    server: tuple[str, str, str], tmp_path: Path
) -> None:
    """What an SDK's client does on a busy machine: three requests at once with one key. They
    wait their turn (one runs at a time per core but one); none is refused."""
    host, ana, _ = server
    wav = tmp_path / "a.wav"
    import wave

    with wave.open(str(wav), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16_000)
        w.writeframes(tone(1.0).tobytes())
    statuses: list[int] = []

    def post() -> None:
        with httpx.Client(base_url=f"http://{host}/v1", timeout=30) as http:
            answer = http.post("/audio/transcriptions", headers={"Authorization": f"Bearer {ana}"},
                               data={"model": "gpt-4o-transcribe"},
                               files={"file": ("a.wav", wav.read_bytes())})  # fmt: skip
            statuses.append(answer.status_code)

    threads = [threading.Thread(target=post) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert statuses == [200, 200, 200]


def test_a_user_with_a_backlog_takes_turns_with_the_others() -> None:
    """A has four files waiting, B and C one each, sent after A's: each freed place goes to
    the user served longest ago, so A's backlog waits behind B and C."""
    queue = FairQueue(1, per_user=4, waiting=8)
    order: list[str] = []
    gate = threading.Event()

    def run(name: str) -> None:
        with queue.taken(name[0]):
            order.append(name)
            gate.wait(5)

    threads = []
    for name in ["a0", "a1", "a2", "a3", "a4", "b1", "c1"]:
        threads.append(threading.Thread(target=run, args=(name,)))
        threads[-1].start()
        time.sleep(0.05)
    gate.set()
    for thread in threads:
        thread.join(5)
    assert order == ["a0", "b1", "c1", "a1", "a2", "a3", "a4"]


def test_the_queue_serves_the_user_served_longest_ago_first() -> None:
    """User A has three files waiting; B sends one after them. When the place frees, B goes
    before A's second (A was served last); past the queue's bound, a 429 with Retry-After."""
    queue = FairQueue(1, per_user=2, waiting=4)
    order: list[str] = []
    gate = threading.Event()

    def run(owner: str) -> None:
        with queue.taken(owner):
            order.append(owner)
            gate.wait(5)

    first = threading.Thread(target=run, args=("a",))
    first.start()
    while not order:
        time.sleep(0.01)
    waiting = []
    for owner in ("a", "a", "b"):
        waiting.append(threading.Thread(target=run, args=(owner,)))
        waiting[-1].start()
        time.sleep(0.05)  # in this order
    with pytest.raises(BusyError, match="this user has 2 files waiting") as busy, queue.taken("a"):
        pass
    assert busy.value.retry_after_s > 0
    gate.set()
    for thread in [first, *waiting]:
        thread.join(5)
    assert order == ["a", "b", "a", "a"]
