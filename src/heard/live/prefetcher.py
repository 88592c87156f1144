"""The async side of a live conversation's memory: prefetching, preparing, remembering.

A ``Prefetcher`` carries out what ``heard.transcript.prefetch.PrefetchPolicy`` decided on
each transcript step (``act``): a speculative retrieval on a partial (a newer one cancels
the older), and at the final either the speculation reused or a fresh retrieval. Partials
only ever prefetch; only finals become evidence.

The result is published as a ``PreparedContext`` for the next reply, with its provenance and
how many milliseconds after the final it was ready, unless a newer turn of that speaker (or
an interruption) began meanwhile: stale work is dropped by a ``GenerationGuard``, never
published. A failed retrieval yields an empty context with the error recorded; the
conversation goes on. Finals are remembered in the order they were heard (a turn's own final
is left out of its context, so a question does not recall itself).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from datetime import datetime

from heard.live.prepared import LiveStats, PreparedContext, Retrieved, Retriever, Source
from heard.memory.evidence import Evidence
from heard.transcript.events import EventKind
from heard.transcript.guard import GenerationGuard
from heard.transcript.prefetch import Decision, PrefetchPolicy, TurnPlan
from heard.transcript.stabilizer import TranscriptStep
from heard.transcript.turns import TurnId

__all__ = ["Prefetcher"]

_WAITERS_KEPT = 64
"""Waiters of this many recent turns are kept (a late ``wait_context`` still finds them)."""


@dataclass(slots=True)
class _Turn:
    id: TurnId
    generation: int
    """Its publication guard's, when it opened (an interruption moves it on)."""
    task: asyncio.Task[Retrieved] | None = None
    """Its pending speculation."""


