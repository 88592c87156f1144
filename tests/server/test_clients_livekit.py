"""LiveKit Agents' Deepgram and OpenAI STT plugins on their DEFAULT settings against a real
server: each hears JFK's sentence, at most 3 words of 22 wrong and none said twice
(tests/reading.py).

Only what a user must set is set: the base URL (the server's address) and the key (a heard
token). Nothing else: no model, no encoding, no sample rate, no endpointing. LiveKit's audio
comes at 48 kHz; the plugins resample it (Deepgram streams at 16 kHz, OpenAI's realtime
socket at 24 kHz) or send it as it is (a 48 kHz WAV to recognize).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import numpy as np
import pytest
from livekit import rtc
from livekit.agents import stt, utils
from livekit.plugins import deepgram, openai

from tests.reading import assert_reads
from tests.server.test_clients import jfk
from tests.server.threaded import recognizing

pytestmark = pytest.mark.asr

RATE = 48_000  # what a LiveKit room carries
FRAME = RATE // 50  # 20 ms frames, as an rtc.AudioSource hands them on


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    with recognizing(tmp_path_factory.mktemp("livekit")) as served:
        yield served


def frame(samples: np.ndarray) -> rtc.AudioFrame:
    return rtc.AudioFrame(
        data=samples.astype("<i2").tobytes(), sample_rate=RATE, num_channels=1,
        samples_per_channel=len(samples),
    )  # fmt: skip


async def speak(stream: stt.SpeechStream, silence_s: float) -> None:
    """JFK into ``stream`` at real time, as a room's microphone track gives it (faster, the
    recognizer's steps would hold more audio than a live client ever gives them)."""
    samples = jfk(RATE, silence_s=silence_s)
    step = FRAME / RATE
    start = asyncio.get_running_loop().time()
    for n, i in enumerate(range(0, len(samples), FRAME)):
        stream.push_frame(frame(samples[i : i + FRAME]))
        # against the clock, so slow steps do not add up to a slower pace
        await asyncio.sleep(max(0.0, start + (n + 1) * step - asyncio.get_running_loop().time()))


async def finals(stream: stt.SpeechStream, until_first: bool = False) -> list[str]:
    """The FINAL_TRANSCRIPT texts ``stream`` gives, until it ends (or, ``until_first``, the
    first of them)."""
    texts: list[str] = []
    async for event in stream:
        if event.type == stt.SpeechEventType.FINAL_TRANSCRIPT and event.alternatives:
            texts.append(event.alternatives[0].text)
            if until_first:
                break
    return texts


# -- Deepgram -------------------------------------------------------------------------------


def deepgram_stt(server: tuple[str, str]) -> deepgram.STT:
    host, token = server
    return deepgram.STT(api_key=token, base_url=f"http://{host}/v1/listen")


# LiveKit posts the WAV as raw bytes; over 1 MiB (11 s at 48 kHz) aiohttp warns about that
@pytest.mark.filterwarnings("ignore:Sending a large body directly with raw bytes:ResourceWarning")
async def test_livekit_deepgram_recognizes_a_48khz_frame(server: tuple[str, str]) -> None:
    async with utils.http_context.open(), asyncio.timeout(60):
        recognizer = deepgram_stt(server)
        try:
            heard = await recognizer.recognize(buffer=frame(jfk(RATE)))
        finally:
            await recognizer.aclose()
    assert heard.type == stt.SpeechEventType.FINAL_TRANSCRIPT
    assert_reads(heard.alternatives[0].text)


async def test_livekit_deepgram_streams_at_real_time(server: tuple[str, str]) -> None:
    """LiveKit's stream sends endpointing=25 and interim results; heard still gets the words
    right. end_input sends Finalize and CloseStream, and the stream ends when heard closes."""
    async with utils.http_context.open(), asyncio.timeout(90):
        recognizer = deepgram_stt(server)
        stream = recognizer.stream()
        reading = asyncio.create_task(finals(stream))
        try:
            await speak(stream, silence_s=1.5)
            stream.end_input()
            texts = await reading
        finally:
            reading.cancel()
            await stream.aclose()
            await recognizer.aclose()
    assert_reads(" ".join(texts))


# -- OpenAI ---------------------------------------------------------------------------------


async def test_livekit_openai_recognizes_a_48khz_frame(server: tuple[str, str]) -> None:
    """gpt-4o-mini-transcribe over /v1/audio/transcriptions (not streaming: its default)."""
    host, token = server
    async with asyncio.timeout(60):
        recognizer = openai.STT(api_key=token, base_url=f"http://{host}/v1")
        try:
            assert not recognizer.capabilities.streaming
            heard = await recognizer.recognize(buffer=frame(jfk(RATE)))
        finally:
            await recognizer.aclose()
            # LiveKit's aclose leaves the openai client it made open, with its connections
            await recognizer._client.close()
    assert heard.type == stt.SpeechEventType.FINAL_TRANSCRIPT
    assert_reads(heard.alternatives[0].text)


async def test_livekit_openai_realtime_streams_with_server_vad(server: tuple[str, str]) -> None:
    """use_realtime: a transcription session on /v1/realtime with server VAD
    (``silence_duration_ms`` 350, LiveKit's default) and no commit: each of JFK's pauses
    ends an item, as at OpenAI, and the items read his sentence, each word once."""
    host, token = server
    texts: list[str] = []

    async def read(stream: stt.SpeechStream) -> None:
        async for event in stream:
            if event.type == stt.SpeechEventType.FINAL_TRANSCRIPT and event.alternatives:
                texts.append(event.alternatives[0].text)

    async with utils.http_context.open(), asyncio.timeout(90):
        recognizer = openai.STT(api_key=token, base_url=f"http://{host}/v1", use_realtime=True)
        stream = recognizer.stream()
        reading = asyncio.create_task(read(stream))
        try:
            await speak(stream, silence_s=3.0)  # the last item ends within the silence
        finally:
            reading.cancel()
            await stream.aclose()
            await recognizer.aclose()
            await recognizer._client.close()
    assert len(texts) >= 2  # "And so my fellow Americans," | "ask not what your country..."
    assert_reads(" ".join(texts))
