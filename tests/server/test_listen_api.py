"""``/v1/listen`` (issue 31): Deepgram's live protocol, driven by the official ``deepgram-sdk``
live client against a real server on loopback, and by hand with what no SDK would send."""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import jiwer
import pytest
from deepgram import DeepgramClient
from deepgram.core.api_error import ApiError
from deepgram.environment import DeepgramClientEnvironment
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect

import heard.server.listen as listen_module
from heard.asr.audio import load_audio
from heard.server import quotas
from heard.server.app import ServerSettings, create_app
from heard.store.database import Database
from heard.store.users import add_user, revoke_tokens
from tests.conftest import AUDIO
from tests.reading import assert_hears, assert_reads
from tests.server.threaded import recognizing, serving

FRAME = 3200  # 100 ms of PCM16 at 16 kHz


def pcm(seconds_of_silence: float = 0.0, up_to_s: float | None = None) -> bytes:
    samples = load_audio(AUDIO / "jfk.flac")
    if up_to_s is not None:
        samples = samples[: int(up_to_s * 16_000)]
    audio = (samples * 32767).astype("<i2").tobytes()
    return audio + b"\x00\x00" * int(16_000 * seconds_of_silence)


def normalized(text: str) -> str:
    return " ".join(jiwer.RemovePunctuation()(text.lower()).split())


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    # the live socket only: no recognizer for files
    with recognizing(tmp_path_factory.mktemp("listen"), transcriber=None) as served:
        yield served


def deepgram(host: str, key: str) -> DeepgramClient:
    at = DeepgramClientEnvironment(
        base=f"http://{host}", production=f"ws://{host}", agent=f"ws://{host}",
        agent_rest=f"http://{host}",
    )  # fmt: skip
    return DeepgramClient(api_key=key, environment=at)


def stream(socket: Any, audio: bytes, then: list[str]) -> list[Any]:
    """Send ``audio`` at real-time pace in 100 ms frames, then the control messages ``then``;
    every message the server sent, in order."""
    got: list[Any] = []
    reader = threading.Thread(target=lambda: got.extend(iter(socket)))
    reader.start()
    started = time.monotonic()
    for i in range(0, len(audio), FRAME):
        socket.send_media(audio[i : i + FRAME])
        time.sleep(max(0.0, started + (i + FRAME) / 32_000 - time.monotonic()))
    for control in then:
        (socket.send_finalize if control == "Finalize" else socket.send_close_stream)()
    reader.join(60)
    assert not reader.is_alive(), "the server did not end the stream after CloseStream"
    return got


def of_type(messages: list[Any], kind: str) -> list[Any]:
    return [m for m in messages if getattr(m, "type", None) == kind]


@pytest.mark.asr
def test_the_deepgram_sdk_streams_jfk_and_gets_interim_and_final_results(
    server: tuple[str, str],
) -> None:
    host, token = server
    with deepgram(host, token).listen.v1.connect(
        model="nova-3", encoding="linear16", sample_rate=16000, channels=1,
        interim_results="true", punctuate="true", utterance_end_ms="1000", vad_events="true",
    ) as socket:  # fmt: skip
        messages = stream(socket, pcm(seconds_of_silence=2.0), ["CloseStream"])
    results = of_type(messages, "Results")
    interim = [r for r in results if not r.is_final]
    finals = [r for r in results if r.is_final]
    assert interim
    assert finals
    text = " ".join(r.channel.alternatives[0].transcript for r in finals)
    assert_reads(text)
    # one utterance (JFK's pause is under the 800 ms endpointing): one speech_final, at its end
    assert [r.speech_final for r in finals][-1] is True
    assert sum(bool(r.speech_final) for r in finals) == 1
    words = [w for r in finals for w in r.channel.alternatives[0].words]
    assert [w.word for w in words] == normalized(text).split()
    assert all(a.end <= b.start + 0.5 for a, b in itertools.pairwise(words))
    assert all(0 < w.confidence <= 1 for w in words)
    assert words[-1].end <= 11.5
    assert messages[0].type == "SpeechStarted"
    # after the last word; and perhaps in JFK's pause after "Americans" (about 1 s): once a
    # decode has heard a second past a word it is final, nothing is pending, and 1 s of
    # decoded audio with no word is the gap utterance_end_ms=1000 names
    *pauses, ended = of_type(messages, "UtteranceEnd")
    assert ended.last_word_end == pytest.approx(finals[-1].start + finals[-1].duration, abs=0.01)
    assert len(pauses) <= 1
    assert all(p.last_word_end < 4.0 for p in pauses), "only in the pause after Americans"
    assert messages[-1].type == "Metadata"
    assert messages[-1].duration == pytest.approx(13.0, abs=0.05)
    assert messages[-1].model_info[messages[-1].models[0]]["name"] == "nova-3"


