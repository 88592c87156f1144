"""AssemblyAI's Universal-Streaming v3 (``/v3/ws``, issue 73), driven by the ``assemblyai``
SDK's own ``StreamingClient`` on its defaults: only its ``api_host`` (heard's address) and
``api_key`` (a heard token) are set, and the parameters of the SDK's own example."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from assemblyai.streaming.v3 import (
    StreamingClient,
    StreamingClientOptions,
    StreamingEvents,
    StreamingParameters,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from heard.asr.audio import load_audio
from heard.asr.streaming import strip_punctuation
from heard.server.protocols.assemblyai import AssemblyAICodec, parse_options
from heard.speech import Word
from heard.transcript.events import EventKind
from heard.transcript.utterances import Decoded
from tests.conftest import AUDIO
from tests.reading import assert_reads
from tests.server.threaded import recognizing


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    with recognizing(tmp_path_factory.mktemp("assemblyai")) as served:
        yield served


def jfk_chunks(chunk_ms: int = 100) -> Iterator[bytes]:
    """JFK, then two seconds of silence, as 16-bit PCM at 16 kHz, paced like a microphone."""
    samples = np.concatenate([load_audio(AUDIO / "jfk.flac"), np.zeros(32_000, np.float32)])
    pcm = (np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes()
    step = 32 * chunk_ms
    for at in range(0, len(pcm), step):
        yield pcm[at : at + step]
        time.sleep(chunk_ms / 1000)


@pytest.mark.asr
def test_the_assemblyai_sdk_hears_jfk(server: tuple[str, str]) -> None:
    host, token = server
    got: dict[str, list[Any]] = {"begin": [], "turns": [], "end": [], "errors": []}
    client = StreamingClient(StreamingClientOptions(api_key=token, api_host=f"ws://{host}"))
    client.on(StreamingEvents.Begin, lambda _, e: got["begin"].append(e))
    client.on(StreamingEvents.Turn, lambda _, e: got["turns"].append(e))
    client.on(StreamingEvents.Termination, lambda _, e: got["end"].append(e))
    client.on(StreamingEvents.Error, lambda _, e: got["errors"].append(e))
    client.connect(StreamingParameters(sample_rate=16_000, format_turns=True))
    client.stream(jfk_chunks())
    client.disconnect(terminate=True)
    assert got["errors"] == []
    assert len(got["begin"]) == 1
    assert len(got["end"]) == 1
    assert got["end"][0].audio_duration_seconds == 13
    ended = [t for t in got["turns"] if t.end_of_turn and not t.turn_is_formatted]
    formatted = [t for t in got["turns"] if t.end_of_turn and t.turn_is_formatted]
    assert [t.turn_order for t in ended] == [t.turn_order for t in formatted]
    assert_reads(" ".join(t.transcript for t in formatted))
    # every final word once: what the turns' words said final is what the ended turns say
    final = []
    for turn in ended:
        final += [w.text for w in turn.words if w.word_is_final]
    assert " ".join(t.transcript for t in ended).split() == final
    assert any(not t.end_of_turn for t in got["turns"])  # the turn grew before it ended


def test_a_bad_key_is_refused_at_the_handshake(server: tuple[str, str]) -> None:
    host, _ = server
    errors: list[Any] = []
    client = StreamingClient(StreamingClientOptions(api_key="heard_not_a_token",
                                                    api_host=f"ws://{host}"))  # fmt: skip
    client.on(StreamingEvents.Error, lambda _, e: errors.append(e))
    client.connect(StreamingParameters(sample_rate=16_000))
    client.disconnect()
    assert [e.code for e in errors] == [401]


@pytest.mark.parametrize(
    ("query", "says"),
    [("speaker_labels=true", "speaker_labels"), ("encoding=opus", "pcm_s16le"),
     ("sample_rate=4000", "8000 to 48000"), ("sample_rate=fast", "whole number"),
     ("wobble=1", "unknown parameter 'wobble'"), ("max_turn_silence=inf", "milliseconds"),
     ("min_turn_silence=9999999", "0 to 60000 ms")],
)  # fmt: skip
def test_what_heard_cannot_do_refuses_the_handshake_naming_it(
    server: tuple[str, str], query: str, says: str
) -> None:
    host, token = server
    with pytest.raises(InvalidStatus) as refused:
        connect(f"ws://{host}/v3/ws?{query}", additional_headers={"Authorization": token})
    assert refused.value.response.status_code == 400
    assert says in json.loads(refused.value.response.body)["error"]


def test_what_is_off_is_taken() -> None:
    options = parse_options({"speaker_labels": "false", "sample_rate": "8000",
                             "encoding": "pcm_mulaw", "max_turn_silence": "1500"})  # fmt: skip
    assert (options.sample_rate, options.encoding, options.turn_silence_ms) == (8000, "mulaw", 1500)


# -- every final word released once, whatever the steps ------------------------------------


class _Session:
    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def send(self, message: dict[str, Any]) -> None:
        self.sent.append(message)


def _codec(format_turns: bool) -> tuple[AssemblyAICodec, _Session]:
    codec = AssemblyAICodec.__new__(AssemblyAICodec)
    session = _Session()
    codec.session = session  # type: ignore[assignment]
    codec.options = parse_options({"format_turns": str(format_turns).lower()})
    from heard.server.protocols.assemblyai import _Turn

    codec.turn = _Turn()
    return codec, session


steps = st.lists(
    st.tuples(
        st.sampled_from(["partial", "final", "endpoint", "force"]),
        st.lists(st.sampled_from(["Ask", "not,", "what", "your", "country."]), max_size=4),
    ),
    max_size=25,
)


@settings(max_examples=200, deadline=None)
@given(steps=steps, format_turns=st.booleans())
def test_every_final_word_is_in_one_ended_turn_once(
    steps: list[tuple[str, list[str]]], format_turns: bool
) -> None:
    """Whatever the decode steps (partials, commits, endpoints, a ForceEndpoint), the ended
    turns say every final word once, in order, and a partial left at a forced end once too;
    each turn ends once; a turn's transcript is the words it marks final."""
    import asyncio

    codec, session = _codec(format_turns)
    expected: list[str] = []
    pending: list[str] = []

    async def run() -> None:
        nonlocal pending
        t = 0.0
        for kind, texts in steps:
            words = tuple(Word(t + i * 0.3, t + i * 0.3 + 0.2, w) for i, w in enumerate(texts))
            t += 0.3 * len(texts) + 0.1
            if kind == "force":
                expected.extend(pending)
                pending = []
                codec._end_turn()
                continue
            if kind == "partial":
                pending = list(texts)
            else:
                expected.extend(texts)
                pending = []
            await codec.decoded(Decoded(EventKind.PARTIAL if kind == "partial" else
                                        EventKind.FINAL, " ".join(texts), words=words,
                                        endpoint=kind == "endpoint"))  # fmt: skip
        expected.extend(pending)
        codec._end_turn()  # the stream's end

    asyncio.run(run())
    turns = [m for m in session.sent if m["type"] == "Turn"]
    ended = [m for m in turns if m["end_of_turn"] and not m["turn_is_formatted"]]
    said = " ".join(m["transcript"] for m in ended)
    assert said.split() == strip_punctuation(" ".join(expected)).split()
    assert [m["turn_order"] for m in ended] == list(range(len(ended)))
    for m in turns:
        final = [w["text"] for w in m["words"] if w["word_is_final"]]
        assert m["transcript"].split() == " ".join(final).split()
    formatted = [m for m in turns if m["turn_is_formatted"]]
    assert [m["turn_order"] for m in formatted] == ([m["turn_order"] for m in ended]
                                                    if format_turns else [])  # fmt: skip
    if format_turns:
        assert " ".join(m["transcript"] for m in formatted).split() == " ".join(expected).split()
