"""Home Assistant's Wyoming protocol (issue 73), driven by the ``wyoming`` package's own
``AsyncTcpClient`` on its defaults, as Home Assistant's integration drives it: ``describe``,
then ``transcribe``, ``audio-start``, 16-bit chunks and ``audio-stop``."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import numpy as np
import pytest
from wyoming.asr import Transcribe, Transcript, TranscriptChunk, TranscriptStart, TranscriptStop
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncTcpClient
from wyoming.error import Error
from wyoming.event import Event
from wyoming.info import Describe, Info

from heard.asr.audio import load_audio
from heard.server.protocols import wyoming as protocol
from heard.server.protocols.wyoming import WyomingServer, local_peer
from heard.speech import Segment, Transcription
from heard.testing import FakeTranscriber
from tests.conftest import AUDIO
from tests.reading import assert_reads
from tests.server.threaded import free_port

CHUNK = 1024
"""Samples per audio-chunk, as Home Assistant's Wyoming client sends them."""


def pcm(rate: int = 16_000, channels: int = 1) -> bytes:
    samples = load_audio(AUDIO / "jfk.flac")
    if rate != 16_000:
        samples = np.interp(np.arange(0, len(samples), 16_000 / rate), np.arange(len(samples)),
                            samples)  # fmt: skip
    ints = (np.clip(samples, -1, 1) * 32767).astype("<i2")
    return np.repeat(ints, channels).tobytes()


async def utterance(client: AsyncTcpClient, audio: bytes, rate: int = 16_000,
                    channels: int = 1, language: str | None = "en") -> list[Event]:  # fmt: skip
    """One utterance as Home Assistant sends it; every event until ``transcript-stop`` (or an
    error, or the end of the connection)."""
    await client.write_event(Transcribe(language=language).event())
    await client.write_event(AudioStart(rate=rate, width=2, channels=channels).event())
    step = CHUNK * 2 * channels
    for at in range(0, len(audio), step):
        chunk = AudioChunk(rate=rate, width=2, channels=channels, audio=audio[at : at + step])
        await client.write_event(chunk.event())
    await client.write_event(AudioStop().event())
    return await answers(client)


async def answers(client: AsyncTcpClient) -> list[Event]:
    """Every event up to the utterance's end: ``transcript-stop``, or a ``transcript`` with no
    ``transcript-start`` before it (an utterance refused), or the connection's end."""
    got: list[Event] = []
    while (event := await asyncio.wait_for(client.read_event(), 120)) is not None:
        got.append(event)
        started = any(TranscriptStart.is_type(e.type) for e in got)
        if TranscriptStop.is_type(event.type) or (Transcript.is_type(event.type) and not started):
            break
    return got