@pytest.mark.asr
def test_finalize_flushes_what_was_said_so_far(server: tuple[str, str]) -> None:
    host, token = server
    with deepgram(host, token).listen.v1.connect(
        model="nova-3", encoding="linear16", sample_rate=16000, punctuate="false"
    ) as socket:
        messages = stream(socket, pcm(up_to_s=4.5), ["Finalize", "CloseStream"])
    results = of_type(messages, "Results")
    assert all(r.is_final for r in results)  # no interim_results asked for
    flushed = [r for r in results if r.from_finalize]
    assert flushed
    assert not any(r.speech_final for r in flushed)
    said = " ".join(r.channel.alternatives[0].transcript for r in results)
    assert said == said.lower()  # punctuate=false: Deepgram's lower case, no marks
    assert_hears(said, "and so my fellow americans")
    assert messages[-1].type == "Metadata"


def test_a_wrong_key_is_refused_as_deepgram_refuses_it(server: tuple[str, str]) -> None:
    host, _ = server
    # the SDK turns the 401 into its ApiError with websockets' legacy client, and lets the
    # new client's InvalidStatus through (its compat layer looks for the old name)
    with pytest.raises((ApiError, InvalidStatus)) as refused:  # noqa: SIM117 - raised on entering
        with deepgram(host, "not-a-token").listen.v1.connect(model="nova-3"):
            pass
    error = refused.value
    status = error.status_code if isinstance(error, ApiError) else error.response.status_code
    assert status == 401


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ("diarize=true", "diarize"),
        ("sample_rate=1000", "sample_rate"),
        ("encoding=speex", "encoding"),
        ("channels=9", "channels"),
        ("detect_entities=true", "detect_entities"),
        ("endpointing=soon", "endpointing"),
        ("interim_results=maybe", "interim_results"),
        ("language=es", "knows only English"),
    ],
)
def test_what_heard_cannot_honour_refuses_the_handshake_naming_it(
    server: tuple[str, str], query: str, named: str
) -> None:
    host, token = server
    with pytest.raises(InvalidStatus) as refused:
        connect(f"ws://{host}/v1/listen?{query}",
                additional_headers={"Authorization": f"Token {token}"})  # fmt: skip
    assert refused.value.response.status_code == 400
    assert named in json.loads(refused.value.response.body)["err_msg"]


@pytest.mark.parametrize(
    ("frame", "code"),
    [
        ('{"type": "Reconfigure"}', 1007),
        ('{"type": "' + "\U0001f600" * 40 + '"}', 1007),  # a reason too long for a close frame
        ("not json", 1007),
        (b"\x01\x02\x03", 1007),
        (b"\x00" * 70_000, 1009),
    ],
    ids=["unknown control", "an emoji control", "not JSON", "odd PCM", "oversize"],
)
def test_a_bad_frame_closes_with_its_reason(
    server: tuple[str, str], frame: str | bytes, code: int
) -> None:
    host, token = server
    with connect(f"ws://{host}/v1/listen", additional_headers={"Authorization": f"Token {token}"},
                 max_size=None) as ws:  # fmt: skip
        ws.send(frame)
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=30)
    assert closed.value.rcvd is not None
    assert closed.value.rcvd.code == code
    assert len(closed.value.rcvd.reason.encode()) <= 123


def test_keepalive_is_quiet_and_closestream_ends_with_metadata(server: tuple[str, str]) -> None:
    host, token = server
    subprotocol = ["token", token]  # a browser's way to send its key
    with connect(f"ws://{host}/v1/listen", subprotocols=subprotocol) as ws:  # type: ignore[arg-type]
        ws.send(json.dumps({"type": "KeepAlive"}))
        ws.send(json.dumps({"type": "CloseStream"}))
        metadata = json.loads(ws.recv(timeout=30))
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=30)
    assert metadata["type"] == "Metadata"
    assert metadata["duration"] == 0.0
    assert closed.value.rcvd is not None
    assert closed.value.rcvd.code == 1000


