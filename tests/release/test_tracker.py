"""The release policies, one tracker at a time, fed through the stabilizer as the stage does."""

from __future__ import annotations

from itertools import pairwise

import pytest

from heard.errors import UnknownNameError
from heard.release import (
    BARE_FINAL_WORDS,
    ESCALATE_AFTER_MS,
    ESCALATE_AFTER_WORDS,
    ESCALATED_DWELL_MS,
    ESCALATED_OVERDUE_MS,
    LIVE_DWELL_MS,
    PAUSE_MS,
    Captions,
    ReleaseConfig,
    ReleaseReason,
    ReleaseTracker,
    ReleaseUnit,
)
from heard.transcript.events import EventKind, TranscriptEvent
from heard.transcript.stabilizer import TranscriptStabilizer

NO_PAUSE = ReleaseConfig(pause_ms=None)


class Speaker:
    """One speaker's transcript through a stabilizer into a captions stage."""

    def __init__(self, mode: str, config: ReleaseConfig | None = None) -> None:
        self.stabilizer = TranscriptStabilizer()
        self.captions = Captions(mode, config)

    @property
    def tracker(self) -> ReleaseTracker:
        return self.captions.tracker("speaker")

    def partial(self, text: str, t_ms: int) -> list[ReleaseUnit]:
        event = TranscriptEvent(t_ms, EventKind.PARTIAL, text)
        return self.captions.on_step(self.stabilizer.on_event(event))

    def final(self, text: str, t_ms: int) -> list[ReleaseUnit]:
        event = TranscriptEvent(t_ms, EventKind.FINAL, text)
        return self.captions.on_step(self.stabilizer.on_event(event))

    def poll(self, t_ms: int) -> list[ReleaseUnit]:
        return self.captions.tick(t_ms)

    def grow(
        self, words: list[str], start_ms: int = 0, every_ms: int = 500
    ) -> tuple[list[ReleaseUnit], int]:
        """Speak ``words`` one per partial (each partial repeats the last plus one word)."""
        units: list[ReleaseUnit] = []
        t = start_ms
        for n in range(1, len(words) + 1):
            units += self.partial(" ".join(words[:n]), t)
            t += every_ms
        return units, t


def bare(n: int, prefix: str = "w") -> list[str]:
    return [f"{prefix}{i}" for i in range(n)]


def test_relaxed_releases_only_at_the_final() -> None:
    s = Speaker("relaxed")
    units, t = s.grow("we ship on friday. then we rest.".split())
    assert units == []
    final = s.final("We ship on Friday. Then we rest.", t)
    assert [(u.text, u.reason, u.position) for u in final] == [
        ("We ship on Friday. Then we rest.", ReleaseReason.FINALIZE, 0)
    ]


def test_balanced_releases_at_clause_boundaries_of_a_minimum_size() -> None:
    s = Speaker("balanced", NO_PAUSE)
    units, t = s.grow("yes. we ship on friday. then we rest here".split())
    # "yes." is one word: too small to go alone, it rides with the next clause
    assert [(u.text, u.reason) for u in units] == [
        ("yes. we ship on friday.", ReleaseReason.BOUNDARY)
    ]
    final = s.final("Yes. We ship on Friday. Then we rest here.", t)
    assert [(u.text, u.position) for u in final] == [("Then we rest here.", 5)]


def test_a_long_clause_is_released_at_its_comma_a_short_one_is_not() -> None:
    s = Speaker("balanced", NO_PAUSE)
    long_clause = [*bare(12), "end,", "and", "more", "words"]
    # spoken fast enough that the words before the comma never wait out an escalation window
    units, _ = s.grow(long_clause, every_ms=250)
    assert [(u.words, u.reason) for u in units] == [(13, ReleaseReason.BOUNDARY)]
    s = Speaker("balanced", NO_PAUSE)
    units, _ = s.grow(["okay,", "thank", "you", "all", "very", "much"])
    assert units == []


def test_live_dwell_clock_starts_when_text_first_settles() -> None:
    s = Speaker("live", NO_PAUSE)
    assert s.partial("alpha beta", 0) == []
    assert s.partial("alpha beta gamma", 100) == []  # "alpha beta" settles at 100
    # the text keeps changing, but the clock does not restart with each change
    assert s.partial("alpha beta gamma delta", 100 + LIVE_DWELL_MS - 1) == []
    units = s.partial("alpha beta gamma delta epsilon", 100 + LIVE_DWELL_MS)
    assert [(u.text, u.reason) for u in units] == [("alpha beta gamma delta", ReleaseReason.DWELL)]


