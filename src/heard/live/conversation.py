"""One live conversation: transcript events in; captions and prepared memory context out.

Per speaker, a ``TranscriptStabilizer`` keeps the stable prefix and the speculation
gate. When the gate fires on a partial, a retrieval starts on the stable prefix
(a newer one cancels the older): seed 000 keeps a partial's last word out of it, so
that retrieval is not re-run each time the recognizer changes its mind about that
word. When the recognizer repeats a partial word for word (the speaker paused, often
at the end of the turn), it did not change its mind: the repeat is the later revision
that confirms the last word, and the pause speculates on the whole partial, before the
gate's new-content minimum is met, if it says something the last speculation did not,
and never within the gate's debounce window of the turn's last speculation
(``GateConfig.debounce_ms``; only a new strong signal or a final bypass it). Partials
only ever prefetch; only finals become evidence. When the final arrives:

* **reuse** the speculative result if the final says what was speculated on:
  the Jaccard overlap of the two content-token sets is at least
  ``REUSE_JACCARD`` (measured in ``bench/prefetch.py``; BENCHMARKS.md). A
  speculation still running is awaited rather than started again;
* otherwise **retrieve again** on the final text.

The result is published as a ``PreparedContext`` for the next reply, with its
provenance and how many milliseconds after the final it was ready, unless a
newer turn of that speaker (or an interruption) began meanwhile: stale work
is dropped by a ``GenerationGuard``, never published. A failed retrieval yields
an empty context with the error recorded; the conversation goes on.

Only finals become evidence, remembered in the order they were heard (a turn's
own final is left out of its context, so a question does not recall itself);
partials never do. Caption units come from the ``Captions`` stage, fed every step and
ticked every ``TICK_MS`` by a timer on the conversation's clock (dwell and pause releases
fire while nobody speaks); ``aclose`` settles the captions.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal, Protocol

from heard.memory.evidence import Evidence, Recalled
from heard.release.captions import TICK_MS, Captions
from heard.release.tracker import SELECTABLE_MODES, ReleaseMode, ReleaseUnit
from heard.release.translation import TranslationQueue
from heard.transcript.events import EventKind, TranscriptEvent
from heard.transcript.guard import GenerationGuard
from heard.transcript.speculation import GateConfig, GateDecision
from heard.transcript.stabilizer import TranscriptStabilizer, TranscriptStep
from heard.transcript.tokenize import content_tokens
from heard.transcript.turns import TurnId

__all__ = [
    "REUSE_JACCARD",
    "Conversation",
    "LiveStats",
    "PreparedContext",
    "Retrieved",
    "Retriever",
    "feed_at_pace",
    "reusable",
]

REUSE_JACCARD = 0.6
"""Reuse a speculation when |S & F| / |S | F| >= this, S and F being the content tokens of the
speculated stable prefix and of the final (bench/prefetch.py: the choice and its cost)."""

Source = Literal["speculative", "final", "none"]


@dataclass(frozen=True, slots=True)
class Retrieved:
    """What one retrieval found."""

    pages: tuple[str, ...] = ()
    evidence: tuple[Recalled, ...] = ()


class Retriever(Protocol):
    """Where a conversation recalls from and what it remembers into."""

    async def retrieve(self, query: str, sticky: tuple[str, ...]) -> Retrieved: ...

    async def remember(self, evidence: Evidence) -> None: ...


@dataclass(frozen=True, slots=True)
class PreparedContext:
    """Memory ready for the reply to one turn, and where it came from."""

    turn: str
    speaker: str
    query: str
    """The text retrieved for: the speculated stable prefix, or the final."""
    final: str
    source: Source
    """"speculative" (reused), "final" (retrieved on the final), "none" (failed)."""
    pages: tuple[str, ...]
    evidence: tuple[Recalled, ...]
    ready_after_final_ms: float
    """Milliseconds from the final's arrival to this context being ready."""
    retrievals: int
    """Retrievals this turn started, speculative and final."""
    wasted: int
    """Of those, the ones whose result was not used."""
    error: str | None = None

    def to_dict(self) -> dict[str, object]:
        return {
            "turn": self.turn,
            "speaker": self.speaker,
            "query": self.query,
            "final": self.final,
            "source": self.source,
            "pages": list(self.pages),
            "evidence": [
                {"id": r.id, "score": r.score, "speaker": r.speaker, "text": r.text}
                for r in self.evidence
            ],
            "ready_after_final_ms": round(self.ready_after_final_ms, 3),
            "retrievals": self.retrievals,
            "wasted": self.wasted,
            "error": self.error,
        }


