"""One live conversation: transcript events in; captions and prepared memory context out.

The async shell over two pure cores. Per speaker, a ``TranscriptStabilizer`` keeps the
stable prefix and the speculation gate; ``heard.transcript.prefetch.PrefetchPolicy``
decides when to speculate (a newer speculation cancels the older), and at the final
whether to reuse the speculation or retrieve again. Partials only ever prefetch; only
finals become evidence.

The result is published as a ``PreparedContext`` for the next reply, with its
provenance and how many milliseconds after the final it was ready, unless a
newer turn of that speaker (or an interruption) began meanwhile: stale work
is dropped by a ``GenerationGuard``, never published. A failed retrieval yields
an empty context with the error recorded; the conversation goes on.

Finals are remembered in the order they were heard (a turn's own final is left out of its
context, so a question does not recall itself). Caption units come from the ``Captions``
stage, fed every step and ticked every ``TICK_MS`` by a timer on the conversation's clock
(dwell and pause releases fire while nobody speaks); ``aclose`` settles the captions.
``heard.live.session.live_session`` builds one over a user's memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from datetime import UTC, datetime

from heard.live.prepared import LiveStats, PreparedContext, Retrieved, Retriever, Source
from heard.memory.evidence import Evidence
from heard.release.captions import TICK_MS, Captions
from heard.release.tracker import SELECTABLE_MODES, ReleaseMode, ReleaseUnit
from heard.release.translation import TranslationQueue
from heard.transcript.events import EventKind, TranscriptEvent
from heard.transcript.guard import GenerationGuard
from heard.transcript.prefetch import REUSE_JACCARD, PrefetchPolicy, TurnPlan
from heard.transcript.speculation import GateConfig
from heard.transcript.stabilizer import TranscriptStabilizer, TranscriptStep
from heard.transcript.turns import TurnId

__all__ = ["Conversation"]


@dataclass(slots=True)
class _Turn:
    id: TurnId
    plan: TurnPlan
    task: asyncio.Task[Retrieved] | None = None
    """The plan's pending speculation."""


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
        self.retriever = retriever
        self.language = language
        """The language spoken, when heard was told it: its finals are remembered in it."""
        self._wall_clock = wall_clock or (lambda: datetime.now(UTC))
        """When a final was said, as evidence keeps it (``heard.testing.FakeClock`` in tests)."""
        self.conversation_id = conversation_id
        self.gate = gate or GateConfig()
        self.stabilizer = TranscriptStabilizer(gate=self.gate)
        self.policy = PrefetchPolicy(self.gate, reuse_jaccard)
        if release_mode is not None:
            # a user's choice (relaxed, balanced); Live is the measured reference, which
            # benchmarks reach through the Captions stage itself, not through a conversation
            release_mode = SELECTABLE_MODES[str(release_mode)]
        self.release_mode: ReleaseMode | None = release_mode
        self.prefetch = prefetch
        self._clock = clock or (lambda: time.perf_counter() * 1000.0)
        self._sleep = sleep
        self._on_context = on_context
        self._on_remembered = on_remembered
        """Told (turn id, evidence, None or what went wrong) once a final is stored, in order."""
        self.captions: Captions | None = None
        """The captions stage (None without a release mode)."""
        if release_mode is not None:
            self.captions = Captions(release_mode, translations=translations, on_unit=on_release)
        self._timer: asyncio.Task[None] | None = None
        self._heard_at: tuple[int, float] | None = None  # (stream t_ms, clock ms) of the latest
        self._guards: dict[str, GenerationGuard] = {}
        self._turns: dict[str, _Turn] = {}
        self._tasks: dict[asyncio.Task[None], str] = {}  # in flight -> its speaker
        self._remembering: asyncio.Future[None] | None = None  # the latest final being stored
        self._waiters: dict[str, asyncio.Future[PreparedContext | None]] = {}
        self.sticky: list[str] = []
        """Pages injected on earlier turns: carried into every later retrieval."""
        self.contexts: list[PreparedContext] = []
        self.latest: PreparedContext | None = None
        self.errors: list[str] = []
        self.stats = LiveStats()

    # -- events ---------------------------------------------------------------------------

    async def feed(self, event: TranscriptEvent) -> TranscriptStep:
        """Take one event; returns the transcript step (stable/unstable text, gate decision)."""
        step = self.stabilizer.on_event(event)
        if self.captions is not None:
            self._heard_at = (event.t_ms, self._clock())
            self.captions.on_step(step)
            if self._timer is None:
                self._timer = asyncio.ensure_future(self._tick())
        if self.retriever is None:
            if event.kind is EventKind.FINAL:
                self._settle(str(step.turn_id), None)
            return step
        turn = self._turn_for(step)
        if event.kind is EventKind.FINAL:
            self._finish(turn, step, event.text)
        elif self.prefetch and (speculation := self.policy.on_partial(turn.plan, step)):
            self.stats.speculations += 1
            self.stats.pause_speculations += speculation.pause
            if turn.task is not None and not turn.task.done():
                turn.task.cancel()
            turn.task = asyncio.ensure_future(
                self.retriever.retrieve(speculation.query, tuple(self.sticky))
            )
            # a speculation nobody awaits must not log "exception never retrieved"
            turn.task.add_done_callback(_consume)
        return step

    def interrupt(self, speaker: str | None = None) -> int:
        """The reply being prepared is no longer wanted: cancel its work, publish nothing of it.

        Affects ``speaker``'s work, or every speaker's: speculations of open turns and
        retrievals for finished turns. An open turn goes on (its later final gets a fresh
        retrieval); finals already heard still become evidence. Returns the tasks cancelled.
        """
        names = [speaker] if speaker is not None else list(self._guards)
        cancelled = 0
        for name in names:
            generation = self._guard(name).advance()
            turn = self._turns.get(name)
            if turn is not None:
                running = turn.task is not None and not turn.task.done()
                self.policy.on_interrupt(turn.plan, generation, running)
                if running:
                    assert turn.task is not None
                    turn.task.cancel()
                    cancelled += 1
                turn.task = None
        for task, owner in list(self._tasks.items()):
            if owner in names and not task.done():
                task.cancel()
                cancelled += 1
        self.stats.cancelled += cancelled
        return cancelled

    async def wait_context(
        self, turn: TurnId | str, timeout: float | None = None
    ) -> PreparedContext | None:
        """The context prepared for ``turn`` (after its final was fed), or None if it was
        dropped (stale, interrupted) or not ready within ``timeout`` seconds."""
        waiter = self._waiter(str(turn))
        try:
            return await asyncio.wait_for(asyncio.shield(waiter), timeout)
        except TimeoutError:
            return None

    def _waiter(self, turn: str) -> asyncio.Future[PreparedContext | None]:
        waiter = self._waiters.get(turn)
        if waiter is None:
            waiter = self._waiters[turn] = asyncio.get_running_loop().create_future()
        return waiter

    def _settle(self, turn: str, context: PreparedContext | None) -> None:
        waiter = self._waiter(turn)
        if not waiter.done():
            waiter.set_result(context)
        # keep only recent turns' waiters
        while len(self._waiters) > 64:
            self._waiters.pop(next(iter(self._waiters)))

    async def join(self) -> None:
        """Wait for every retrieval, publication and remembering in flight."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
        if self._remembering is not None:
            await asyncio.gather(self._remembering, return_exceptions=True)

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

    # -- internals ------------------------------------------------------------------------

    def _guard(self, speaker: str) -> GenerationGuard:
        return self._guards.setdefault(speaker, GenerationGuard())

    def _turn_for(self, step: TranscriptStep) -> _Turn:
        turn = self._turns.get(step.speaker)
        if turn is None or turn.id != step.turn_id:
            if turn is not None and turn.task is not None and not turn.task.done():
                turn.task.cancel()  # the previous turn's speculation can no longer be used
            turn = _Turn(step.turn_id, TurnPlan(self._guard(step.speaker).advance()))
            self._turns[step.speaker] = turn
            self.stats.turns += 1
        return turn

    def _spawn(self, coro: Coroutine[object, object, None], speaker: str) -> asyncio.Task[None]:
        task = asyncio.ensure_future(coro)
        self._tasks[task] = speaker
        task.add_done_callback(lambda t: self._tasks.pop(t, None))
        return task

    def _finish(self, turn: _Turn, step: TranscriptStep, text: str) -> None:
        arrived = self._clock()
        speculation = turn.task
        usable = speculation is not None and not speculation.cancelled()
        reuse = self.policy.on_final(turn.plan, step, usable)
        if speculation is not None and not reuse and not speculation.done():
            speculation.cancel()
        turn.task = None
        evidence = Evidence(
            id=f"{self.conversation_id}:{turn.id}",
            speaker=step.speaker,
            text=text,
            conversation=self.conversation_id,
            t=self._wall_clock(),  # when it was said: recall favours it for questions naming days
            language=self.language,
        )
        self._remembering = asyncio.ensure_future(
            self._remember_after(self._remembering, evidence, str(turn.id))
        )
        query = turn.plan.query if reuse else text
        task = self._spawn(
            self._prepare(turn, evidence, speculation if reuse else None, query, arrived),
            step.speaker,
        )
        turn_name = str(turn.id)
        # an interrupted preparation still answers whoever waits for this turn's context
        task.add_done_callback(lambda t: self._settle(turn_name, None) if t.cancelled() else None)
        self._turns.pop(step.speaker, None)

    async def _prepare(
        self,
        turn: _Turn,
        evidence: Evidence,
        speculation: asyncio.Task[Retrieved] | None,
        query: str,
        arrived: float,
    ) -> None:
        """Retrieve (or await the speculation reused) for the final ``evidence`` says."""
        assert self.retriever is not None
        final = evidence.text
        source: Source = "speculative" if speculation is not None else "final"
        error = None
        try:
            if speculation is not None:
                found = await speculation
            else:
                found = await self.retriever.retrieve(query, tuple(self.sticky))
        except asyncio.CancelledError:
            raise
        except Exception as e:  # noqa: BLE001 - a failed retrieval must not end the conversation
            found, source, query = Retrieved(), "none", final
            error = f"{type(e).__name__}: {e}"
            self.errors.append(f"{turn.id}: {error}")
            self.stats.failed += 1
        plan = turn.plan
        context = PreparedContext(
            str(turn.id),
            evidence.speaker,
            query,
            final,
            source,
            found.pages,
            tuple(r for r in found.evidence if r.id != evidence.id),
            self._clock() - arrived,
            plan.retrievals,
            plan.wasted,
            error,
        )
        if source == "speculative":
            self.stats.reused += 1
        elif source == "final":
            self.stats.fresh += 1
        self.stats.wasted += plan.wasted
        if self._guard(evidence.speaker).publish_if_current(
            plan.generation, lambda: self._publish(context)
        ):
            self._settle(context.turn, context)
        else:
            self.stats.stale_dropped += 1
            self._settle(context.turn, None)

    async def _remember_after(
        self, previous: asyncio.Future[None] | None, evidence: Evidence, turn: str
    ) -> None:
        """Remember ``evidence`` once the finals heard before it are remembered; then say so."""
        assert self.retriever is not None
        if previous is not None:
            with contextlib.suppress(BaseException):
                await previous
        problem: str | None = None
        try:
            await self.retriever.remember(evidence)
        except Exception as e:  # noqa: BLE001 - memory trouble must not end the conversation
            problem = f"{type(e).__name__}: {e}"
            self.errors.append(f"{evidence.id}: not remembered: {problem}")
        if self._on_remembered is not None:
            self._on_remembered(turn, evidence, problem)

    def _publish(self, context: PreparedContext) -> None:
        self.contexts.append(context)
        self.latest = context
        self.sticky.extend(p for p in context.pages if p not in self.sticky)
        if self._on_context is not None:
            self._on_context(context)


def _consume(task: asyncio.Task[Retrieved]) -> None:
    if not task.cancelled():
        task.exception()
