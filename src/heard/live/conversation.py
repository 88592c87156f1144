"""One live conversation: transcript events in; captions and prepared memory context out.

The async shell over the pure cores. Per speaker, a ``TranscriptStabilizer`` keeps the
stable prefix and the speculation gate; each step then goes to the ``Captions`` stage and to
a ``heard.live.prefetcher.Prefetcher``, which carries out what
``heard.transcript.prefetch.PrefetchPolicy`` decides (speculate on a partial; at the final,
reuse the speculation or retrieve again), publishes each turn's ``PreparedContext`` unless
stale, and remembers the finals in order. Partials only ever prefetch; only finals become
evidence.

Caption units come from the ``Captions`` stage, fed every step and ticked every ``TICK_MS``
by a timer on the conversation's clock (dwell and pause releases fire while nobody speaks);
``aclose`` settles the captions. ``heard.live.session.live_session`` builds one over a
user's memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Coroutine
from datetime import UTC, datetime

from heard.live.prefetcher import Prefetcher
from heard.live.prepared import LiveStats, PreparedContext, Retriever
from heard.memory.evidence import Evidence
from heard.release.captions import TICK_MS, Captions
from heard.release.tracker import SELECTABLE_MODES, ReleaseMode, ReleaseUnit
from heard.release.translation import TranslationQueue
from heard.transcript.events import TranscriptEvent
from heard.transcript.prefetch import REUSE_JACCARD, PrefetchPolicy
from heard.transcript.speculation import GateConfig
from heard.transcript.stabilizer import TranscriptStabilizer, TranscriptStep
from heard.transcript.turns import TurnId

__all__ = ["Conversation"]


class Conversation:
    """Feed it transcript events (``await feed(event)``); read ``contexts`` or pass ``on_context``.

    ``retriever`` may be None (captions only). ``clock`` returns milliseconds; ``wall_clock``
    the date and time a final is remembered with (default: now, UTC).
    ``release_mode`` is what a user may choose (``SELECTABLE_MODES``: relaxed, balanced) or
    None (no captions); any other name, Live included, raises ``UnknownNameError``.
    """

    def __init__(
        self,
        retriever: Retriever | None = None,
        *,
        conversation_id: str = "live",
        gate: GateConfig | None = None,
        release_mode: ReleaseMode | str | None = ReleaseMode.BALANCED,
        prefetch: bool = True,
        reuse_jaccard: float = REUSE_JACCARD,
        clock: Callable[[], float] | None = None,
        sleep: Callable[[float], Coroutine[object, object, None]] = asyncio.sleep,
        on_context: Callable[[PreparedContext], None] | None = None,
        on_release: Callable[[ReleaseUnit], None] | None = None,
        translations: TranslationQueue | None = None,
        on_remembered: Callable[[str, Evidence, str | None], None] | None = None,
        language: str = "",
        wall_clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.gate = gate or GateConfig()
        self.stabilizer = TranscriptStabilizer(gate=self.gate)
        if release_mode is not None:
            # a user's choice (relaxed, balanced); Live is the measured reference, which
            # benchmarks reach through the Captions stage itself, not through a conversation
            release_mode = SELECTABLE_MODES[str(release_mode)]
        self.release_mode: ReleaseMode | None = release_mode
        self._clock = clock or (lambda: time.perf_counter() * 1000.0)
        self._sleep = sleep
        self.captions: Captions | None = None
        """The captions stage (None without a release mode)."""
        if release_mode is not None:
            self.captions = Captions(release_mode, translations=translations, on_unit=on_release)
        self._timer: asyncio.Task[None] | None = None
        self._heard_at: tuple[int, float] | None = None  # (stream t_ms, clock ms) of the latest
        speculate = prefetch and retriever is not None
        self.policy = PrefetchPolicy(self.gate, reuse_jaccard, speculate=speculate)
        self.prefetcher = Prefetcher(
            retriever,
            self.policy,
            conversation_id=conversation_id,
            clock=self._clock,
            # when a final was said, as evidence keeps it (``heard.testing.FakeClock`` in tests)
            wall_clock=wall_clock or (lambda: datetime.now(UTC)),
            language=language,
            on_context=on_context,
            # told (turn id, evidence, None or what went wrong) once a final is stored, in order
            on_remembered=on_remembered,
        )

    @property
    def retriever(self) -> Retriever | None:
        return self.prefetcher.retriever

    @property
    def conversation_id(self) -> str:
        return self.prefetcher.conversation_id

    @property
    def language(self) -> str:
        """The language spoken, when heard was told it: its finals are remembered in it."""
        return self.prefetcher.language

    @property
    def prefetch(self) -> bool:
        """Partials speculate (with a retriever); else only finals retrieve."""
        return self.policy.speculates

    @property
    def contexts(self) -> list[PreparedContext]:
        """Every context published, in order."""
        return self.prefetcher.contexts

    @property
    def latest(self) -> PreparedContext | None:
        return self.prefetcher.latest

    @property
    def sticky(self) -> list[str]:
        """Pages injected on earlier turns: carried into every later retrieval."""
        return self.prefetcher.sticky

    @property
    def errors(self) -> list[str]:
        return self.prefetcher.errors

    @property
    def stats(self) -> LiveStats:
        return self.prefetcher.stats

    # -- events ---------------------------------------------------------------------------

    async def feed(self, event: TranscriptEvent) -> TranscriptStep:
        """Take one event; returns the transcript step (stable/unstable text, gate decision)."""
        self._heard_at = (event.t_ms, self._clock())
        step = self.stabilizer.on_event(event)
        if self.captions is not None:
            self.captions.on_step(step)
            if self._timer is None:
                self._timer = asyncio.ensure_future(self._tick())
        decision = self.policy.on_transcript(step)
        self.prefetcher.act(step, decision, event.text)
        return step

    def interrupt(self, speaker: str | None = None) -> int:
        """The reply being prepared is no longer wanted: cancel its work, publish nothing of it.

        Affects ``speaker``'s work, or every speaker's: speculations of open turns and
        retrievals for finished turns. An open turn goes on (its later final gets a fresh
        retrieval); finals already heard still become evidence. Returns the tasks cancelled.
        """
        return self.prefetcher.interrupt(speaker)

    async def wait_context(
        self, turn: TurnId | str, timeout: float | None = None
    ) -> PreparedContext | None:
        """The context prepared for ``turn`` (after its final was fed), or None if it was
        dropped (stale, interrupted) or not ready within ``timeout`` seconds."""
        return await self.prefetcher.wait_context(turn, timeout)

    async def join(self) -> None:
        """Wait for every retrieval, publication and remembering in flight."""
        await self.prefetcher.join()

    async def aclose(self) -> None:
        """Stop: cancel what is in flight, then settle the captions."""
        self.interrupt()
        await self.join()
        await self.settle_captions()

    async def settle_captions(self) -> None:
        """The stream ended: stop the captions' timer, take back words released but never
        confirmed by a final, and finish their translations."""
        if self._timer is not None:
            self._timer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._timer
            self._timer = None
        if self.captions is not None:
            self.captions.finish(self.stream_time_ms())
            if self.captions.translations is not None:
                await self.captions.translations.close()

    def stream_time_ms(self) -> int:
        """The stream's time now: the latest event's ``t_ms`` plus the time since it came."""
        if self._heard_at is None:
            return 0
        t_ms, at = self._heard_at
        return t_ms + int(self._clock() - at)

    async def _tick(self) -> None:
        """The captions' timer: dwell and pause releases fire while nothing new is heard."""
        assert self.captions is not None
        while True:
            await self._sleep(TICK_MS / 1000)
            self.captions.tick(self.stream_time_ms())
