"""A live microphone: PCM16 in, decoded steps out, decoding never falling behind for long.

The streaming recognizer (any ``StreamingRecognizer``; faster-whisper's by default) runs in a
worker thread, one step at a time, on whatever audio has arrived; what each step decoded
goes to the microphone's one output, in order (a live socket's ``heard.live.path.LivePath``,
which takes it through the stages every protocol shares). Alone, a microphone paces itself:
when steps take longer than the audio they cover, the ``Pacer`` widens them (up to 4 s):
fewer, longer decodes, told to the caller, instead of a lag that grows without end; once
decoding keeps up again, it narrows them back. Given ``shared=True`` (``heard serve``), its
buffers are decoded by the process's ``DecodeService`` with every other stream's, which
paces all of them together.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from heard.asr.audio import SAMPLE_RATE
from heard.asr.service import shared_service
from heard.asr.streaming import StreamingRecognizer, StreamOptions, WhisperStreamingRecognizer
from heard.asr.whisper import WhisperOptions
from heard.transcript.utterances import Decoded

__all__ = [
    "DecodedOutput",
    "Microphone",
    "Pacer",
    "RecognizerFactory",
    "Recognizers",
    "shared_whisper",
    "whisper_recognizer",
]

RecognizerFactory = Callable[[str], StreamingRecognizer]
"""Makes one speaker's recognizer (called in a worker thread: loading a model may take a
while)."""
DecodedOutput = Callable[[Sequence[Decoded], int], Awaitable[None]]
"""Where a microphone's steps go: what one step decoded (never empty) and the stream's time
then (ms of audio received)."""
Recognizers = Callable[[WhisperOptions, StreamOptions | None], RecognizerFactory]
"""Makes a stream's recognizers from the model's options and the stream's: what a server's
live sockets are given (``shared_whisper`` by default)."""


def whisper_recognizer(
    whisper: WhisperOptions | None = None,
    stream: StreamOptions | None = None,
    *,
    shared: bool = False,
) -> RecognizerFactory:
    """faster-whisper's streaming recognizer; ``shared`` decodes on the process's
    ``DecodeService`` with every other shared stream (``heard serve``)."""

    def start(speaker: str) -> StreamingRecognizer:
        service = shared_service(whisper or WhisperOptions()) if shared else None
        return WhisperStreamingRecognizer(
            speaker=speaker, whisper=whisper, options=stream, decoder=service
        )

    return start


def shared_whisper(whisper: WhisperOptions, stream: StreamOptions | None) -> RecognizerFactory:
    """faster-whisper's recognizers on the process's shared decode service (``heard serve``)."""
    return whisper_recognizer(whisper, stream, shared=True)


log = logging.getLogger("heard.asr.microphone")


NARROW_BELOW_RTF = 0.45
"""A step this much faster than its audio, ``2 x patience`` times in a row, halves the step
again. Under 0.5, so that the halved step (about the same decode on half the audio) still
keeps up: the pacer does not flip back and forth."""


_STEPS = ThreadPoolExecutor(max_workers=256, thread_name_prefix="heard-microphone")
"""Where microphones' steps run. Not the event loop's default pool (cores + 4 threads): a step
waiting on the shared decode service holds its thread, and every stream must be able to wait
at once, or the streams past the pool's size would wait for a thread instead of a round."""

T = TypeVar("T")


async def _in_step_thread(call: Callable[..., T], *args: object) -> T:
    return await asyncio.get_running_loop().run_in_executor(_STEPS, call, *args)