def test_listen_options_are_checked_before_any_audio() -> None:
    from heard.asr.whisper import WhisperOptions
    from heard.errors import InputError
    from heard.server.listen_options import parse_options

    options = parse_options({"language": "en-US", "endpointing": "false", "smart_format": "true",
                             "utterance_end_ms": "1500"}, WhisperOptions())  # fmt: skip
    assert options.language == "en"
    assert options.endpointing_ms > 3600_000  # never ends on silence alone
    assert options.utterance_end_ms == 1500
    # what Pipecat's Deepgram service sends by default: features off, a short endpointing
    pipecat = {"model": "nova-3-general", "language": "en", "encoding": "linear16",
               "sample_rate": "16000", "channels": "1", "interim_results": "true",
               "smart_format": "true", "punctuate": "true", "profanity_filter": "false",
               "vad_events": "false", "detect_entities": "false", "diarize": "false",
               "dictation": "false", "multichannel": "false", "endpointing": "25",
               "utterance_end_ms": "1000", "no_delay": "true"}  # fmt: skip
    taken = parse_options(pipecat, WhisperOptions())
    # a short endpointing never changes the decoding: the recognizer still waits 800 ms
    assert taken.endpointing_ms == 800
    assert parse_options({"endpointing": "2000"}, WhisperOptions()).endpointing_ms == 2000
    telephony = parse_options({"encoding": "mulaw", "sample_rate": "8000", "channels": "2"},
                              WhisperOptions())  # fmt: skip
    assert (telephony.encoding, telephony.sample_rate, telephony.channels) == ("mulaw", 8000, 2)
    assert parse_options({"encoding": "opus"}, WhisperOptions()).encoding == "container"
    assert parse_options({}, WhisperOptions()).encoding == "sniff"
    with pytest.raises(InputError, match="diarize"):
        parse_options({**pipecat, "diarize": "true"}, WhisperOptions())
    with pytest.raises(InputError, match="utterance_end_ms"):
        parse_options({"utterance_end_ms": "500"}, WhisperOptions())


class Captured:
    """A session that keeps what its codec sends."""

    def __init__(self) -> None:
        from heard.asr.whisper import WhisperOptions

        self.sent: list[dict[str, Any]] = []
        self.revoked = False
        self.params = {"model": "nova-3", "interim_results": "true", "punctuate": "true"}
        self.settings = SimpleNamespace(whisper=WhisperOptions())
        self.user = SimpleNamespace(name="ana")
        self.quota = SimpleNamespace(audio_x=2.0)

    def send(self, message: dict[str, Any]) -> None:
        self.sent.append(message)

    async def admit_final(self) -> bool:
        return True


@pytest.mark.asr
async def test_results_carry_exactly_heards_finals_and_their_words() -> None:
    """The protocol loses and changes nothing: JFK through heard's streaming recognizer in
    100 ms pieces, each decoded thing through /v1/listen's translation; the final Results'
    transcripts are heard's finals word for word (WER 0), their words heard's words."""
    from heard.asr.streaming import StreamOptions, WhisperStreamingRecognizer
    from heard.server.listen import DeepgramCodec

    samples = load_audio(AUDIO / "jfk.flac")
    recognizer = WhisperStreamingRecognizer(options=StreamOptions(word_timestamps=True))
    decoded = [
        d for i in range(0, len(samples), 1600) for d in recognizer.push(samples[i : i + 1600])
    ]
    decoded += recognizer.finish()
    socket = Captured()
    codec = DeepgramCodec(socket)  # type: ignore[arg-type]
    for d in decoded:
        await codec.channels[0].decoded(d)
    heard_finals = [d for d in decoded if d.kind.value == "final"]
    finals = [m for m in socket.sent if m["type"] == "Results" and m["is_final"]]
    said = " ".join(m["channel"]["alternatives"][0]["transcript"] for m in finals)
    assert said == " ".join(d.text for d in heard_finals)
    assert jiwer.wer(" ".join(d.text for d in heard_finals), said) == 0
    sent_words = [
        w["punctuated_word"] for m in finals for w in m["channel"]["alternatives"][0]["words"]
    ]
    assert sent_words == [w.text for d in heard_finals for w in d.words]
    assert [m["speech_final"] for m in finals] == [d.endpoint for d in heard_finals]
    interim = [m for m in socket.sent if m["type"] == "Results" and not m["is_final"]]
    assert len(interim) == sum(d.kind.value == "partial" for d in decoded)


