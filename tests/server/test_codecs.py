"""The live sockets' protocols without a model (issue 41): the server's recognizers are
``heard.testing.ScriptedRecognizer`` (``ServerSettings.recognizers``), so what is checked is
the codec's side: audio formats in (containers, several channels), the Realtime session's
events, and the REST queue that serves every request of one key instead of refusing two."""

from __future__ import annotations

import base64
import io
import itertools
import json
import threading
import time
import wave
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import av
import httpx
import numpy as np
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from heard.asr.audio import load_audio
from heard.asr.incoming import is_container, mulaw_to_pcm16
from heard.asr.microphone import RecognizerFactory
from heard.asr.streaming import SpareRule, StreamOptions
from heard.asr.whisper import WhisperOptions
from heard.errors import BusyError, InputError, SocketCloseError
from heard.server.app import ServerSettings, create_app
from heard.server.listen import DeepgramCodec
from heard.server.quotas import FairQueue, Quota
from heard.server.session import CLOSE_POLICY, Session
from heard.server.state import state_of
from heard.speech import Segment, Transcription, Word
from heard.store.database import Database
from heard.store.users import LOCAL_USER, add_user
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


def encoded(
    samples: np.ndarray,
    form: str,
    codec: str,
    codec_rate: int,
    frame_samples: int,
    rate: int,
    options: dict[str, str] | None = None,
) -> bytes:
    """Mono ``samples`` at ``rate`` encoded with ``codec`` into a ``form`` file, in memory."""
    out = io.BytesIO()
    with av.open(out, "w", format=form, options=options or {}) as container:
        stream = container.add_stream(codec, rate=codec_rate)
        stream.layout = "mono"
        for i in range(0, len(samples), frame_samples):
            frame = av.AudioFrame.from_ndarray(samples[i : i + frame_samples].reshape(1, -1),
                                               format="s16", layout="mono")  # fmt: skip
            frame.sample_rate = rate
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
    return out.getvalue()


def ogg_opus(samples: np.ndarray, rate: int = 16_000) -> bytes:
    """``samples`` in an Ogg Opus file, as a browser's MediaRecorder or Deepgram's opus
    clients send it."""
    return encoded(samples, "ogg", "libopus", 48_000, 960, rate)


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


