"""Twilio Media Streams (``/v1/twilio``, issue 73): a call replayed from frames built to
Twilio's published message format (there is no official client for the receiving side):
``connected``, ``start`` with the token in ``customParameters``, ``media`` of both tracks
(base64 mu-law at 8 kHz, 20 ms each, with their timestamps), a ``mark``, a ``dtmf``, ``stop``.
The call becomes a meeting of two participants whose phrases the real model transcribes."""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Callable, Iterator
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


def replay(
    host: str,
    frames: list[dict[str, Any]],
    on_sent: Callable[[dict[str, Any]], None] | None = None,
    speed: float = 2.0,
) -> tuple[int, str]:
    """The frames sent as Twilio sends them (no Authorization header, no query), at ``speed``
    times real time (twice at most: a token's live audio limit; Twilio sends at real time);
    ``on_sent`` is told of each; the close."""
    with connect(f"ws://{host}/v1/twilio") as ws:
        try:
            for frame in frames:
                ws.send(json.dumps(frame))
                if on_sent is not None:
                    on_sent(frame)
                if frame["event"] == "media":
                    time.sleep(FRAME_MS / 1000 / speed)
            ws.recv(timeout=60)
        except ConnectionClosed:
            pass
        return ws.close_code or 0, ws.close_reason or ""


class Captions(threading.Thread):
    """A reader of the call's meeting's events stream, from the moment the meeting exists:
    the caption events, each with whether the call had stopped when it came."""

    def __init__(self, host: str, token: str) -> None:
        super().__init__(daemon=True)
        self.host, self.auth = host, {"Authorization": f"Bearer {token}"}
        self.stopped = threading.Event()
        self.got: list[tuple[bool, dict[str, Any]]] = []

    def run(self) -> None:
        base = f"http://{self.host}"
        with httpx.Client(base_url=base, headers=self.auth, timeout=30) as client:
            deadline = time.monotonic() + 30
            while not (meetings := client.get("/v1/meetings").json()):
                assert time.monotonic() < deadline
                time.sleep(0.1)
            with client.stream("GET", f"/v1/meetings/{meetings[0]['id']}/events",
                               timeout=180) as events:  # fmt: skip
                kind = ""
                for line in events.iter_lines():
                    if line.startswith("event: "):
                        kind = line[7:]
                    elif line.startswith("data: ") and kind == "caption":
                        self.got.append((self.stopped.is_set(), json.loads(line[6:])))
                    elif (line.startswith("data: ") and kind == "progress"
                          and json.loads(line[6:])["finished"]):  # fmt: skip
                        return


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    with recognizing(tmp_path_factory.mktemp("twilio")) as served:
        yield served


@pytest.mark.asr
def test_a_call_becomes_a_meeting_of_its_two_people(tmp_path: Path) -> None:
    """Captions come on the meeting's events stream while the call goes on; once it stops,
    the meeting's phrases are its two people's, on the call's clock."""
    with recognizing(tmp_path) as (host, token):
        captions = Captions(host, token)
        captions.start()

        def sent(frame: dict[str, Any]) -> None:
            if frame["event"] == "stop":
                captions.stopped.set()

        code, reason = replay(host, call(token), sent, speed=1.0)  # as Twilio sends it
        assert code == 1000, reason
        got = _meeting(host, token)
        captions.join(120)
    phrases, participants = got
    live = [c for stopped, c in captions.got if not stopped]
    assert any(c["participant"] == "Ana" for c in live)  # before the call ended
    said = {who: " ".join(c["text"] for _, c in captions.got if c["participant"] == who)
            for who in ("Ana", "Support")}  # fmt: skip
    assert_reads(said["Ana"], max_wer=0.25)
    assert said["Support"]
    assert sorted(participants) == ["Ana", "Support"]
    ana = [p for p in phrases if p["participant"] == "Ana"]
    support = [p for p in phrases if p["participant"] == "Support"]
    assert_reads(" ".join(p["text"] for p in ana))
    assert support
    assert min(p["start"] for p in ana) >= 5.5  # placed by the media timestamps
    assert min(p["start"] for p in support) < 5.0


def _meeting(host: str, token: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The call's meeting once transcribed: its phrases and participants."""
    auth = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=f"http://{host}", headers=auth, timeout=30) as client:
        (meeting,) = [m for m in client.get("/v1/meetings").json() if m["title"] == "Support call"]
        deadline = time.monotonic() + 120
        while (got := client.get(f"/v1/meetings/{meeting['id']}").json())["status"] == "pending":
            assert time.monotonic() < deadline, got
            time.sleep(0.5)
        phrases = client.get(f"/v1/meetings/{meeting['id']}/phrases").json()
    assert got["status"] == "complete", got
    return phrases, got["participants"]


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
    """Cut at 3 s, before the caller said anything: the callee's 3 s are kept and
    transcribed, the caller's track fails saying it carried no audio, and the meeting is
    built (partial), not left waiting for a recording that will never come."""
    with recognizing(tmp_path, max_track_s=3.0) as (host, token):
        code, reason = replay(host, call(token))
        assert code == 1008
        assert "over 3 s" in reason
        auth = {"Authorization": f"Bearer {token}"}
        with httpx.Client(base_url=f"http://{host}", headers=auth, timeout=30) as client:
            (meeting,) = client.get("/v1/meetings").json()
            deadline = time.monotonic() + 120
            while (got := client.get(f"/v1/meetings/{meeting['id']}").json())["status"] == (
                "pending"
            ):
                assert time.monotonic() < deadline, got
                time.sleep(0.5)
    assert got["status"] == "partial", got
    tracks = {t["participant"]: t for t in got["tracks"]}
    assert tracks["Ana"]["status"] == "failed"
    assert "no audio" in tracks["Ana"]["last_error"]
    assert tracks["Support"]["status"] == "done"


def test_a_binary_first_frame_is_closed_saying_so(server: tuple[str, str]) -> None:
    host, _ = server
    with connect(f"ws://{host}/v1/twilio") as ws:
        ws.send(b"\xff" * 160)
        with pytest.raises(ConnectionClosed):
            ws.recv(timeout=30)
        assert ws.close_code == 1008
        assert "JSON text" in (ws.close_reason or "")
