"""heard.live.Conversation: prefetch on the stable prefix, reuse, races, failures."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from heard.errors import UnknownNameError
from heard.live.conversation import Conversation
from heard.live.prepared import PreparedContext, Retrieved
from heard.live.retriever import MemoryRetriever
from heard.memory.evidence import EvidenceIndex
from heard.memory.recall import MemoryRecall
from heard.release import ESCALATED_DWELL_MS
from heard.release.tracker import ReleaseMode, ReleaseReason, ReleaseUnit
from heard.testing import FakeClock, ScriptedRetriever
from heard.transcript.events import EventKind, TranscriptEvent
from heard.transcript.prefetch import reusable
from heard.transcript.speculation import GateConfig, GateDecision


def partial(t: int, text: str, who: str = "user") -> TranscriptEvent:
    return TranscriptEvent(t, EventKind.PARTIAL, text, who)


def final(t: int, text: str, who: str = "user") -> TranscriptEvent:
    return TranscriptEvent(t, EventKind.FINAL, text, who)


async def say(conv: Conversation, start: int, words: str, who: str = "user") -> int:
    """Partials growing word by word every 400 ms, each repeated once (so words settle)."""
    t = start
    split = words.split()
    for n in range(1, len(split) + 1):
        for _ in range(2):
            await conv.feed(partial(t, " ".join(split[:n]), who))
            t += 200
    return t


async def test_speculation_is_reused_when_the_final_matches() -> None:
    retriever = ScriptedRetriever()
    conv = Conversation(retriever, gate=GateConfig(debounce_ms=0, min_new_content_tokens=1))
    t = await say(conv, 0, "what did Maya say about the Lisbon office")
    await asyncio.sleep(0)  # let the speculation run
    await conv.feed(final(t, "What did Maya say about the Lisbon office?"))
    await conv.join()
    (context,) = conv.contexts
    assert context.source == "speculative"
    assert context.query.startswith("what did Maya say about the Lisbon")
    assert context.final == "What did Maya say about the Lisbon office?"
    assert conv.stats.reused == 1
    assert conv.stats.fresh == 0
    # the speculation on the final's words was used; earlier, superseded ones are wasted
    assert context.wasted == context.retrievals - 1


async def test_a_final_that_says_something_else_is_retrieved_again() -> None:
    retriever = ScriptedRetriever()
    conv = Conversation(retriever)
    t = await say(conv, 0, "book the flight to Berlin on Monday")
    await conv.feed(final(t, "Cancel everything, order pizza for the team instead."))
    await conv.join()
    (context,) = conv.contexts
    assert context.source == "final"
    assert context.query == "Cancel everything, order pizza for the team instead."
    assert context.wasted >= 1
    assert retriever.queries[-1] == context.query


async def test_a_speculation_cancelled_elsewhere_is_not_awaited_by_its_final() -> None:
    """The policy decides to reuse what it started; a task somebody else cancelled cannot
    answer, so the final retrieves again."""
    retriever = ScriptedRetriever()
    conv = Conversation(retriever, gate=GateConfig(debounce_ms=0, min_new_content_tokens=1))
    t = await say(conv, 0, "what did Maya say about the Lisbon office")
    speculation = conv.prefetcher._turns["user"].task
    assert speculation is not None
    speculation.cancel()
    await asyncio.sleep(0)
    await conv.feed(final(t, "what did Maya say about the Lisbon office"))
    await conv.join()
    (context,) = conv.contexts
    assert context.source == "final"
    assert retriever.queries[-1] == "what did Maya say about the Lisbon office"
    # every speculation went unused, and the final retrieved once more
    assert context.retrievals == conv.stats.speculations + 1
    assert context.wasted == conv.stats.wasted == conv.stats.speculations


def test_the_reuse_rule() -> None:
    spec = frozenset({"maya", "lisbon", "office"})
    assert reusable(spec, frozenset({"maya", "lisbon", "office"}), 0.6)
    assert reusable(spec, frozenset({"maya", "lisbon", "office", "say"}), 0.6)  # 3/4
    assert not reusable(spec, frozenset({"maya", "berlin", "office", "budget"}), 0.6)  # 2/5
    assert not reusable(frozenset(), frozenset(), 0.6)


async def test_slow_speculation_for_turn_n_never_overwrites_turn_n_plus_1() -> None:
    retriever = ScriptedRetriever(delays={"alpha": 0.3})
    published: list[PreparedContext] = []
    conv = Conversation(retriever, on_context=published.append)
    t = await say(conv, 0, "tell me about alpha launch")
    await conv.feed(final(t, "Tell me about alpha launch"))  # reuses the slow speculation
    t = await say(conv, t + 500, "and the beta date")
    await conv.feed(final(t, "And the beta date?"))  # fresh, fast
    await conv.join()
    assert [c.turn for c in published] == ["user#2"]
    assert conv.latest is not None
    assert conv.latest.final == "And the beta date?"
    assert conv.stats.stale_dropped == 1
    # both finals are evidence all the same
    assert [e.text for e in retriever.remembered] == [
        "Tell me about alpha launch",
        "And the beta date?",
    ]


async def test_partials_never_become_evidence() -> None:
    memory = MemoryRetriever(MemoryRecall(None, EvidenceIndex()))
    conv = Conversation(memory, conversation_id="c1")
    t = await say(conv, 0, "I moved to Lisbon in March")
    await conv.join()
    assert len(memory.evidence) == 0
    await conv.feed(final(t, "I moved to Lisbon in March."))
    await conv.join()
    assert len(memory.evidence) == 1
    # a later turn recalls it; a turn never recalls itself
    t = await say(conv, t + 1000, "when did I go to Lisbon")
    await conv.feed(final(t, "When did I go to Lisbon?"))
    await conv.join()
    first, second = conv.contexts
    assert first.evidence == ()
    assert [r.id for r in second.evidence] == ["c1:user#1"]


async def test_a_final_is_remembered_with_when_it_was_said() -> None:
    """So that a later question naming the day ("what did I say on 3 March?") favours it."""
    retriever = ScriptedRetriever()
    conv = Conversation(retriever)
    t = await say(conv, 0, "the boat trip is on")
    before = datetime.now(UTC)
    await conv.feed(final(t, "The boat trip is on."))
    after = datetime.now(UTC)
    await conv.join()
    (said,) = retriever.remembered
    assert said.t is not None
    assert before <= said.t <= after


async def test_a_final_is_remembered_with_the_injected_wall_clock() -> None:
    """Issue 27: every time from the injected clock, the evidence's date too."""
    clock = FakeClock(datetime(2023, 6, 9, 12, 0, tzinfo=UTC))
    retriever = ScriptedRetriever()
    conv = Conversation(retriever, wall_clock=clock)
    await conv.feed(final(1000, "The launch is on Friday."))
    clock.advance(90)
    await conv.feed(final(2000, "And the review on Monday."))
    await conv.join()
    assert [e.t for e in retriever.remembered] == [
        datetime(2023, 6, 9, 12, 0, tzinfo=UTC),
        datetime(2023, 6, 9, 12, 1, 30, tzinfo=UTC),
    ]