@contextmanager
def heard_wyoming(*args: str) -> Iterator[int]:
    """``heard wyoming`` as a user starts it, in a process of its own; its port."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "heard", "wyoming", "--port", str(port), *args],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=dict(os.environ),
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while True:
            assert process.poll() is None, process.communicate()[0]
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert time.monotonic() < deadline, "heard wyoming did not listen"
            time.sleep(0.2)
        yield port
    finally:
        process.terminate()
        process.communicate(timeout=20)


@pytest.mark.asr
def test_home_assistants_client_hears_jfk_through_heard_wyoming() -> None:
    """The real command, the real model: describe shows heard's ASR with its model and
    streaming; an utterance comes back as transcript-start, a chunk per segment, the whole
    transcript, transcript-stop, and the chunks make up the transcript."""

    async def run(port: int) -> tuple[Info, list[Event]]:
        async with AsyncTcpClient("127.0.0.1", port) as client:
            await client.write_event(Describe().event())
            info = Info.from_event(await client.read_event())  # type: ignore[arg-type]
            return info, await utterance(client, pcm())

    with heard_wyoming() as port:
        info, events = asyncio.run(run(port))
    (program,) = info.asr
    assert program.name == "heard"
    assert program.supports_transcript_streaming
    assert [m.name for m in program.models] == ["tiny.en"]
    assert program.models[0].languages == ["en"]
    kinds = [e.type for e in events]
    assert kinds[0] == "transcript-start"
    assert kinds[-2:] == ["transcript", "transcript-stop"]
    assert set(kinds[1:-2]) == {"transcript-chunk"}
    transcript = Transcript.from_event(events[-2])
    assert_reads(transcript.text)
    assert transcript.language == "en"
    chunks = "".join(TranscriptChunk.from_event(e).text for e in events[1:-2])
    assert chunks == transcript.text


# -- the protocol's edges, on a fake recognizer --------------------------------------------


@asynccontextmanager
async def served(fake: Any, **options: Any) -> AsyncIterator[int]:
    server = WyomingServer(fake, model="tiny.en", languages=["en"], **options)
    listening = await server.serve("127.0.0.1", 0)
    try:
        yield listening.sockets[0].getsockname()[1]
    finally:
        listening.close()
        await listening.wait_closed()


class Heard(FakeTranscriber):
    """Says "ask not" in two segments, and keeps the audio it was given."""

    def __init__(self) -> None:
        super().__init__({"*": Transcription((Segment(0.0, 1.0, "ask not"),
                                              Segment(1.0, 2.0, "what"),), "en")})  # fmt: skip
        self.audio: list[Any] = []

    def segments(self, audio: Any, **options: Any) -> Any:
        self.audio.append(audio)
        return super().segments("*", **options)


async def test_telephone_stereo_audio_is_heard_as_16_khz_mono() -> None:
    fake = Heard()
    async with served(fake) as port, AsyncTcpClient("127.0.0.1", port) as client:
        events = await utterance(client, pcm(rate=8000, channels=2), rate=8000, channels=2)
    assert Transcript.from_event(events[-2]).text == "ask not what"
    (samples,) = fake.audio
    assert samples.dtype == np.float32
    assert abs(len(samples) / 16_000 - len(pcm()) / 2 / 16_000) < 0.05  # 11 s at 16 kHz, mono
    assert [e.type for e in events[:1]] == ["transcript-start"]
    assert TranscriptStart.is_type(events[0].type)


async def test_two_utterances_on_one_connection() -> None:
    async with served(Heard()) as port, AsyncTcpClient("127.0.0.1", port) as client:
        first = await utterance(client, pcm())
        second = await utterance(client, pcm())
    assert Transcript.from_event(first[-2]).text == Transcript.from_event(second[-2]).text


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        (b"not json\n", "not JSON"),
        (b'{"data": {}}\n', "'type'"),
        (b'{"type": "audio-chunk", "payload_length": 99999999}\n', "payload up to"),
        (b'{"type": "audio-start", "data": {"rate": 16000, "width": 4, "channels": 1}}\n',
         "width 2"),
        (b'{"type": "audio-start", "data": {"rate": 4000, "width": 2, "channels": 1}}\n',
         "sample_rate"),
        (b"x" * (protocol.MAX_LINE_BYTES + 10) + b"\n", "over"),
    ],
)  # fmt: skip
async def test_what_cannot_be_read_is_an_error_event_naming_it_then_the_end(
    raw: bytes, says: str
) -> None:
    async with served(Heard()) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(raw)
        await writer.drain()
        client = AsyncTcpClient("127.0.0.1", port)
        client._reader, client._writer = reader, writer
        event = await asyncio.wait_for(client.read_event(), 10)
        assert event is not None
        assert Error.is_type(event.type)
        assert says in Error.from_event(event).text
        assert await asyncio.wait_for(reader.read(), 10) == b""  # closed
        writer.close()


async def test_an_utterance_past_its_limit_is_refused_and_the_next_heard(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(protocol, "MAX_UTTERANCE_S", 5.0)
    fake = Heard()
    async with served(fake) as port, AsyncTcpClient("127.0.0.1", port) as client:
        refused = await utterance(client, pcm())
        heard = await utterance(client, pcm()[: 4 * 32_000])
    assert [e.type for e in refused] == ["error", "transcript"]
    assert "at most 5 s" in Error.from_event(refused[0]).text
    assert Transcript.from_event(refused[1]).text == ""  # what Home Assistant waits for
    assert Transcript.from_event(heard[-2]).text == "ask not what"
    assert len(fake.audio) == 1
    assert len(fake.audio[0]) == 4 * 16_000


async def test_a_language_the_model_cannot_take_is_an_error_event() -> None:
    from heard.errors import ModelError

    class EnglishOnly(FakeTranscriber):
        def segments(self, audio: Any, *, language: str | None = None, **options: Any) -> Any:
            if language == "de":
                self.languages.append(language)
                raise ModelError("model 'tiny.en' knows only English, not 'de'")
            return super().segments("*", language=language, **options)

    fake = EnglishOnly({"*": [Segment(0.0, 1.0, "ask not")]})
    async with served(fake) as port, AsyncTcpClient("127.0.0.1", port) as client:
        events = await utterance(client, pcm(), language="de")
        after = await utterance(client, pcm(), language=None)  # the language was that one's
    assert [e.type for e in events] == ["transcript-start", "error", "transcript",
                                        "transcript-stop"]  # fmt: skip
    assert "not 'de'" in Error.from_event(events[1]).text
    assert Transcript.from_event(events[2]).text == ""
    assert fake.languages == ["de", None]
    assert Transcript.from_event(after[-2]).text == "ask not"


async def test_a_public_address_is_refused_unless_anyone_may_connect(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(protocol, "local_peer", lambda address: False)
    async with served(Heard()) as port, AsyncTcpClient("127.0.0.1", port) as client:
        event = await asyncio.wait_for(client.read_event(), 10)
    assert event is not None
    assert "local networks only" in Error.from_event(event).text
    async with served(Heard(), anyone=True) as port, AsyncTcpClient("127.0.0.1", port) as c:
        events = await utterance(c, pcm())
    assert Transcript.from_event(events[-2]).text == "ask not what"


@pytest.mark.parametrize(
    ("address", "local"),
    [("127.0.0.1", True), ("::1", True), ("192.168.1.20", True), ("10.0.0.5", True),
     ("172.16.3.4", True), ("fe80::1%eth0", True), ("fd00::5", True),
     ("::ffff:192.168.1.2", True), ("8.8.8.8", False), ("2001:4860::8888", False),
     ("::ffff:8.8.8.8", False), ("", False), ("not an address", False)],
)  # fmt: skip
def test_local_peer(address: str, local: bool) -> None:
    assert local_peer(address) is local
