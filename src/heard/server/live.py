"""``/v1/live``: one live conversation per WebSocket.

The client sends either transcript events as JSON text frames, on heard's wire
format (``{"t_ms": 1200, "type": "partial", "text": "what should we", "speaker": "alice"}``),
or audio as binary frames: PCM16 little-endian, 16 kHz, mono, any length. Audio goes
through heard's streaming recognizer (``?speaker=`` names who speaks, default "you");
when decoding falls behind the audio, the recognizer's step grows (up to 4 s) and the
client is told: ``{"type": "degraded", "chunk_ms": 2000, "rtf": 1.3}`` (and again, with the
smaller step, when it narrows back once decoding keeps up). A text frame
``{"type": "end"}`` flushes the audio (the last final) without closing.
The server answers with JSON messages:

* ``{"type": "hypothesis", "speaker", "turn", "stable", "unstable", "t_ms"}`` per event;
* ``{"type": "release", "speaker", "text", "reason", "t_ms", "position", "replaces"}``
  for caption units (cadence from ``?mode=relaxed|balanced``, default balanced): put the
  unit's words at ``position`` of the speaker's caption in place of ``replaces`` words (a
  ``correction`` replaces words a final contradicted). Units a timer releases while nobody
  speaks come on their own; the others right after the hypothesis that released them;
* ``{"type": "context", ...}``: the memory prepared for the next reply;
* ``{"type": "final", "speaker", "turn", "text"}``: the final, sent once it is stored as
  evidence (a recall made after it finds it); ``{"type": "error", "speaker", "turn",
  "detail"}`` instead when it could not be stored (logged, the connection goes on);
* ``{"type": "audio", "received_ms"}``: the answer to each audio frame (the audio received so
  far); ``{"type": "end"}``: the answer to the client's ``{"type": "end"}``, sent once all
  it sent before is answered (the last final decoded and stored, its context prepared). So
  every frame gets an answer (or an error, or a close code);
* with ``?translate=de``: ``{"type": "translation", "speaker", "text", "translation",
  "translator"}`` per release unit, in order (the LLM provider from the environment,
  or the identity translator, which says so in ``translator``).

A malformed frame closes the connection with 1007, text no store can keep (a NUL, a lone
surrogate, a speaker over 200 characters) too, naming the field; an oversize frame (over
64 KiB) with 1009; each is logged without the frame's text, and no other connection notices.
The socket's rules (who, limits, the way out, the end) are the session loop's
(``heard.server.session``); its audio and its events go the live path every socket shares
(``heard.live.path``: commits, utterances, stabilizer, captions); this module is the
protocol's codec.

No connection can starve the others. Frames are read one at a time (the next only once the
last is handled, so what waits is bounded by the socket and uvicorn's queue of 32 frames);
each token may send 100 transcript events a second (bursts of 400) and twice real time of
audio (bursts of 10 s), over all its connections: beyond that the connection gets
``{"type": "error", "detail": ...}`` and a close with 1008, and the token may open no live
connection for the next 10 s (refused at the handshake after a second's wait, before any
work), so reconnecting does not buy a flooder a new burst, nor the server a handshake a
millisecond. Recognition, recall and storing run in worker threads; what stays on the event
loop per event (parsing, one stabilizer step) is bounded by that rate. A client that does not
take its messages (one waits over 10 s, or 1,000 pile up) is closed with 1008; one that takes
in nothing, not even pings, is closed by uvicorn's keepalive with 1011 ("keepalive ping
timeout", after ``heard serve``'s PING_INTERVAL_S and PING_TIMEOUT_S), which comes first when
its messages are too small to back up.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from fastapi import WebSocket

from heard.asr.audio import SAMPLE_RATE
from heard.asr.microphone import Microphone
from heard.errors import EventLogError, InputError, SocketCloseError
from heard.live.conversation import Conversation
from heard.live.path import LiveOutput, LivePath
from heard.live.prepared import PreparedContext
from heard.live.session import live_session
from heard.memory.evidence import Evidence
from heard.release.tracker import SELECTABLE_MODES, ReleaseUnit
from heard.release.translation import (
    IdentityTranslator,
    LLMTranslator,
    TranslatedUnit,
    TranslationQueue,
    Translator,
)
from heard.server.frames import LiveEnd, read_json
from heard.server.messages import (
    Context,
    Degraded,
    End,
    Error,
    Final,
    Heard,
    Hypothesis,
    Release,
    Translation,
)
from heard.server.session import (
    CLOSE_INVALID,
    CLOSE_POLICY,
    MAX_FRAME_BYTES,
    REVOKED,
    Session,
)
from heard.server.state import state_of
from heard.transcript.events import parse_event
from heard.transcript.stabilizer import TranscriptStep

__all__ = ["LiveCodec", "is_end", "refuse"]

log = logging.getLogger("heard.server.live")


async def refuse(websocket: WebSocket, status: int, message: str) -> None:
    """heard's live socket refuses a handshake with a close (1008) and the reason."""
    await websocket.close(code=CLOSE_POLICY, reason=message[:120])


def is_end(raw: str) -> bool:
    """``{"type": "end"}``, however it is spaced."""
    if '"end"' not in raw:
        return False
    try:
        LiveEnd.model_validate(read_json(raw, "not JSON"))
    except (InputError, ValueError):  # not an end: parsing it as an event says why
        return False
    return True