async def test_a_final_is_remembered_in_the_language_heard_was_told() -> None:
    """So that recall stems it as Spanish, not as whatever a short final looks like."""
    retriever = ScriptedRetriever()
    conv = Conversation(retriever, language="es")
    await conv.feed(final(1000, "Sí."))
    await conv.join()
    (said,) = retriever.remembered
    assert said.language == "es"


async def test_a_new_strong_signal_bypasses_the_debounce() -> None:
    retriever = ScriptedRetriever()
    conv = Conversation(retriever)
    await conv.feed(partial(0, "so the budget numbers"))
    await conv.feed(partial(100, "so the budget numbers for"))  # settles "so the budget numbers"
    fired = conv.stats.speculations
    assert fired == 1
    await conv.feed(partial(150, "so the budget numbers for next quarter"))  # debounced
    assert conv.stats.speculations == fired
    await conv.feed(partial(200, "so the budget numbers for next quarter do you remember when"))
    await conv.feed(partial(250, "so the budget numbers for next quarter do you remember when we"))
    assert conv.stats.speculations == fired + 1  # 150 ms after the last: only a signal passes
    await conv.aclose()


async def test_an_interrupted_turn_cancels_its_work_and_publishes_nothing() -> None:
    retriever = ScriptedRetriever(delays={"slow": 5.0})
    conv = Conversation(retriever)
    t = await say(conv, 0, "a slow question about things")
    await conv.feed(final(t, "A slow question about things"))
    await asyncio.sleep(0.01)
    assert conv.interrupt() >= 1
    await asyncio.wait_for(conv.join(), 1.0)  # nothing left waiting on the 5 s retrieval
    assert conv.contexts == []
    assert retriever.cancelled
    assert [e.text for e in retriever.remembered] == ["A slow question about things"]
    # the conversation goes on
    t = await say(conv, t + 500, "next question please")
    await conv.feed(final(t, "Next question please"))
    await conv.join()
    assert [c.final for c in conv.contexts] == ["Next question please"]


