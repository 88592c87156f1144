"""One live path for every socket: from what a recognizer decoded to what a codec sends.

Each live socket's microphone (``heard.asr.microphone``) hands what each step decoded to its
speaker's ``LivePath``, whatever the protocol (heard's ``/v1/live``, Deepgram's
``/v1/listen``, OpenAI's ``/v1/realtime``). The path runs the same stages for all of them,
in order:

1. **the token**: a final goes on only while the socket's token is valid (``admit_final``);
   once it is revoked nothing more goes on;
2. **commits**: each ``Decoded`` (words committed inside speech, the endpoint, the partial)
   goes to the codec as it was decoded: ``LiveOutput.decoded``;
3. **utterances**: the commits gather into partials and sentence finals
   (``heard.transcript.utterances.Utterances``);
4. **stabilizer and release**: each of those events goes through the conversation
   (``heard.live.conversation.Conversation``: the stable prefix, then the caption units of
   its release mode, and memory on ``/v1/live``); the codec gets the step
   (``LiveOutput.stabilized``), then the units that step released (``released``). Units a
   timer releases while nobody speaks go to the codec at once.

A protocol differs only in its codec: the ``LiveOutput`` it implements says which stages'
outputs become its frames.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from heard.live.conversation import Conversation
from heard.release.tracker import ReleaseUnit
from heard.transcript.events import EventKind, TranscriptEvent
from heard.transcript.stabilizer import TranscriptStep
from heard.transcript.utterances import Decoded, Utterances

__all__ = ["Admission", "LiveOutput", "LivePath", "Stages", "transcript_only"]


class Admission(Protocol):
    """Who may still be heard: the socket's session (``heard.server.session.Session``)."""

    revoked: bool

    async def admit_final(self) -> bool:
        """Whether the token is still valid (a revoked one ends the socket)."""
        ...


class LiveOutput:
    """What a codec makes of the stages' outputs; each says nothing unless it overrides it."""

    async def decoded(self, d: Decoded) -> None:
        """A decode step: committed words, an endpoint, or the partial."""

    def stabilized(self, step: TranscriptStep) -> None:
        """An utterance event through the stabilizer: the speaker's stable and unstable text."""

    def released(self, unit: ReleaseUnit) -> None:
        """Caption words released (after the step that released them, or on a timer)."""


Stages = Callable[[Callable[[ReleaseUnit], None]], Conversation]
"""Builds a path's conversation, given where its caption units go."""


def transcript_only(on_release: Callable[[ReleaseUnit], None]) -> Conversation:
    """The stabilizer alone: for a protocol with no caption frames and no memory."""
    return Conversation(release_mode=None, prefetch=False, on_release=on_release)


class LivePath:
    """One speaker's stream through the stages (the module doc): ``take`` is its
    microphone's output; ``feed`` takes an utterance event a client sent itself."""

    def __init__(
        self,
        speaker: str,
        output: LiveOutput,
        admission: Admission,
        stages: Stages = transcript_only,
    ) -> None:
        self.speaker = speaker
        self.output = output
        self.admission = admission
        self.utterances = Utterances(speaker)
        self._held: list[ReleaseUnit] | None = None
        self.conversation = stages(self._released)

    async def take(self, found: Sequence[Decoded], t_ms: int) -> None:
        """What one recognizer step decoded, stamped ``t_ms`` (ms of audio received)."""
        for d, events in self.utterances.step(found, t_ms):
            if self.admission.revoked:
                return
            if d.kind is EventKind.FINAL and not await self.admission.admit_final():
                return  # revoked: the socket is closing
            await self.output.decoded(d)
            for event in events:
                await self._stage(event)

    async def feed(self, event: TranscriptEvent) -> bool:
        """An utterance event from the client; a final only while the token is valid
        (False: it was revoked, and the socket is ending)."""
        if event.kind is EventKind.FINAL and not await self.admission.admit_final():
            return False
        await self._stage(event)
        return True

    async def _stage(self, event: TranscriptEvent) -> None:
        self._held = []
        try:
            step = await self.conversation.feed(event)
        finally:
            held, self._held = self._held, None
        self.output.stabilized(step)
        for unit in held:
            self.output.released(unit)

    def _released(self, unit: ReleaseUnit) -> None:
        if self._held is not None:
            self._held.append(unit)
        else:
            self.output.released(unit)