@dataclass(slots=True)
class LiveStats:
    turns: int = 0
    speculations: int = 0
    pause_speculations: int = 0
    """Of the speculations, those a pause started (a partial the recognizer repeated unchanged)
    where the gate would not have: on the repeated partial, outside the debounce window."""
    reused: int = 0
    fresh: int = 0
    wasted: int = 0
    stale_dropped: int = 0
    failed: int = 0
    cancelled: int = 0


def reusable(speculated: frozenset[str], final: frozenset[str], threshold: float) -> bool:
    """The reuse rule: enough of the final's content words were speculated on, and few more."""
    if not final:
        return False
    union = speculated | final
    return len(speculated & final) / len(union) >= threshold


@dataclass(slots=True)
class _Turn:
    id: TurnId
    generation: int
    task: asyncio.Task[Retrieved] | None = None
    tokens: frozenset[str] = frozenset()
    query: str = ""
    speculated_ms: int | None = None
    """Stream time (``t_ms``) of the turn's last speculation: the debounce window's start."""
    retrievals: int = 0
    wasted: int = 0


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
        if release_mode is not None:
            # a user's choice (relaxed, balanced); Live is the measured reference, which
            # benchmarks reach through the Captions stage itself, not through a conversation
            release_mode = SELECTABLE_MODES[str(release_mode)]
        self.release_mode: ReleaseMode | None = release_mode
        self.prefetch = prefetch
        self.reuse_jaccard = reuse_jaccard
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
            self._finish(turn, event)
        elif self.prefetch:
            stable = step.hypothesis.stable_prefix
            if step.decision is GateDecision.FIRE_SIGNAL:
                self._speculate(turn, stable, event.t_ms)
            elif step.decision is GateDecision.FIRE:
                if not self._debounced(turn, event.t_ms):
                    self._speculate(turn, stable, event.t_ms)
            elif self._paused(turn, step):
                self.stats.pause_speculations += 1
                self._speculate(turn, step.hypothesis.text, event.t_ms)
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
                turn.generation = generation
                if turn.task is not None and not turn.task.done():
                    turn.task.cancel()
                    turn.wasted += 1
                    cancelled += 1
                turn.task, turn.tokens, turn.query = None, frozenset(), ""
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
            turn = _Turn(step.turn_id, self._guard(step.speaker).advance())
            self._turns[step.speaker] = turn
            self.stats.turns += 1
        return turn

    def _spawn(self, coro: Coroutine[object, object, None], speaker: str) -> asyncio.Task[None]:
        task = asyncio.ensure_future(coro)
        self._tasks[task] = speaker
        task.add_done_callback(lambda t: self._tasks.pop(t, None))
        return task

    def _debounced(self, turn: _Turn, t_ms: int) -> bool:
        """The turn speculated less than ``debounce_ms`` ago. The gate keeps this window for
        its own firings; this keeps it across them and the pauses' speculations too."""
        last = turn.speculated_ms
        return last is not None and t_ms - last < self.gate.debounce_ms

    def _paused(self, turn: _Turn, step: TranscriptStep) -> bool:
        """A pause worth a speculation the gate did not start: the recognizer gave the same
        words twice running (nothing new was heard, and it kept its last word), outside the
        debounce window, and they say something the last speculation did not.

        Measured (bench/prefetch.py's 60 questions, lexical, reuse at Jaccard 0.6): hit rate
        0.817, R@10 0.603 on the whole repeated partial, with or without the debounce; on
        its stable prefix alone (the last word left out) 0.75, 0.553, below no pause rule at
        all (0.617, 0.578): a reused speculation then lacks the final's last content word,
        which the final kept 47 times in 50."""
        hypothesis = step.hypothesis
        return (
            hypothesis.repeated
            and not hypothesis.contradiction
            and not self._debounced(turn, step.t_ms)
            and frozenset(content_tokens(hypothesis.text)) - turn.tokens != frozenset()
        )

    def _speculate(self, turn: _Turn, stable: str, t_ms: int) -> None:
        assert self.retriever is not None
        if turn.task is not None and not turn.task.done():
            turn.task.cancel()
            turn.wasted += 1
        elif turn.task is not None:
            turn.wasted += 1  # finished, and now superseded
        turn.tokens = frozenset(content_tokens(stable))
        turn.query = stable
        turn.speculated_ms = t_ms
        turn.retrievals += 1
        self.stats.speculations += 1
        turn.task = asyncio.ensure_future(self.retriever.retrieve(stable, tuple(self.sticky)))
        # a speculation nobody awaits must not log "exception never retrieved"
        turn.task.add_done_callback(_consume)

    def _finish(self, turn: _Turn, event: TranscriptEvent) -> None:
        arrived = self._clock()
        final_tokens = frozenset(content_tokens(event.text))
        speculation = turn.task
        reuse = (
            speculation is not None
            and not speculation.cancelled()
            and reusable(turn.tokens, final_tokens, self.reuse_jaccard)
        )
        if speculation is not None and not reuse:
            if not speculation.done():
                speculation.cancel()
            turn.wasted += 1
        turn.task = None
        evidence = Evidence(
            f"{self.conversation_id}:{turn.id}",
            event.speaker,
            event.text,
            self.conversation_id,
            self._wall_clock(),  # when it was said: recall favours it for a question naming the day
            language=self.language,
        )
        self._remembering = asyncio.ensure_future(
            self._remember_after(self._remembering, evidence, str(turn.id))
        )
        task = self._spawn(
            self._prepare(turn, event, speculation if reuse else None, arrived, evidence.id),
            event.speaker,
        )
        turn_name = str(turn.id)
        # an interrupted preparation still answers whoever waits for this turn's context
        task.add_done_callback(lambda t: self._settle(turn_name, None) if t.cancelled() else None)
        self._turns.pop(event.speaker, None)

    async def _prepare(
        self,
        turn: _Turn,
        event: TranscriptEvent,
        speculation: asyncio.Task[Retrieved] | None,
        arrived: float,
        own_id: str,
    ) -> None:
        assert self.retriever is not None
        source: Source
        error = None
        try:
            if speculation is not None:
                found, source, query = await speculation, "speculative", turn.query
            else:
                turn.retrievals += 1
                query = event.text
                found = await self.retriever.retrieve(query, tuple(self.sticky))
                source = "final"
        except asyncio.CancelledError:
            raise
        except Exception as e:  # noqa: BLE001 - a failed retrieval must not end the conversation
            found, source, query = Retrieved(), "none", event.text
            error = f"{type(e).__name__}: {e}"
            self.errors.append(f"{turn.id}: {error}")
            self.stats.failed += 1
        context = PreparedContext(
            str(turn.id),
            event.speaker,
            query,
            event.text,
            source,
            found.pages,
            tuple(r for r in found.evidence if r.id != own_id),
            self._clock() - arrived,
            turn.retrievals,
            turn.wasted,
            error,
        )
        if source == "speculative":
            self.stats.reused += 1
        elif source == "final":
            self.stats.fresh += 1
        self.stats.wasted += turn.wasted
        if self._guard(event.speaker).publish_if_current(
            turn.generation, lambda: self._publish(context)
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


async def feed_at_pace(
    conversation: Conversation, events: Iterable[TranscriptEvent], speed: float = 1.0
) -> None:
    """Feed ``events`` on their own timing (``speed`` times faster; 0: at once), then wait
    for the work in flight."""
    started = time.monotonic()
    for event in events:
        if speed > 0:
            delay = event.t_ms / 1000 / speed - (time.monotonic() - started)
            if delay > 0:
                await asyncio.sleep(delay)
        await conversation.feed(event)
    await conversation.join()
    await conversation.settle_captions()


def _consume(task: asyncio.Task[Retrieved]) -> None:
    if not task.cancelled():
        task.exception()