async def test_a_failed_retrieval_gives_an_empty_context_with_the_error() -> None:
    retriever = ScriptedRetriever(fail_on="boom")
    conv = Conversation(retriever, prefetch=False)
    await conv.feed(final(0, "this will go boom"))
    await conv.join()
    await conv.feed(final(1000, "and this is fine"))
    await conv.join()
    failed, fine = conv.contexts
    assert (failed.source, failed.pages, failed.evidence) == ("none", (), ())
    assert failed.error is not None
    assert "index unavailable" in failed.error
    assert fine.source == "final"
    assert fine.error is None
    assert conv.stats.failed == 1
    assert len(conv.errors) == 1


async def test_without_prefetch_every_final_is_retrieved_once() -> None:
    retriever = ScriptedRetriever()
    conv = Conversation(retriever, prefetch=False)
    t = await say(conv, 0, "what is on the agenda")
    await conv.feed(final(t, "What is on the agenda?"))
    await conv.join()
    assert retriever.queries == ["What is on the agenda?"]
    assert conv.contexts[0].retrievals == 1


async def test_sticky_pages_carry_into_later_turns() -> None:
    retriever = ScriptedRetriever()
    seen: list[tuple[str, ...]] = []
    original = retriever.retrieve

    async def spy(query: str, sticky: tuple[str, ...]) -> Retrieved:
        seen.append(sticky)
        return await original(query, sticky)

    retriever.retrieve = spy  # type: ignore[method-assign]
    conv = Conversation(retriever, prefetch=False)
    await conv.feed(final(0, "about the roadmap"))
    await conv.join()
    await conv.feed(final(1000, "and the budget"))
    await conv.join()
    assert seen == [(), ("page-roadmap",)]


async def test_captions_flow_alongside() -> None:
    units: list[ReleaseUnit] = []
    conv = Conversation(None, release_mode="relaxed", on_release=units.append)
    t = await say(conv, 0, "hello there", who="ana")
    await conv.feed(final(t, "Hello there.", who="ana"))
    assert [(u.speaker, u.text) for u in units] == [("ana", "Hello there.")]
    assert conv.contexts == []
    await conv.aclose()


class ManualTime:
    """The conversation's clock (milliseconds) and sleep: time moves only when it sleeps."""

    def __init__(self) -> None:
        self.now_ms = 0.0

    def clock(self) -> float:
        return self.now_ms

    async def sleep(self, seconds: float) -> None:
        self.now_ms += seconds * 1000
        await asyncio.sleep(0)