class Pacer:
    """How often to decode: after ``patience`` steps in a row that took longer than the audio
    they covered, double the step (up to ``max_ms``); after twice as many in a row under
    NARROW_BELOW_RTF, halve it again (down to the first step), so one slow moment (a model
    loading, a neighbour's burst) does not slow a stream for the rest of its life. Returns the
    new step, or None."""

    def __init__(self, chunk_ms: int = 1000, max_ms: int = 4000, patience: int = 2) -> None:
        self.chunk_ms, self.max_ms, self.patience = chunk_ms, max_ms, patience
        self.min_ms = chunk_ms
        self.slow_steps = 0
        self.fast_steps = 0
        self.last_rtf = 0.0

    def observe(self, spent_s: float, covered_s: float) -> int | None:
        self.last_rtf = spent_s / max(covered_s, 1e-3)
        self.slow_steps = self.slow_steps + 1 if self.last_rtf > 1.0 else 0
        self.fast_steps = self.fast_steps + 1 if self.last_rtf < NARROW_BELOW_RTF else 0
        if self.slow_steps >= self.patience and self.chunk_ms < self.max_ms:
            self.slow_steps = 0
            self.chunk_ms = min(self.max_ms, self.chunk_ms * 2)
            return self.chunk_ms
        if self.fast_steps >= 2 * self.patience and self.chunk_ms > self.min_ms:
            self.fast_steps = 0
            self.chunk_ms = max(self.min_ms, self.chunk_ms // 2)
            return self.chunk_ms
        return None


class Microphone:
    """One speaker's audio: ``add`` PCM16 (16 kHz mono, little-endian) as it arrives, ``end``
    to flush the last final, ``close`` to decode what is left and stop. What each step
    decoded goes to ``output``, in order (None: nowhere); ``on_degraded(chunk_ms, rtf)`` says
    the steps widened (or narrowed back). ``recognizer`` makes the speaker's recognizer (default:
    ``whisper_recognizer()``, tiny.en on this stream's own)."""

    def __init__(
        self,
        speaker: str,
        output: DecodedOutput | None,
        on_degraded: Callable[[int, float], None],
        recognizer: RecognizerFactory | None = None,
    ) -> None:
        self.speaker = speaker
        self._make = recognizer or whisper_recognizer()
        self.output = output
        self.on_degraded = on_degraded
        self.pending = bytearray()
        self.received = 0  # samples
        self._recognizer: StreamingRecognizer | None = None
        self._wake = asyncio.Event()
        self._ending = False
        self._closing = False
        self._flushed: list[asyncio.Future[None]] = []
        self._pacer = Pacer()
        self.handed_on = 0
        """Samples of audio whose decoding has been handed on (what it found, if anything)."""
        self._task = asyncio.create_task(self._run())

    def add(self, pcm: bytes) -> None:
        self.pending += pcm
        self._wake.set()

    def end(self) -> None:
        self._ending = True
        self._wake.set()

    async def flush(self) -> None:
        """Decode what has arrived, and the last final; return once they are handed on."""
        if self._task.done():  # stopped (closed, or its recognizer failed): nothing to wait for
            return
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._flushed.append(done)
        self.end()
        await done

    async def close(self) -> None:
        """Decode what is left, then stop."""
        self._closing = True
        self.end()
        await self._task

    async def _run(self) -> None:
        try:
            await self._loop()
        finally:  # whatever ended the loop, nobody waits on a flush forever
            for done in self._flushed:
                if not done.done():
                    done.set_result(None)

    async def _loop(self) -> None:
        import numpy as np

        while True:
            await self._wake.wait()
            self._wake.clear()
            if self.pending:
                pcm, self.pending = bytes(self.pending), bytearray()
                samples = (np.frombuffer(pcm, dtype="<i2") / 32768).astype(np.float32)
                self.received += len(samples)
                if self._recognizer is None:
                    self._recognizer = await _in_step_thread(self._make, self.speaker)
                shared = self._recognizer.paced_step()
                if shared is not None:
                    self._follow(*shared)
                decoded_before = self._recognizer.decoded_to
                started = time.perf_counter()
                found = await self._step(self._recognizer.push, samples)
                spent = time.perf_counter() - started
                if shared is None and self._recognizer.decoded_to != decoded_before:
                    # a step ran: did it take longer than the audio that arrived since the last?
                    covered = (self._recognizer.decoded_to - decoded_before) / SAMPLE_RATE
                    self._pace(spent, covered)
                await self._hand_on(found)
                self.handed_on = self._recognizer.decoded_to
            if self._ending and not self.pending:
                if self._recognizer is not None:
                    await self._hand_on(await self._step(self._recognizer.finish))
                self._ending = False
                for done in self._flushed:
                    if not done.done():
                        done.set_result(None)
                self._flushed.clear()
                if self._closing:
                    return

    async def _step(self, call: Callable[..., list[Decoded]], *args: object) -> list[Decoded]:
        """One recognizer step; one that fails is logged and its audio skipped: the stream
        goes on with the next."""
        try:
            return await _in_step_thread(call, *args)
        except Exception:
            log.exception("microphone %s: a decode step failed; its audio is skipped", self.speaker)
            return []

    def _follow(self, step: int, load: float) -> None:
        """Decode at the shared service's step, and say so when it moved."""
        assert self._recognizer is not None
        if step != self._recognizer.chunk_ms:
            self._recognizer.chunk_ms = step
            self.on_degraded(step, load)

    def _pace(self, spent_s: float, covered_s: float) -> None:
        assert self._recognizer is not None
        step = self._pacer.observe(spent_s, covered_s)
        if step is not None:
            self._recognizer.chunk_ms = step
            self.on_degraded(step, round(self._pacer.last_rtf, 2))

    async def _hand_on(self, found: list[Decoded]) -> None:
        if found and self.output is not None:
            await self.output(found, self.received * 1000 // SAMPLE_RATE)