class LiveCodec(LiveOutput):
    """heard's live protocol: transcript events or PCM16 audio in, hypotheses, caption units,
    contexts and finals out (the module doc). What the audio decodes to, and the events a
    client sends, go through the live path's stages (``heard.live.path``); this codec writes
    the stabilizer's steps and the released units."""

    protocol: str = "live"
    max_frame_bytes: int = MAX_FRAME_BYTES
    idle_s: float | None = None

    def __init__(self, session: Session) -> None:
        self.session = session
        mode_name = session.params.get("mode", "balanced")
        if mode_name not in SELECTABLE_MODES:
            modes = " or ".join(SELECTABLE_MODES)
            raise InputError(f"unknown caption mode {mode_name[:40]!r}: {modes}")
        self.mode = SELECTABLE_MODES[mode_name]
        self.speaker = session.params.get("speaker", "you")[:200] or "you"
        self.target = session.params.get("translate", "")[:10]
        self.microphone: Microphone | None = None
        self.received = 0  # audio samples
        self.number = 0
        self.path: LivePath | None = None

    async def start(self) -> None:
        s = self.session
        state = state_of(s.websocket.app)
        memory = await state.work.run(s.user.owner, state.memories.of, s.user.owner)
        translations: TranslationQueue | None = None
        if self.target:
            provider = s.settings.memory.provider
            translator: Translator = (
                LLMTranslator(provider) if provider is not None else IdentityTranslator()
            )
            translations = TranslationQueue(
                translator, target=self.target, on_translated=self._translated
            )

        def conversation(on_release: Callable[[ReleaseUnit], None]) -> Conversation:
            return live_session(
                memory.recall,  # the user's pages and evidence, as they are when the call starts
                conversation_id=f"live-{s.id}",
                database=s.settings.db,
                owner=s.user.owner,
                lock=memory.lock,
                release_mode=self.mode,
                on_context=self._context,
                on_release=on_release,
                translations=translations,
                on_remembered=self._remembered,
                language=s.settings.whisper.language or "",
            )

        self.path = LivePath(self.speaker, self, s, conversation)

    def stabilized(self, step: TranscriptStep) -> None:
        h = step.hypothesis
        self.session.send(
            Hypothesis(speaker=step.speaker, turn=str(step.turn_id), stable=h.stable_prefix,
                       unstable=h.unstable_suffix, t_ms=step.t_ms)
        )  # fmt: skip

    def released(self, unit: ReleaseUnit) -> None:
        self.session.send(Release.model_validate(unit.to_dict()))

    def _context(self, context: PreparedContext) -> None:
        self.session.send(Context.model_validate(context.to_dict()))

    def _remembered(self, turn: str, evidence: Evidence, problem: str | None) -> None:
        # a final is acknowledged once it is stored, or the client hears it was not
        if problem is None:
            self.session.send(Final(speaker=evidence.speaker, turn=turn, text=evidence.text))
            return
        log.error("live %s: final of turn %s not stored (%s)", self.session.name, turn,
                  problem.split(":")[0])  # fmt: skip
        self.session.send(Error(turn=turn, speaker=evidence.speaker,
                                detail="the final was not stored; send it again"))  # fmt: skip

    def _translated(self, done: TranslatedUnit) -> None:
        self.session.send(
            Translation(speaker=done.unit.speaker, text=done.unit.text,
                        translation=done.translation, target=self.target,
                        translator=done.translator, error=done.error)
        )  # fmt: skip

    def _degraded(self, chunk_ms: int, rtf: float) -> None:
        self.session.send(Degraded(chunk_ms=chunk_ms, rtf=rtf))

    async def audio(self, data: bytes) -> None:
        self.number += 1
        if not data or len(data) % 2:
            raise SocketCloseError(
                CLOSE_INVALID, f"frame {self.number}: audio must be PCM16 (an even number of bytes)"
            )
        self.session.charge_audio(len(data))
        if self.microphone is None:
            assert self.path is not None
            settings = self.session.settings
            recognizer = settings.live_recognizers(settings.whisper)
            self.microphone = Microphone(self.speaker, self.path.take, self._degraded, recognizer)
        self.microphone.add(data)
        self.received += len(data) // 2
        self.session.send(Heard(received_ms=self.received * 1000 // SAMPLE_RATE))

    async def text(self, raw: str) -> None:
        self.number += 1
        assert self.path is not None
        if is_end(raw):
            # answered once everything sent before it is: the audio's last final decoded,
            # every final stored (or its error sent), every context prepared
            if self.microphone is not None:
                await self.microphone.flush()
            await self.path.conversation.join()
            self.session.send(End())
            return
        try:
            event = parse_event(raw, "frame", self.number)
        except EventLogError as e:
            raise SocketCloseError(CLOSE_INVALID, str(e)[:120]) from None
        if not await self.path.feed(event):
            raise SocketCloseError(CLOSE_POLICY, REVOKED)

    def error(self, detail: str) -> None:
        self.session.send(Error(detail=detail))

    def on_idle(self) -> SocketCloseError:  # idle_s is None: never called
        raise AssertionError("the live socket has no idle limit")

    async def close(self) -> None:
        if self.microphone is not None:
            await self.microphone.close()
        if self.path is not None:
            await self.path.conversation.join()
            await self.path.conversation.settle_captions()