def completed(
    app: FastAPI, db: Database, token: str, events: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """``events`` on a Realtime socket of ``app`` (served until then) up to the completed
    transcript of the item they make; ``db`` is closed after."""
    try:
        with serving(app) as host:
            return realtime(
                host, token, events, "conversation.item.input_audio_transcription.completed"
            )
    finally:
        db.dispose()


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


class Clock:
    """The token's quota clock, moved by the test: no test waits on real time."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def listening(channels: int, quota: Quota) -> DeepgramCodec:
    """A ``/v1/listen`` codec on a session of its own (no socket): linear16 at 16 kHz with
    ``channels`` interleaved, the token's quota ``quota``."""
    websocket = SimpleNamespace(query_params={"encoding": "linear16", "sample_rate": "16000",
                                              "channels": str(channels)})  # fmt: skip
    settings = SimpleNamespace(whisper=WhisperOptions(), recognizers=scripted,
                               live_recognizers=scripted)  # fmt: skip
    session = Session(websocket, LOCAL_USER, "", settings, quota)  # type: ignore[arg-type]
    return DeepgramCodec(session)


async def stream_for(codec: DeepgramCodec, clock: Clock, seconds: float, pace: float) -> None:
    """``seconds`` of the codec's channels in 100 ms frames, the clock moving ``pace`` times
    slower than the audio (1: real time)."""
    frame = np.repeat(tone(0.1), codec.options.channels).astype("<i2").tobytes()
    try:
        for _ in range(round(seconds * 10)):
            clock.now += 0.1 / pace
            await codec.audio(frame)
    finally:
        await codec.close()


@pytest.mark.parametrize("channels", [1, 2, 4, 8])
async def test_a_stream_of_up_to_8_channels_at_real_time_passes_with_an_allowance_of_as_many(
    channels: int,
) -> None:
    """Issue 57: the 8 channels the docs promise pass at real time, given a token allowed 8
    channels (``HEARD_LIVE_AUDIO_X``)."""
    clock = Clock()
    await stream_for(listening(channels, Quota(clock, audio_x=channels)), clock, 60, pace=1)


async def test_a_stream_is_charged_for_each_of_its_channels() -> None:
    """Issue 71: an 8-channel stream was charged as one: one token's socket at twice real time
    delayed another user's finals by 13.9 s, when the same audio as 8 mono sockets was refused.
    Each channel now counts: at the default allowance (2 channels at real time) a stereo
    stream at 1.5x real time is closed where a mono one passes, and a stream of more channels
    than the allowance is refused before it starts, naming the setting."""
    clock = Clock()
    await stream_for(listening(1, Quota(clock)), clock, seconds=60, pace=1.5)
    with pytest.raises(SocketCloseError) as closed:
        await stream_for(listening(2, Quota(clock)), clock, seconds=60, pace=1.5)
    assert closed.value.code == CLOSE_POLICY
    assert "2 channels of audio at real time" in closed.value.reason
    with pytest.raises(InputError, match="HEARD_LIVE_AUDIO_X"):
        listening(8, Quota(clock))


@pytest.mark.parametrize("channels", [1, 8])
async def test_a_stream_faster_than_the_limit_is_closed_whatever_its_channels(
    channels: int,
) -> None:
    clock = Clock()
    with pytest.raises(SocketCloseError) as closed:
        await stream_for(listening(channels, Quota(clock, audio_x=channels)), clock, 60, pace=3)
    assert closed.value.code == CLOSE_POLICY
    assert "rate limit" in closed.value.reason


class ToneTranscriber(FakeTranscriber):
    """Says which tone it hears (the loudest frequency, in Hz) in the channel it is given,
    decoded by heard's own ``load_audio``, as the real recognizer decodes it."""

    def transcribe(
        self, audio: Any, *, channel: int | None = None, **options: Any
    ) -> Transcription:
        samples = load_audio(audio, channel)
        hz = round(np.argmax(np.abs(np.fft.rfft(samples))) * 16_000 / len(samples))
        return Transcription((Segment(0.0, 1.0, f"{hz} hz"),), "en")


def test_deepgram_prerecorded_multichannel_transcribes_every_channel(tmp_path: Path) -> None:
    """Issue 57: a 4-channel file with ``multichannel=true`` was a 400 ("channel must be 0
    (left) or 1 (right)"). Each channel is now transcribed from that channel alone."""
    db = Database(f"sqlite:///{tmp_path / 'h.db'}")
    app = create_app(ServerSettings(db, tmp_path / "uploads", transcriber=ToneTranscriber({})))
    _, ana = add_user(db, "ana")
    hz = [200, 300, 500, 700]
    t = np.arange(16_000) / 16_000
    four = np.stack([np.sin(2 * np.pi * f * t) * 8000 for f in hz], axis=1).astype("<i2")
    wav = io.BytesIO()
    with wave.open(wav, "wb") as w:
        w.setnchannels(4)
        w.setsampwidth(2)
        w.setframerate(16_000)
        w.writeframes(four.tobytes())
    with TestClient(app) as client:
        answer = client.post("/v1/listen?multichannel=true", content=wav.getvalue(),
                             headers={"Authorization": f"Token {ana}"})  # fmt: skip
    db.dispose()
    assert answer.status_code == 200, answer.text
    body = answer.json()
    heard = [c["alternatives"][0]["transcript"] for c in body["results"]["channels"]]
    assert heard == [f"{f} hz" for f in hz]
    assert body["metadata"]["channels"] == 4


class Recording(ScriptedRecognizer):
    """A scripted recognizer that keeps the audio it is given (16 kHz floats)."""

    def __init__(self, kept: list[np.ndarray]) -> None:
        super().__init__(SAID)
        self.kept = kept

    def push(self, samples: Any) -> list[Any]:
        self.kept.append(np.asarray(samples))
        return super().push(samples)


def to_mulaw(samples: np.ndarray) -> np.ndarray:
    """PCM16 as G.711 mu-law codes (the code whose sound is nearest each sample)."""
    sounds = mulaw_to_pcm16(bytes(range(256))).astype(np.int32)
    nearest = np.abs(samples.astype(np.int32)[:, None] - sounds[None, :]).argmin(axis=1)
    codes: np.ndarray = nearest.astype(np.uint8)
    return codes


def test_realtime_format_changed_mid_item_reads_the_audio_after_it_so(tmp_path: Path) -> None:
    """Issue 57: ``session.update`` to ``audio/pcmu`` after audio had started answered
    ``session.updated`` with pcmu and went on reading PCM16 (a garbage transcript). The audio
    appended after the update is now read as mu-law: the recognizer hears the same tone, as
    long as it was sent, after the switch as before it."""
    kept: list[np.ndarray] = []

    def recording(whisper: WhisperOptions, stream: StreamOptions | None) -> RecognizerFactory:
        return lambda speaker: Recording(kept)

    db = Database(f"sqlite:///{tmp_path / 'h.db'}")
    app = create_app(ServerSettings(db, tmp_path / "uploads", recognizers=recording))
    _, ana = add_user(db, "ana")
    pcm = {"type": "session.update", "session": {"type": "transcription", "audio": {"input": {
        "format": {"type": "audio/pcm", "rate": 24000}, "turn_detection": None}}}}  # fmt: skip
    pcmu = {"type": "session.update", "session": {"type": "transcription", "audio": {"input": {
        "format": {"type": "audio/pcmu"}}}}}  # fmt: skip
    events = [pcm, *appends(tone(1.0, 24_000)), pcmu, *appends(to_mulaw(tone(1.0, 8000)), 8000),
              {"type": "input_audio_buffer.commit"}]  # fmt: skip
    got = completed(app, db, ana, events)
    updated = [m for m in got if m["type"] == "session.updated"]
    assert updated[-1]["session"]["audio"]["input"]["format"]["type"] == "audio/pcmu"
    assert got[-1]["usage"]["seconds"] == pytest.approx(2.0, abs=0.02)
    heard = np.concatenate(kept)
    after = heard[-8000:]  # the last half second: mu-law only
    assert np.argmax(np.abs(np.fft.rfft(after))) * 16_000 / len(after) == pytest.approx(220, abs=4)
    rms = float(np.sqrt(np.mean(after**2)))
    assert rms == pytest.approx(8000 / np.sqrt(2) / 32768, rel=0.05)


def untagged_mp3(samples: np.ndarray, rate: int = 16_000) -> bytes:
    """``samples`` as MP3 frames with no ID3 tag before them (as a phone or an encoder piping
    LAME's output sends them): the stream starts with a frame sync, 0xFF 0xF3 here."""
    data = encoded(samples, "mp3", "libmp3lame", rate, 1152, rate, {"id3v2_version": "0"})
    assert data[0] == 0xFF
    assert (data[1] & 0xE0) == 0xE0
    assert not data.startswith(b"ID3")
    return data


def test_an_mp3_stream_without_an_id3_tag_is_decoded_as_mp3(server: tuple[str, str, str]) -> None:
    """Issue 57: with no encoding given, MP3 frames with no ID3 tag first were read as raw
    PCM16 (a fifth of a second of noise for 2 s of speech). Declared linear16 is never
    sniffed: the same bytes sent as ``encoding=linear16`` are PCM, as the client says."""
    host, ana, _ = server
    data = untagged_mp3(tone(2.0))
    got = listen(host, ana, "model=nova-3", [data[i : i + 1024] for i in range(0, len(data), 1024)])
    assert finals(got) == "we ship friday."
    assert got[-1]["duration"] == pytest.approx(2.0, abs=0.05)
    raw = listen(host, ana, "encoding=linear16&sample_rate=16000", [data])
    assert raw[-1]["duration"] == pytest.approx(len(data) / 32_000, abs=0.001)


def test_pcm_that_starts_like_an_mp3_frame_is_still_pcm() -> None:
    """A frame sync alone does not make MP3: raw PCM16 may start with 0xFF 0xFB (a sample of
    -1025) and even a whole valid header; MP3 has the next header where the frame ends."""
    mp3 = untagged_mp3(tone(2.0))
    rng = np.random.default_rng(7)
    speech = (rng.normal(0, 3000, 16_000)).astype("<i2").tobytes()
    one_header = mp3[:4] + speech  # a valid header, then no second one where it says
    assert is_container(mp3)
    assert is_container(mp3[:100])  # a first piece shorter than the first frame
    assert is_container(b"ID3\x04" + mp3)
    assert is_container(ogg_opus(tone(0.5)))
    assert not is_container(b"\xff\xfb" + speech)
    assert not is_container(one_header)
    assert not is_container(b"\xff\xff\xff\xff" + speech)  # -1, -1: no valid header
    assert not is_container(speech)


def test_the_servers_spare_rule_reaches_every_live_protocols_streams(tmp_path: Path) -> None:
    """Issue 58: ``heard serve --spare-cpu wide`` lets live streams spend idle CPU on their
    reading. Each socket (Deepgram's, OpenAI's Realtime, heard's own) makes its streams with
    the server's rule, beside the options the protocol asked for."""
    asked: list[StreamOptions | None] = []

    def recording(whisper: WhisperOptions, stream: StreamOptions | None) -> RecognizerFactory:
        asked.append(stream)
        return lambda speaker: ScriptedRecognizer(SAID)

    db = Database(f"sqlite:///{tmp_path / 'h.db'}")
    settings = ServerSettings(db, tmp_path / "uploads", recognizers=recording,
                              spare=SpareRule.wide())  # fmt: skip
    app = create_app(settings)
    _, ana = add_user(db, "ana")
    update = {"type": "session.update", "session": {"type": "transcription", "audio": {"input": {
        "format": {"type": "audio/pcm", "rate": 24000}, "turn_detection": None}}}}  # fmt: skip
    try:
        with serving(app) as host:
            listen(host, ana, "encoding=linear16&sample_rate=16000", [tone(0.5).tobytes()])
            realtime(host, ana, [update, *appends(tone(0.5, 24_000)),
                                 {"type": "input_audio_buffer.commit"}],
                     "conversation.item.input_audio_transcription.completed")  # fmt: skip
            with connect(f"ws://{host}/v1/live?token={ana}") as ws:
                ws.send(tone(0.5).tobytes())
                assert json.loads(ws.recv(timeout=20))["type"] == "audio"  # heard it
    finally:
        db.dispose()
    assert len(asked) == 3
    assert [s.spare if s else None for s in asked] == [SpareRule.wide()] * 3
    deepgram = asked[0]
    assert deepgram is not None
    assert deepgram.word_timestamps, "Deepgram's own options are kept"


@pytest.mark.asr
def test_realtime_language_changed_mid_item_reads_the_audio_after_it_in_that_language(
    tmp_path: Path,
) -> None:
    """Issue 71: ``session.update`` to another language after audio had started answered
    ``session.updated`` with it and went on reading the first one. The audio appended after
    the update now goes to a recognizer for the new language; what came before stays with the
    first, whose words the item keeps."""
    heard: list[tuple[str | None, list[np.ndarray]]] = []

    def recording(whisper: WhisperOptions, stream: StreamOptions | None) -> RecognizerFactory:
        kept: list[np.ndarray] = []
        heard.append((whisper.language, kept))
        return lambda speaker: Recording(kept)

    db = Database(f"sqlite:///{tmp_path / 'h.db'}")
    settings = ServerSettings(db, tmp_path / "uploads", recognizers=recording,
                              whisper=WhisperOptions(model="base"))  # fmt: skip
    app = create_app(settings)
    _, ana = add_user(db, "ana")

    def update(language: str) -> dict[str, Any]:
        asked = {"transcription": {"language": language}, "turn_detection": None}
        return {"type": "session.update",
                "session": {"type": "transcription", "audio": {"input": asked}}}  # fmt: skip

    events = [update("en"), *appends(tone(1.0, 24_000)), update("es"),
              *appends(tone(0.5, 24_000)), {"type": "input_audio_buffer.commit"}]  # fmt: skip
    got = completed(app, db, ana, events)
    updated = [m for m in got if m["type"] == "session.updated"]
    assert updated[-1]["session"]["audio"]["input"]["transcription"]["language"] == "es"
    assert [language for language, _ in heard] == ["en", "es"]
    seconds = [sum(len(a) for a in kept) / 16_000 for _, kept in heard]
    assert seconds == [pytest.approx(1.0, abs=0.02), pytest.approx(0.5, abs=0.02)]
    assert got[-1]["transcript"], "the words before the change are in the item"
    assert got[-1]["usage"]["seconds"] == pytest.approx(1.5, abs=0.02)


# -- OpenAI Realtime: every committed word in one item, once (issue 73) --------------------


def _realtime(silence_ms: int | None) -> tuple[Any, list[dict[str, Any]]]:
    from heard.server.realtime import SERVER_VAD, RealtimeCodec, _Item

    sent: list[dict[str, Any]] = []
    codec = RealtimeCodec.__new__(RealtimeCodec)
    codec.session = SimpleNamespace(send=sent.append)  # type: ignore[assignment]
    vad = {**SERVER_VAD, "silence_duration_ms": silence_ms}
    codec.turn_detection = None if silence_ms is None else vad
    codec.item, codec.pending, codec.events, codec.id = _Item(None), (), 0, "sess_0123456789"
    codec.received = 0
    return codec, sent


@settings(max_examples=300, deadline=None)
@given(
    steps=st.lists(st.tuples(st.sampled_from(["partial", "final", "endpoint", "decoded-to"]),
                             st.lists(st.floats(0.05, 1.5), max_size=4)), max_size=20),
    silence_ms=st.sampled_from([None, 0, 350, 800]),
)  # fmt: skip
def test_realtime_items_hold_every_committed_word_once(
    steps: list[tuple[str, list[float]]], silence_ms: int | None
) -> None:
    """Whatever the decode steps and the pauses between words, the completed items and the
    one still open hold every committed word once, in order; each item's deltas make up its
    transcript; no item completes twice; with server VAD, an item never spans a pause at
    least the session's silence long."""
    import asyncio

    from heard.transcript.events import EventKind
    from heard.transcript.utterances import Decoded

    codec, sent = _realtime(silence_ms)
    committed: list[str] = []
    times: dict[str, tuple[float, float]] = {}
    t, n = 0.0, 0

    async def run() -> None:
        nonlocal t, n
        for kind, gaps in steps:
            if kind == "decoded-to":
                codec._after_pause(t + sum(gaps))
                continue
            words = []
            for gap in gaps:
                t += gap
                words.append(Word(t, t + 0.2, f"w{n}"))
                t += 0.2
                n += 1
            if kind != "partial":
                committed.extend(w.text for w in words)
                times.update({w.text: (w.start, w.end) for w in words})
            else:
                n -= len(words)  # a partial's words are said again when committed
                t -= sum(gaps) + 0.2 * len(words)
            kind_of = EventKind.PARTIAL if kind == "partial" else EventKind.FINAL
            start, end = (words[0].start, words[-1].end) if words else (t, t)
            text = " ".join(w.text for w in words)
            await codec.decoded(Decoded(kind_of, text, start, end, tuple(words),
                                        endpoint=kind == "endpoint"))  # fmt: skip

    asyncio.run(run())
    completed = [m for m in sent if m["type"].endswith("transcription.completed")]
    items = [m["item_id"] for m in completed]
    assert len(items) == len(set(items))
    held = " ".join([m["transcript"] for m in completed] + [" ".join(codec.item.words)]).split()
    assert held == committed
    for m in completed:
        deltas = [d["delta"] for d in sent if d["type"].endswith("transcription.delta")
                  and d["item_id"] == m["item_id"]]  # fmt: skip
        assert "".join(deltas) == m["transcript"]
        said = m["transcript"].split()
        for a, b in itertools.pairwise(said):
            assert silence_ms is None or times[b][0] - times[a][1] < max(silence_ms, 200) / 1000