async def test_a_balanced_dwell_release_fires_while_no_new_event_arrives() -> None:
    time = ManualTime()
    units: list[ReleaseUnit] = []
    conv = Conversation(None, release_mode="balanced", clock=time.clock, sleep=time.sleep,
                        on_release=units.append)  # fmt: skip
    # a bare final escalates Balanced (the recognizer does not punctuate) ...
    await conv.feed(final(0, "so we looked at the numbers from the north region"))
    # ... then one utterance settles and the speaker stops: no event comes after this one
    await conv.feed(partial(1000, "and the south was flat"))
    await conv.feed(partial(1000, "and the south was flat again"))  # "and the ... flat" settles
    assert conv.captions is not None
    assert conv.captions.escalated
    before = len(units)
    for _ in range(40):  # four seconds of the timer's ticks, nothing fed
        await asyncio.sleep(0)
    # escalated Balanced keeps its boundaries: the pause (PAUSE_MS) and the dwell fall due together
    timed = [u for u in units[before:] if u.reason in (ReleaseReason.DWELL, ReleaseReason.PAUSE)]
    assert [u.text for u in timed] == ["and the south was flat"]
    assert timed[0].t_ms >= 1000 + ESCALATED_DWELL_MS
    await conv.aclose()


@pytest.mark.parametrize("prefetch", [True, False])
async def test_many_turns_many_speakers_publish_in_turn_order(prefetch: bool) -> None:
    retriever = ScriptedRetriever()
    conv = Conversation(retriever, prefetch=prefetch)
    t = 0
    for i in range(6):
        who = "ana" if i % 2 else "ben"
        t = await say(conv, t, f"question number {i} about topic{i}", who=who)
        await conv.feed(final(t, f"Question number {i} about topic{i}", who=who))
        await conv.join()
    assert [c.final for c in conv.contexts] == [
        f"Question number {i} about topic{i}" for i in range(6)
    ]
    assert len(retriever.remembered) == 6


async def test_seed_000_a_pause_speculates_on_the_partial_its_repeat_confirmed() -> None:
    """Seed 000 keeps the last word out of a speculation so that retrieval is not re-run each
    time the recognizer changes its mind about it; a pause (the partial repeated word for
    word) is the revision that confirms it, so the pause speculates on the whole partial."""
    retriever = ScriptedRetriever()
    conv = Conversation(retriever)
    await conv.feed(partial(0, "who approves the budget"))
    await conv.feed(partial(500, "who approves the budget for Lisbon"))  # fires on the budget
    await conv.feed(partial(1000, "who approves the budget for Lisbon travel"))  # +1 token
    assert (await started(retriever)) == ["who approves the budget"]
    # nothing new heard, the last word kept: the pause speculates on what was said
    step = await conv.feed(partial(1500, "who approves the budget for Lisbon travel"))
    assert step.hypothesis.repeated
    assert step.hypothesis.stable_prefix == "who approves the budget for Lisbon"
    queries = await started(retriever)
    assert queries == ["who approves the budget", "who approves the budget for Lisbon travel"]
    assert conv.stats.pause_speculations == 1
    # repeated again, it says nothing the last speculation did not: no more retrievals
    await conv.feed(partial(2000, "who approves the budget for Lisbon travel"))
    assert conv.stats.speculations == 2
    await conv.feed(final(2600, "Who approves the budget for Lisbon travel?"))
    await conv.join()
    (context,) = conv.contexts
    assert context.source == "speculative"
    assert context.query == "who approves the budget for Lisbon travel"


async def test_seed_000_a_pause_keeps_the_debounce_window() -> None:
    """Seed 000's gate: a debounce window that only a strong signal or a final bypasses. A
    pause within ``debounce_ms`` of the turn's last speculation waits for a later repeat."""
    retriever = ScriptedRetriever()
    conv = Conversation(retriever)  # debounce 300 ms
    await conv.feed(partial(0, "who approves the budget"))
    await conv.feed(partial(500, "who approves the budget for Lisbon"))  # fires
    await conv.feed(partial(550, "who approves the budget for Lisbon travel"))
    await conv.feed(partial(650, "who approves the budget for Lisbon travel"))  # 150 ms after
    assert conv.stats.speculations == 1
    assert conv.stats.pause_speculations == 0
    await conv.feed(partial(850, "who approves the budget for Lisbon travel"))  # 350 ms after
    assert conv.stats.pause_speculations == 1
    assert (await started(retriever))[-1] == "who approves the budget for Lisbon travel"
    await conv.aclose()