def test_escalated_balanced_releases_what_the_recognizer_was_slow_to_settle_at_once() -> None:
    """A word the recognizer kept flipping settles late; it has waited already, so escalated
    Balanced releases it as it settles, not a whole dwell later (ESCALATED_OVERDUE_MS)."""
    s = Speaker("balanced", NO_PAUSE)
    s.grow(bare(BARE_FINAL_WORDS))
    s.final(" ".join(bare(BARE_FINAL_WORDS)), 5000)
    assert s.tracker.escalated
    heard = 6000  # y0 first heard
    for i, text in enumerate(["y0 y1 y2", "q0 y1 y2", "y0 y1 y2", "q0 y1 y2", "y0 y1 y2 y3"]):
        assert s.partial(text, heard + 1000 * i) == []
    settled = heard + 4500
    assert s.partial("y0 y1 y2 y3 y4", settled) == []  # "y0 y1 y2 y3" settles
    overdue = heard + ESCALATED_OVERDUE_MS
    assert overdue < settled + ESCALATED_DWELL_MS, "the dwell would release it later"
    assert s.poll(overdue - 100) == []
    [unit] = s.poll(overdue)
    assert (unit.text, unit.reason) == ("y0 y1 y2 y3", ReleaseReason.DWELL)


def test_a_bare_final_escalates_balanced_and_marks_bring_it_back() -> None:
    s = Speaker("balanced", NO_PAUSE)
    s.grow(bare(BARE_FINAL_WORDS - 1))
    s.final(" ".join(bare(BARE_FINAL_WORDS - 1)), 5000)
    assert not s.tracker.escalated, "a short bare final proves nothing"
    s.grow(bare(BARE_FINAL_WORDS, "x"), start_ms=6000)
    s.final(" ".join(bare(BARE_FINAL_WORDS, "x")), 11000)
    assert s.tracker.escalated
    # escalated: settled text goes out after the escalated dwell, with no boundary
    s.partial("y0 y1 y2", 12000)
    s.partial("y0 y1 y2 y3", 12100)  # "y0 y1 y2" settles
    assert s.poll(12100 + ESCALATED_DWELL_MS - 100) == []
    [unit] = s.poll(12100 + ESCALATED_DWELL_MS)
    assert (unit.text, unit.reason) == ("y0 y1 y2", ReleaseReason.DWELL)
    # one clause end is not evidence; two are, once a window has passed since escalating
    s.final("y0 y1 y2 y3 stray.", 16000)
    assert s.tracker.escalated
    escalated_at = s.tracker.transitions[-1].t_ms
    s.final("it came back. for good.", escalated_at + ESCALATE_AFTER_MS)
    assert not s.tracker.escalated
    assert [c.escalated for c in s.tracker.transitions] == [True, False]


def test_finals_that_run_on_without_a_mark_escalate_and_silence_never_does() -> None:
    s = Speaker("balanced", NO_PAUSE)
    t = 0
    words = 0
    while words + 6 < ESCALATE_AFTER_WORDS:  # punctuated finals of 6 words: no escalation
        s.final(" ".join(bare(5)) + " w5.", t)
        words += 6
        t += 3000
    s.poll(t + 600_000)  # ten minutes of silence
    assert not s.tracker.escalated
    run = 0
    while run < ESCALATE_AFTER_WORDS:  # short bare finals (under BARE_FINAL_WORDS) add up
        s.final(" ".join(bare(BARE_FINAL_WORDS - 1)), t)
        run += BARE_FINAL_WORDS - 1
        t += 3000
    assert s.tracker.escalated


def test_a_pause_is_a_soft_boundary() -> None:
    s = Speaker("balanced")
    s.grow("so the plan is to ship it".split(), every_ms=300)  # last partial at 1800
    # the same text again, and no change for PAUSE_MS: the speaker paused
    assert s.partial("so the plan is to ship it", 2800) == []
    units = s.poll(1800 + PAUSE_MS)
    assert [(u.text, u.reason) for u in units] == [("so the plan is to ship", ReleaseReason.PAUSE)]


def test_a_final_corrects_contradicted_words_and_releases_the_rest_in_order() -> None:
    s = Speaker("live", NO_PAUSE)
    s.grow("book a table for tonight".split(), every_ms=100)
    [unit] = s.poll(100 + LIVE_DWELL_MS + 300)
    assert unit.text == "book a table for"
    final = s.final("look at the cable for two people", 5000)
    assert [(u.text, u.reason, u.position, u.replaces) for u in final] == [
        ("look at the cable", ReleaseReason.CORRECTION, 0, 3),
        ("two people", ReleaseReason.FINALIZE, 5, 0),
    ]
    assert s.tracker.corrections == 3


def test_a_dropped_word_is_taken_back_and_the_missing_one_given() -> None:
    s = Speaker("live", NO_PAUSE)
    s.grow("so um we should maybe".split(), every_ms=100)
    [unit] = s.poll(100 + LIVE_DWELL_MS + 300)
    assert unit.text == "so um we should"
    final = s.final("So we should go.", 5000)
    assert [(u.text, u.reason, u.position, u.replaces) for u in final] == [
        ("", ReleaseReason.CORRECTION, 1, 1),
        ("go.", ReleaseReason.FINALIZE, 3, 0),
    ]


def test_words_past_a_shorter_final_are_carried_to_the_next_utterance() -> None:
    s = Speaker("live", NO_PAUSE)
    s.grow("first part here. second part".split(), every_ms=100)
    [unit] = s.poll(100 + LIVE_DWELL_MS + 300)
    assert unit.text == "first part here. second"
    assert s.final("first part here.", 3000) == []  # nothing to add; "second" is carried
    units, t = s.grow("second part goes on".split(), start_ms=3100, every_ms=100)
    final = s.final("second part goes on.", t)
    released = [u.text for u in [*units, *final]]
    assert " ".join(released).split() == ["part", "goes", "on."]  # "second" not again