class Prefetcher:
    """Memory work for one conversation; ``retriever`` None: none (finals still answer
    whoever waits for their turn's context, with None). ``clock`` returns milliseconds;
    ``wall_clock`` the date and time a final is remembered with."""

    def __init__(
        self,
        retriever: Retriever | None,
        policy: PrefetchPolicy,
        *,
        conversation_id: str,
        clock: Callable[[], float],
        wall_clock: Callable[[], datetime],
        language: str = "",
        on_context: Callable[[PreparedContext], None] | None = None,
        on_remembered: Callable[[str, Evidence, str | None], None] | None = None,
    ) -> None:
        self.retriever = retriever
        self.policy = policy
        """Told of interruptions (``Conversation`` asks it for each step's decision)."""
        self.conversation_id = conversation_id
        self.language = language
        self._clock = clock
        self._wall_clock = wall_clock
        self._on_context = on_context
        self._on_remembered = on_remembered
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

    def act(self, step: TranscriptStep, decision: Decision, text: str) -> None:
        """Carry out the policy's ``decision`` on ``step`` (``text``: its event's): start a
        speculation, or prepare and remember a final."""
        if self.retriever is None:
            if step.kind is EventKind.FINAL:
                self._settle(str(step.turn_id), None)
            return
        turn = self._turns.get(step.speaker)
        if turn is None or turn.id != step.turn_id:
            if turn is not None and turn.task is not None and not turn.task.done():
                turn.task.cancel()  # the previous turn's speculation can no longer be used
            turn = self._turns[step.speaker] = _Turn(
                step.turn_id, self._guard(step.speaker).advance()
            )
            self.stats.turns += 1
        if step.kind is EventKind.FINAL:
            self._finish(turn, step, decision, text)
        elif speculation := decision.speculation:
            self.stats.speculations += 1
            self.stats.pause_speculations += speculation.pause
            if turn.task is not None and not turn.task.done():
                turn.task.cancel()
            turn.task = asyncio.ensure_future(
                self.retriever.retrieve(speculation.query, tuple(self.sticky))
            )
            # a speculation nobody awaits must not log "exception never retrieved"
            turn.task.add_done_callback(_consume)

    def interrupt(self, speaker: str | None = None) -> int:
        """Cancel ``speaker``'s work (or everyone's) and publish nothing of it; see
        ``Conversation.interrupt``. Returns the tasks cancelled."""
        names = [speaker] if speaker is not None else list(self._guards)
        cancelled = 0
        for name in names:
            generation = self._guard(name).advance()
            turn = self._turns.get(name)
            if turn is not None:
                running = turn.task is not None and not turn.task.done()
                self.policy.interrupt(name, running)
                turn.generation = generation
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
        """The context prepared for ``turn``, or None (dropped, or not ready in time)."""
        waiter = self._waiter(str(turn))
        try:
            return await asyncio.wait_for(asyncio.shield(waiter), timeout)
        except TimeoutError:
            return None

    async def join(self) -> None:
        """Wait for every retrieval, publication and remembering in flight."""
        # by what is not done, not by what is left in _tasks: a task leaves it in a callback,
        # and since Python 3.12 gather over finished tasks returns without yielding to the
        # loop that would run it (this loop then spun for ever, holding the thread)
        while pending := [task for task in self._tasks if not task.done()]:
            await asyncio.gather(*pending, return_exceptions=True)
        if self._remembering is not None:
            await asyncio.gather(self._remembering, return_exceptions=True)

    # -- internals ------------------------------------------------------------------------

    def _waiter(self, turn: str) -> asyncio.Future[PreparedContext | None]:
        waiter = self._waiters.get(turn)
        if waiter is None:
            waiter = self._waiters[turn] = asyncio.get_running_loop().create_future()
            # keep only recent turns' waiters
            while len(self._waiters) > _WAITERS_KEPT:
                self._waiters.pop(next(iter(self._waiters)))
        return waiter

    def _settle(self, turn: str, context: PreparedContext | None) -> None:
        waiter = self._waiter(turn)
        if not waiter.done():
            waiter.set_result(context)

    def _guard(self, speaker: str) -> GenerationGuard:
        return self._guards.setdefault(speaker, GenerationGuard())

    def _spawn(self, coro: Coroutine[object, object, None], speaker: str) -> asyncio.Task[None]:
        task = asyncio.ensure_future(coro)
        self._tasks[task] = speaker
        task.add_done_callback(lambda t: self._tasks.pop(t, None))
        return task

    def _finish(self, turn: _Turn, step: TranscriptStep, decision: Decision, text: str) -> None:
        arrived = self._clock()
        speculation = turn.task
        plan = decision.plan
        # a speculation somebody else cancelled cannot answer the final: it is wasted, and the
        # final retrieves again (as the policy counts a speculation it does not reuse)
        reuse = decision.reuse and speculation is not None and not speculation.cancelled()
        if decision.reuse and not reuse:
            plan.wasted += 1
            plan.retrievals += 1
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
        query = plan.query if reuse else text
        task = self._spawn(
            self._prepare(turn, plan, evidence, speculation if reuse else None, query, arrived),
            step.speaker,
        )
        turn_name = str(turn.id)
        # an interrupted preparation still answers whoever waits for this turn's context
        task.add_done_callback(lambda t: self._settle(turn_name, None) if t.cancelled() else None)
        self._turns.pop(step.speaker, None)

    async def _prepare(
        self,
        turn: _Turn,
        plan: TurnPlan,
        evidence: Evidence,
        speculation: asyncio.Task[Retrieved] | None,
        query: str,
        arrived: float,
    ) -> None:
        """Retrieve (or await the speculation reused) for the final ``evidence`` says; publish
        it unless stale, and answer whoever waits for the turn's context."""
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
        waiter, guard = self._waiter(context.turn), self._guard(evidence.speaker)
        published = guard.publish_if_current(turn.generation, lambda: self._publish(context))
        self.stats.stale_dropped += not published
        if not waiter.done():
            waiter.set_result(context if published else None)

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
