"""Twilio Media Streams (``/v1/twilio``, issue 73): a call replayed from frames built to
Twilio's published message format (there is no official client for the receiving side):
``connected``, ``start`` with the token in ``customParameters``, ``media`` of both tracks
(base64 mu-law at 8 kHz, 20 ms each, with their timestamps), a ``mark``, a ``dtmf``, ``stop``.
The call becomes a meeting of two participants whose phrases the real model transcribes."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from heard.asr.audio import load_audio
from tests.conftest import AUDIO
from tests.reading import assert_reads
from tests.server.test_clients import mulaw
from tests.server.threaded import recognizing

FRAME_MS = 20


def telephone(samples: np.ndarray) -> bytes:
    """16 kHz float samples as Twilio carries them: 8 kHz mu-law."""
    at_8k = samples[::2]
    return mulaw((np.clip(at_8k, -1, 1) * 32767).astype("<i2"))


def media(track: str, audio: bytes, start_ms: int, sid: str) -> Iterator[dict[str, Any]]:
    step = 8 * FRAME_MS
    for n, at in enumerate(range(0, len(audio), step)):
        yield {"event": "media", "streamSid": sid, "media": {
            "track": track, "chunk": str(n + 1), "timestamp": str(start_ms + n * FRAME_MS),
            "payload": base64.b64encode(audio[at : at + step]).decode()}}  # fmt: skip


def call(token: str | None, sid: str = "MZ0001") -> list[dict[str, Any]]:
    """A call: the callee answers (the right voice of stereo_diarization.wav, from 0 s), then
    the caller says JFK's sentence from 6 s; each track sends only while it speaks (the
    timestamps place it)."""
    callee = telephone(load_audio(AUDIO / "stereo_diarization.wav", 1))
    caller = telephone(load_audio(AUDIO / "jfk.flac"))
    parameters = {"title": "Support call", "caller": "Ana", "callee": "Support"}
    if token is not None:
        parameters["token"] = token
    start = {"event": "start", "sequenceNumber": "1", "streamSid": sid, "start": {
        "accountSid": "AC0001", "streamSid": sid, "callSid": "CA0001",
        "tracks": ["inbound", "outbound"], "customParameters": parameters,
        "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1},
    }}  # fmt: skip
    frames = [{"event": "connected", "protocol": "Call", "version": "1.0.0"}, start]
    frames += list(media("outbound", callee, 0, sid))
    frames += [{"event": "mark", "streamSid": sid, "mark": {"name": "greeting"}}]
    frames += list(media("inbound", caller, 6000, sid))
    frames += [{"event": "dtmf", "streamSid": sid, "dtmf": {"track": "inbound_track",
                                                            "digit": "1"}}]  # fmt: skip
    frames += [{"event": "stop", "streamSid": sid,
                "stop": {"accountSid": "AC0001", "callSid": "CA0001"}}]  # fmt: skip
    return frames


def replay(host: str, frames: list[dict[str, Any]]) -> tuple[int, str]:
    """The frames sent as Twilio sends them (no Authorization header, no query), at twice
    real time (a token's live audio limit; Twilio sends at real time); the close."""
    with connect(f"ws://{host}/v1/twilio") as ws:
        try:
            for frame in frames:
                ws.send(json.dumps(frame))
                if frame["event"] == "media":
                    time.sleep(FRAME_MS / 2000)
            ws.recv(timeout=60)
        except ConnectionClosed:
            pass
        return ws.close_code or 0, ws.close_reason or ""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    with recognizing(tmp_path_factory.mktemp("twilio")) as served:
        yield served


@pytest.mark.asr
def test_a_call_becomes_a_meeting_of_its_two_people(server: tuple[str, str]) -> None:
    host, token = server
    code, reason = replay(host, call(token))
    assert code == 1000, reason
    auth = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=f"http://{host}", headers=auth, timeout=30) as client:
        (meeting,) = [m for m in client.get("/v1/meetings").json() if m["title"] == "Support call"]
        deadline = time.monotonic() + 120
        while (got := client.get(f"/v1/meetings/{meeting['id']}").json())["status"] == "pending":
            assert time.monotonic() < deadline, got
            time.sleep(0.5)
        phrases = client.get(f"/v1/meetings/{meeting['id']}/phrases").json()
    assert got["status"] == "complete", got
    assert sorted(got["participants"]) == ["Ana", "Support"]
    ana = [p for p in phrases if p["participant"] == "Ana"]
    support = [p for p in phrases if p["participant"] == "Support"]
    assert_reads(" ".join(p["text"] for p in ana))
    assert support
    assert min(p["start"] for p in ana) >= 5.5  # placed by the media timestamps
    assert min(p["start"] for p in support) < 5.0


def test_a_stream_without_a_token_is_closed_saying_so(server: tuple[str, str]) -> None:
    host, _ = server
    code, reason = replay(host, call(None)[:3])
    assert code == 1008
    assert 'name="token"' in reason


def test_a_bad_token_is_closed_with_a_401_reason(server: tuple[str, str]) -> None:
    host, _ = server
    code, reason = replay(host, call("heard_not_a_token")[:3])
    assert code == 1008
    assert reason.startswith("401")


def test_a_call_over_the_longest_track_is_closed_and_kept(tmp_path: Path) -> None:
    with recognizing(tmp_path, max_track_s=3.0) as (host, token):
        code, reason = replay(host, call(token))
        assert code == 1008
        assert "over 3 s" in reason
        auth = {"Authorization": f"Bearer {token}"}
        meetings = httpx.get(f"http://{host}/v1/meetings", headers=auth).json()
    assert [m["title"] for m in meetings] == ["Support call"]
