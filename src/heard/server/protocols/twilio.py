"""``/v1/twilio``: a phone call through Twilio Media Streams, kept as a heard meeting.

Twilio streams a call's audio to a WebSocket that TwiML names, ``<Start><Stream>`` (or
``<Connect><Stream>``) with ``url="wss://HOST/v1/twilio"``; its handshake carries no
credentials and its URL no query, so the heard token comes as a custom parameter,
``<Parameter name="token" value="TOKEN"/>`` (``title``, ``caller`` and ``callee`` may name the
meeting and its two people). The messages are Twilio's (JSON text frames):

* ``connected``, then ``start`` (``streamSid``, ``callSid``, ``tracks``, ``customParameters``,
  ``mediaFormat``: 8 kHz mu-law, one channel): a meeting is made with a participant per track,
  ``inbound`` (the caller, whose phone it is) and ``outbound`` (who the call reaches);
* ``media`` (``track``, ``timestamp`` in ms from the stream's start, ``payload``: base64
  mu-law): each track's audio, kept on the call's clock (a gap in a track is silence, so the
  two stay aligned on the meeting's timeline), and heard live: each participant's finals are
  ``caption`` events on the meeting's events stream (``GET /v1/meetings/{id}/events``) as
  the call goes on;
* ``stop`` (or the socket closing): each track becomes the participant's upload, counted in
  the user's storage, and the meeting is transcribed as an uploaded one is (its phrases
  stored, on workers with ``--queue``); ``mark`` and ``dtmf`` are taken and not used.

heard sends nothing back (a ``<Connect>`` stream would play what it got). A start without a
token closes the socket with 1008 and says so; a call over the longest track
(``HEARD_MAX_TRACK_S``) or the token's audio rate is closed with 1008, what was heard so far
kept.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import logging
import os
import struct
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from fastapi import WebSocket, WebSocketDisconnect

from heard.asr.incoming import IncomingAudio, mulaw_to_pcm16
from heard.asr.microphone import Microphone
from heard.errors import HeardError, InputError, SocketCloseError
from heard.live.path import LiveOutput, LivePath
from heard.meetings import jobs
from heard.server.session import CLOSE_INVALID, CLOSE_NORMAL, CLOSE_POLICY, Session
from heard.server.spool import spool_file
from heard.server.state import LiveCaptions, state_of
from heard.store.meetings import TrackSpec
from heard.store.models import TrackStatus
from heard.transcript.events import EventKind
from heard.transcript.utterances import Decoded

__all__ = ["PATH", "TwilioCodec", "greeting", "refuse"]

log = logging.getLogger("heard.server.twilio")

PATH = "/v1/twilio"
RATE = 8000
"""Twilio's media: mu-law, 8 kHz, one byte a sample."""
SILENCE = b"\xff"
"""Mu-law's zero."""
MAX_GREETING_CHARS = 16 * 1024
"""Of each message read before the token is known."""
FIRST_FRAMES = 4
"""Frames read for the ``start`` that holds the token (Twilio sends ``connected``, then it)."""
CAPTIONS_CLOSE_S = 30.0
"""How long the live captions' last decode may take once the call has ended."""
TRACKS = {"inbound": "caller", "outbound": "callee"}
"""Twilio's track names, and the participant each is unless the parameters name them."""


async def greeting(websocket: WebSocket) -> tuple[str, list[str]]:
    """The token in the ``start`` message's ``customParameters``, and the frames up to it."""
    frames: list[str] = []
    while len(frames) < FIRST_FRAMES:
        message = await websocket.receive()
        if message["type"] == "websocket.disconnect":
            raise WebSocketDisconnect(message.get("code", 1000))
        raw = message.get("text")
        if raw is None:
            raise InputError("a Twilio stream starts with JSON text messages")
        if len(raw) > MAX_GREETING_CHARS:
            raise InputError(f"a Twilio message before the token is at most {MAX_GREETING_CHARS} "
                             "characters")  # fmt: skip
        frames.append(raw)
        parsed = _json(raw)
        if parsed.get("event") == "start":
            start = parsed.get("start")
            parameters = start.get("customParameters") if isinstance(start, dict) else None
            token = parameters.get("token") if isinstance(parameters, dict) else None
            if not isinstance(token, str) or not token:
                raise InputError('the stream needs the heard token as <Parameter name="token">')
            return token, frames
    raise InputError(f"no start message in the stream's first {FIRST_FRAMES} frames")