def test_the_live_sockets_rate_limits_hold_here_too_and_are_shared(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Over /v1/live's audio limit on /v1/listen: closed with 1008, and the token is barred
    from both sockets for a while (one quota per token)."""
    monkeypatch.setattr(quotas, "AUDIO_BURST", 32_000)  # a second for each channel allowed
    db = Database(f"sqlite:///{tmp_path / 'h.db'}")
    app = create_app(ServerSettings(db, tmp_path / "uploads"))
    _, token = add_user(db, "ana")
    auth = {"Authorization": f"Token {token}"}
    try:
        with serving(app) as host:
            with connect(f"ws://{host}/v1/listen", additional_headers=auth) as ws:
                for _ in range(20):  # 1 s at a time, as fast as it goes, until closed
                    with contextlib.suppress(ConnectionClosed):
                        ws.send(b"\x00\x00" * 16_000)
                with pytest.raises(ConnectionClosed) as closed:
                    ws.recv(timeout=30)
            assert closed.value.rcvd is not None
            assert closed.value.rcvd.code == 1008
            with pytest.raises(InvalidStatus) as barred:
                connect(f"ws://{host}/v1/listen", additional_headers=auth)
            assert barred.value.response.status_code == 429
            with pytest.raises(InvalidStatus) as live_barred:  # the same token on /v1/live
                connect(f"ws://{host}/v1/live?token={token}")
            assert live_barred.value.response.status_code == 403
    finally:
        db.dispose()


def test_a_quiet_connection_is_closed_as_deepgram_closes_it(
    server: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(listen_module, "IDLE_S", 0.5)
    host, token = server
    with (
        connect(
            f"ws://{host}/v1/listen", additional_headers={"Authorization": f"Token {token}"}
        ) as ws,
        pytest.raises(ConnectionClosed) as closed,
    ):
        ws.recv(timeout=30)
    assert closed.value.rcvd is not None
    assert (closed.value.rcvd.code, closed.value.rcvd.reason[:8]) == (1011, "NET-0001")


def test_an_empty_binary_frame_closes_the_stream(server: tuple[str, str]) -> None:
    host, token = server
    with connect(
        f"ws://{host}/v1/listen", additional_headers={"Authorization": f"Token {token}"}
    ) as ws:
        ws.send(b"")
        assert json.loads(ws.recv(timeout=30))["type"] == "Metadata"
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=30)
    assert closed.value.rcvd is not None
    assert closed.value.rcvd.code == 1000


@pytest.mark.asr
def test_a_revoked_token_gets_no_more_finals(tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path / 'h.db'}")
    app = create_app(ServerSettings(db, tmp_path / "uploads"))
    _, token = add_user(db, "ana")
    auth = {"Authorization": f"Token {token}"}
    try:
        with serving(app) as host, connect(f"ws://{host}/v1/listen?interim_results=true",
                                           additional_headers=auth) as ws:  # fmt: skip
            revoke_tokens(db, "ana", token)
            audio = pcm(seconds_of_silence=1.5, up_to_s=4.5)
            got: list[dict[str, Any]] = []
            with pytest.raises(ConnectionClosed) as closed:  # noqa: PT012 - until it closes
                for i in range(0, len(audio), FRAME):
                    ws.send(audio[i : i + FRAME])
                    time.sleep(0.05)
                    with contextlib.suppress(TimeoutError):
                        got.append(json.loads(ws.recv(timeout=0)))
                while True:
                    got.append(json.loads(ws.recv(timeout=30)))
    finally:
        db.dispose()
    assert closed.value.rcvd is not None
    assert (closed.value.rcvd.code, closed.value.rcvd.reason) == (1008, "the token was revoked")
    assert not [m for m in got if m.get("type") == "Results" and m["is_final"]]


def test_configure_is_answered_and_the_stream_goes_on(server: tuple[str, str]) -> None:
    host, token = server
    auth = {"Authorization": f"Token {token}"}
    with connect(f"ws://{host}/v1/listen", additional_headers=auth) as ws:
        ws.send(json.dumps({"type": "Configure", "keyterms": ["Lisbon"]}))
        answer = json.loads(ws.recv(timeout=30))
        ws.send(json.dumps({"type": "CloseStream"}))
        assert json.loads(ws.recv(timeout=30))["type"] == "Metadata"
    assert answer["type"] == "ConfigureFailure"
    assert answer["code"] == "CONFIGURE_KEYTERMS_NOT_SUPPORTED"


def test_a_client_that_vanishes_frees_its_microphone(server: tuple[str, str]) -> None:
    """Cut off mid-stream (no close frame): the connection's microphone is closed."""
    host, token = server
    before = set(listen_module.LISTENING)
    address, port = host.split(":")
    raw = socket.create_connection((address, int(port)))
    key = base64.b64encode(os.urandom(16)).decode()
    raw.sendall(
        f"GET /v1/listen HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\n"
        f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
        f"Authorization: Token {token}\r\n\r\n".encode()
    )
    assert raw.recv(12) == b"HTTP/1.1 101"
    deadline = time.monotonic() + 10
    while before == listen_module.LISTENING and time.monotonic() < deadline:
        time.sleep(0.05)
    opened = listen_module.LISTENING - before
    assert opened  # the connection is open, with its microphone
    raw.close()  # gone, without a word
    deadline = time.monotonic() + 20
    while listen_module.LISTENING & opened and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not listen_module.LISTENING & opened
