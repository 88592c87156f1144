"""Pipecat's speech-to-text services on their DEFAULT settings against a real server (issue
41): ``OpenAISTTService`` (REST, model ``gpt-transcribe``), ``OpenAIRealtimeSTTService``
(the Realtime socket, ``gpt-realtime-whisper``, no server VAD: it commits when its own VAD
says the user stopped) and ``DeepgramSTTService`` (the live socket, ``nova-3-general``,
Finalize when the user stops). Only the base URL and the key (a heard token) are set.

Each runs in Pipecat's own test pipeline (``pipecat.tests.utils.run_test``) as a transport
feeds it: the VAD's started frame, JFK in 20 ms frames at real time, the VAD's stopped frame;
its ``TranscriptionFrame`` must hold JFK's sentence, at most 3 words of 22 wrong and none
said twice (tests/reading.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openai
import pytest
from pipecat.frames.frames import (
    Frame,
    InputAudioRawFrame,
    TranscriptionFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from pipecat.services.deepgram.stt import DeepgramSTTService
from pipecat.services.openai.stt import OpenAIRealtimeSTTService, OpenAISTTService
from pipecat.tests.utils import SleepFrame, run_test

from tests.reading import assert_reads
from tests.server.test_clients import jfk
from tests.server.threaded import recognizing

pytestmark = pytest.mark.asr

FRAME_S = 0.02


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    with recognizing(tmp_path_factory.mktemp("pipecat")) as served:
        yield served


def spoken(wait_s: float) -> list[Frame]:
    """What a transport and its VAD send while JFK speaks, then ``wait_s`` for the answer."""
    pcm = jfk(16_000, silence_s=0.5).tobytes()
    step = int(16_000 * FRAME_S) * 2
    frames: list[Frame] = [VADUserStartedSpeakingFrame()]
    for i in range(0, len(pcm), step):
        frames += [InputAudioRawFrame(audio=pcm[i : i + step], sample_rate=16_000,
                                      num_channels=1), SleepFrame(sleep=FRAME_S)]  # fmt: skip
    return [*frames, VADUserStoppedSpeakingFrame(), SleepFrame(sleep=wait_s)]


async def transcript(service: Any, wait_s: float = 4.0) -> str:
    try:
        down, _ = await run_test(service, frames_to_send=spoken(wait_s))
    finally:
        # the OpenAI service keeps its SDK client open after the pipeline ends: closed here,
        # on this event loop, not by the garbage collector after the loop is gone
        client = getattr(service, "_client", None)
        if isinstance(client, openai.AsyncOpenAI):
            await client.close()
    return " ".join(f.text for f in down if isinstance(f, TranscriptionFrame))


async def test_pipecat_openai_stt(server: tuple[str, str]) -> None:
    host, token = server
    service = OpenAISTTService(api_key=token, base_url=f"http://{host}/v1")
    text = await transcript(service)
    assert_reads(text)


async def test_pipecat_openai_realtime_stt(server: tuple[str, str]) -> None:
    host, token = server
    service = OpenAIRealtimeSTTService(api_key=token, base_url=f"ws://{host}/v1/realtime")
    text = await transcript(service)
    assert_reads(text)


async def test_pipecat_deepgram_stt(
    server: tuple[str, str], capfd: pytest.CaptureFixture[str]
) -> None:
    host, token = server
    service = DeepgramSTTService(api_key=token, base_url=f"http://{host}")
    text = await transcript(service)
    assert_reads(text)
    # Pipecat leaves right after CloseStream: the server must not write to it then
    assert "Exception in ASGI application" not in capfd.readouterr().err