async def refuse(websocket: WebSocket, status: int, message: str) -> None:
    """Unused: this protocol's refusals are closes (the socket is accepted to read the token)."""
    raise AssertionError("a Twilio stream is refused by closing it")


def _json(raw: str) -> dict[str, Any]:
    try:
        message = json.loads(raw)
    except ValueError:
        raise InputError("a Twilio message is JSON") from None
    if not isinstance(message, dict):
        raise InputError("a Twilio message is a JSON object")
    return message


@dataclass
class _Track:
    participant: str
    handle: BinaryIO
    path: Path
    incoming: IncomingAudio
    """To 16 kHz PCM16, for the live recognizer."""
    microphone: Microphone | None = None
    written: int = 0
    """Bytes (samples) written: where the next one falls on the call's clock."""


class _Captions(LiveOutput):
    """A participant's finals, as the call goes on, to the meeting's events stream."""

    def __init__(self, captions: LiveCaptions, meeting_id: uuid.UUID, participant: str) -> None:
        self.captions, self.meeting_id, self.participant = captions, meeting_id, participant

    async def decoded(self, d: Decoded) -> None:
        if d.kind is EventKind.FINAL and d.text:
            self.captions.add(self.meeting_id, {
                "participant": self.participant, "text": d.text,
                "start": round(d.start_s, 3), "end": round(d.end_s, 3)})  # fmt: skip