async def test_seed_000_no_speculation_within_the_debounce_window_of_a_pause() -> None:
    """Seed 000's debounce holds across the gate's firings and a pause's: the gate, which
    does not see the pause's speculation, may fire 100 ms after it; that one waits. A new
    strong signal still bypasses the window."""
    retriever = ScriptedRetriever()
    conv = Conversation(retriever)
    await conv.feed(partial(0, "who approves the budget"))
    await conv.feed(partial(500, "who approves the budget for Lisbon"))  # the gate fires
    await conv.feed(partial(1000, "who approves the budget for Lisbon travel"))
    await conv.feed(partial(1500, "who approves the budget for Lisbon travel"))  # the pause
    assert conv.stats.speculations == 2
    more = "who approves the budget for Lisbon travel next month costs"
    step = await conv.feed(partial(1600, more))
    assert step.decision is GateDecision.FIRE  # 1100 ms after the gate's own last firing
    assert conv.stats.speculations == 2  # but 100 ms after the pause's
    step = await conv.feed(partial(1900, more + " more"))
    assert step.decision is GateDecision.FIRE
    assert conv.stats.speculations == 3  # 400 ms after the pause's
    assert (await started(retriever))[-1] == more
    # within the window of that one, only a new strong signal passes
    await conv.feed(partial(2000, more + " more do you remember what"))
    await conv.feed(partial(2050, more + " more do you remember what she"))
    assert conv.stats.speculations == 4
    await conv.aclose()


@pytest.mark.parametrize("mode", ["live", ReleaseMode.LIVE, "fast"])
def test_seed_004_live_is_the_reference_not_a_choice(mode: str) -> None:
    """Seed 004: Live is the measured reference the cadence table compares against, not a user's
    choice: the Python API refuses it as the CLI and the server do, naming the valid ones."""
    with pytest.raises(UnknownNameError) as refused:
        Conversation(None, release_mode=mode)
    assert refused.value.valid == ["balanced", "relaxed"]
    assert "balanced, relaxed" in str(refused.value)


@pytest.mark.parametrize("mode", ["relaxed", "balanced", ReleaseMode.BALANCED, None])
def test_the_selectable_caption_modes_are_accepted(mode: str | None) -> None:
    conv = Conversation(None, release_mode=mode)
    assert conv.release_mode == (None if mode is None else ReleaseMode(mode))
    assert (conv.captions is None) == (mode is None)


async def started(retriever: ScriptedRetriever) -> list[str]:
    """The queries retrieved so far, once the speculations just started have run."""
    await asyncio.sleep(0)
    return list(retriever.queries)


def test_join_returns_when_the_work_is_done_before_its_callbacks_ran() -> None:
    """A final's preparation that finished in the loop's last turn, its done callbacks not yet
    run, is done: ``join`` returns. Since Python 3.12 a gather over finished tasks returns
    without yielding to the loop, so a join that waited for the callbacks to empty its list
    spun for ever (a live socket's "end" frame held its server thread at 100% CPU). Only
    Python 3.12 and later can show that bug (3.11's gather yields): the suite on Debian 13
    (tools/fresh_root.sh) runs it there."""
    import threading

    async def scenario() -> None:
        conv = Conversation(ScriptedRetriever())
        await conv.feed(final(0, "What did Maya say?"))
        await asyncio.sleep(0)  # the preparation runs to its end; its callbacks wait a turn
        await conv.join()
        assert [c.final for c in conv.contexts] == ["What did Maya say?"]

    failures: list[BaseException] = []

    def run() -> None:
        try:
            asyncio.run(scenario())
        except BaseException as e:  # noqa: BLE001 - handed to the test's thread
            failures.append(e)

    worker = threading.Thread(target=run, daemon=True)  # a spinning loop cannot be cancelled
    worker.start()
    worker.join(timeout=30)
    assert not worker.is_alive(), "Conversation.join never returned"
    assert failures == []