def test_finish_takes_back_words_no_final_confirmed() -> None:
    s = Speaker("live", NO_PAUSE)
    s.grow("never finished words here".split(), every_ms=100)
    [unit] = s.poll(100 + LIVE_DWELL_MS + 300)
    [back] = s.captions.finish(9000)
    assert (back.reason, back.position, back.replaces, back.text) == (
        ReleaseReason.CORRECTION, 0, unit.words, ""
    )  # fmt: skip


def test_unknown_mode_lists_the_valid_ones() -> None:
    with pytest.raises(UnknownNameError, match="balanced, live, relaxed"):
        ReleaseTracker("fast")


def _final(tracker: ReleaseTracker, text: str, t_ms: int) -> None:
    from heard.transcript.accumulator import TranscriptAccumulator

    tracker.on_hypothesis(TranscriptAccumulator().finalize(text), t_ms)


def test_finals_cannot_de_escalate_and_re_escalate_inside_one_window() -> None:
    """Issue 25: one final "ok. yes." then 23 bare words de-escalated and re-escalated at the
    same moment. Two clause ends bring Balanced back; the bare words after them may escalate
    it again only a whole window later."""
    tracker = ReleaseTracker("balanced")
    _final(tracker, " ".join(bare(30, "a")), 10_000)
    _final(tracker, "ok. yes. " + " ".join(bare(23, "b")), 10_000 + ESCALATE_AFTER_MS)
    _final(tracker, " ".join(bare(3, "c")), 11_000 + ESCALATE_AFTER_MS)
    assert [c.escalated for c in tracker.transitions] == [True, False]
    _final(tracker, " ".join(bare(3, "d")), 10_000 + 2 * ESCALATE_AFTER_MS)
    assert [c.escalated for c in tracker.transitions] == [True, False, True]
    changes = [c.t_ms for c in tracker.transitions]
    assert all(b - a >= ESCALATE_AFTER_MS for a, b in pairwise(changes))


def _stable(tracker: ReleaseTracker, words: list[str], t_ms: int) -> list[ReleaseUnit]:
    from heard.transcript.accumulator import Hypothesis

    hypothesis = Hypothesis(None, tuple(words), ("next",), 1, False)
    units = tracker.on_hypothesis(hypothesis, t_ms)
    for t in range(t_ms + 100, t_ms + 400, 100):
        units += tracker.poll(t)
    return units


def test_a_clause_end_a_revision_moves_is_counted_once() -> None:
    """Only two clause ends de-escalate; a new reading that inserts a word before the one
    already counted moves it, and it is still one."""
    tracker = ReleaseTracker("balanced")
    words, t = ["Hello."], 0
    _stable(tracker, words, t)
    for i in range(40):
        t += 400
        words = [*words, f"w{i}"]
        _stable(tracker, words, t)
    assert tracker.escalated
    for word in ["stray.", *bare(5, "v")]:
        t += 400
        words = [*words, word]
        _stable(tracker, words, t)
    at = words.index("stray.")
    words = [*words[:at], "uh", *words[at:]]
    for word in ["", *bare(5, "u")]:
        t += 400
        words = [*words, word] if word else words
        _stable(tracker, words, t)
    assert tracker.escalated
    assert [c.escalated for c in tracker.transitions] == [True]


def test_a_new_reading_corrects_only_the_released_words() -> None:
    """Issue 25 review: a changed stable prefix is aligned with the words released, never with
    the whole new reading, so no word goes out by a correction that the policy did not release
    and the caption is never a splice of two readings."""
    tracker = ReleaseTracker("balanced", NO_PAUSE)
    document: list[str] = []
    for unit in _stable(tracker, "we said that the next port button.".split(), 1000):
        document[unit.position : unit.position + unit.replaces] = unit.text.split()
    new = "we said that an export mug, Maria will lead network, and she needs one more"
    units = _stable(tracker, new.split(), 2000)
    for unit in units:
        document[unit.position : unit.position + unit.replaces] = unit.text.split()
    assert all(u.reason is ReleaseReason.CORRECTION for u in units)
    assert document == "we said that an export mug, Maria".split()
    assert tracker.watermark == 7


def test_a_period_on_every_partials_last_word_does_not_stop_escalation() -> None:
    """Whisper ends most partials with a period it drops as the sentence goes on: marks on
    words not yet settled do not stop the escalation clock."""
    acc_words: list[str] = []
    stabilizer = TranscriptStabilizer()
    captions = Captions("balanced")
    for i in range(60):
        acc_words.append(f"w{i}")
        event = TranscriptEvent(400 * (i + 1), EventKind.PARTIAL, " ".join(acc_words) + ".")
        captions.on_step(stabilizer.on_event(event))
        for t in range(event.t_ms + 100, event.t_ms + 400, 100):
            captions.tick(t)
    assert captions.tracker("speaker").escalated
    assert sum(u.reason is ReleaseReason.DWELL for u in captions.units) >= 3