class TwilioCodec:
    """Twilio Media Streams on the session loop (the module doc)."""

    protocol: str = "twilio"
    max_frame_bytes: int = 64 * 1024
    idle_s: float | None = 60.0

    def __init__(self, session: Session) -> None:
        self.session = session
        self.state = state_of(session.websocket.app)
        self.meeting_id: uuid.UUID | None = None
        self.tracks: dict[str, _Track] = {}
        self.max_samples = int(session.settings.max_track_s * RATE)
        self.done = False

    async def start(self) -> None:
        return None

    async def text(self, raw: str) -> None:
        try:
            message = _json(raw)
        except InputError as e:
            raise SocketCloseError(CLOSE_INVALID, str(e)) from None
        event = message.get("event")
        if event == "start" and self.meeting_id is None:
            await self._start(message.get("start") or {})
        elif event == "media" and self.meeting_id is not None:
            self._media(message.get("media") or {})
        elif event == "stop":
            await self._finish()
            self.session.end(SocketCloseError(CLOSE_NORMAL, "the call ended"))
        # connected, mark, dtmf (and anything newer) are not heard's to answer

    async def audio(self, data: bytes) -> None:
        raise SocketCloseError(CLOSE_INVALID, "Twilio's audio comes in media messages")

    def error(self, detail: str) -> None:
        log.warning("%s on twilio: %s", self.session.name, detail)

    def on_idle(self) -> SocketCloseError:
        return SocketCloseError(CLOSE_POLICY, "no media for 60 s")

    async def close(self) -> None:
        await self._finish()  # a call whose socket closed without stop is kept too

    async def _start(self, start: dict[str, Any]) -> None:
        parameters = start.get("customParameters") or {}
        names = {track: str(parameters.get(default) or default)[:200]
                 for track, default in TRACKS.items()}  # fmt: skip
        asked = start.get("tracks") or ["inbound"]
        tracks = [t for t in TRACKS if t in asked] or ["inbound"]
        call = str(start.get("callSid") or start.get("streamSid") or "")[:64]
        title = str(parameters.get("title") or f"Phone call {call}".strip())[:200]
        specs = [TrackSpec(names[t], "", status=TrackStatus.RECORDING) for t in tracks]
        settings = self.session.settings
        owner = self.session.user.owner
        try:
            self.meeting_id = await self.state.work.run(
                owner, lambda: jobs.submit(settings.db, specs, title=title, owner=owner)
            )
        except HeardError as e:
            raise SocketCloseError(CLOSE_POLICY, f"the call cannot be kept: {e}") from None
        recognizer = settings.live_recognizers(settings.whisper)
        for t in tracks:
            handle, path = spool_file(settings.uploads)
            track = _Track(names[t], os.fdopen(handle, "wb"), path, IncomingAudio("mulaw", RATE))
            path_out = _Captions(self.state.captions, self.meeting_id, track.participant)
            live = LivePath(track.participant, path_out, self.session)
            track.microphone = Microphone(track.participant, live.take,
                                          lambda chunk_ms, rtf: None, recognizer)  # fmt: skip
            self.tracks[t] = track
        log.info("%s on twilio: call %s is meeting %s", self.session.name, call, self.meeting_id)

    def _media(self, media: dict[str, Any]) -> None:
        track = self.tracks.get(str(media.get("track", "inbound")))
        if track is None:
            return  # a track the start did not announce
        try:
            payload = base64.b64decode(media.get("payload") or "", validate=True)
            at = int(media.get("timestamp") or 0) * RATE // 1000
        except (binascii.Error, ValueError, TypeError):
            raise SocketCloseError(CLOSE_INVALID, "media: a base64 payload and a timestamp "
                                   "in ms") from None  # fmt: skip
        gap = max(0, min(at, self.max_samples) - track.written)
        if track.written + gap + len(payload) > self.max_samples:
            limit = self.session.settings.max_track_s
            raise SocketCloseError(CLOSE_POLICY, f"the call is over {limit:.0f} s; closing, "
                                   "what was heard is kept")  # fmt: skip
        self.session.charge_audio(len(payload) * 4)  # as 16 kHz PCM16; a gap is not sent
        audio = SILENCE * gap + payload
        track.handle.write(audio)
        track.written += len(audio)
        if track.microphone is not None:
            (pcm,) = track.incoming.feed(audio)
            track.microphone.add(pcm)

    async def _finish(self) -> None:
        """The live captions' last words, then each track to its participant's upload (a
        track with no audio, or whose audio could not be kept, failed with the reason), then
        the meeting transcribed; the spooled audio removed whatever happens."""
        if self.done or self.meeting_id is None:
            return
        self.done = True
        meeting_id, owner = self.meeting_id, self.session.user.owner
        try:
            for track in self.tracks.values():
                await self._last_captions(track)
            for track in self.tracks.values():
                track.handle.close()
                reason = "no audio was heard on this track of the call"
                if track.written:
                    try:
                        await self.state.uploads.keep(owner, meeting_id, track.participant,
                                                      _wav(track.path, track.written))  # fmt: skip
                        continue
                    except HeardError as e:
                        reason = f"the call's audio could not be kept: {e}"
                await self.state.work.run(owner, jobs.unheard, self.session.settings.db,
                                          meeting_id, track.participant, owner, reason)  # fmt: skip
            await self.state.work.run(owner, self.state.runs.start, owner, meeting_id)
        except HeardError as e:  # the meeting deleted meanwhile, the store down
            log.error("%s on twilio: meeting %s not kept whole: %s", self.session.name,
                      meeting_id, e)  # fmt: skip
        finally:
            for track in self.tracks.values():
                track.handle.close()
                track.path.unlink(missing_ok=True)

    async def _last_captions(self, track: _Track) -> None:
        """What the live recognizer still holds, decoded (within ``CAPTIONS_CLOSE_S``: the
        captions are a view; the stored call is the record)."""
        if track.microphone is None:
            return
        try:
            (tail,) = track.incoming.finish()
            if tail:
                track.microphone.add(tail)
            await asyncio.wait_for(track.microphone.close(), CAPTIONS_CLOSE_S)
        except Exception:
            log.exception("%s on twilio: the live captions of %s ended badly",
                          self.session.name, track.participant)  # fmt: skip


async def _wav(path: Path, samples: int) -> AsyncIterator[bytes]:
    """The track's mu-law as a 16-bit PCM WAV at 8 kHz, a piece at a time."""
    size = samples * 2
    yield (b"RIFF" + struct.pack("<I", 36 + size) + b"WAVEfmt "
           + struct.pack("<IHHIIHH", 16, 1, 1, RATE, RATE * 2, 2, 16)
           + b"data" + struct.pack("<I", size))  # fmt: skip
    with path.open("rb") as f:
        while chunk := await asyncio.to_thread(f.read, 64 * 1024):
            yield mulaw_to_pcm16(chunk).astype("<i2").tobytes()
