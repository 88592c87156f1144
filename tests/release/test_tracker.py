from __future__ import annotations

from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from heard.errors import UnknownNameError
from heard.release import (
    ESCALATE_AFTER_MS,
    LIVE_DWELL_MS,
    PAUSE_MS,
    ReleaseConfig,
    ReleaseReason,
    ReleaseTracker,
    ReleaseUnit,
)
from heard.transcript.words import normalized_key

NO_PAUSE = ReleaseConfig(pause_ms=None)


def grow(
    tracker: ReleaseTracker, words: list[str], start_ms: int = 0, every_ms: int = 500
) -> tuple[list[ReleaseUnit], int]:
    """Speak ``words`` one per partial (each partial repeats the previous text plus one word)."""
    units: list[ReleaseUnit] = []
    t = start_ms
    for n in range(1, len(words) + 1):
        units += tracker.on_partial(" ".join(words[:n]), t)
        t += every_ms
    return units, t


def unpunctuated(n: int) -> list[str]:
    return [f"w{i}" for i in range(n)]


def test_relaxed_releases_only_at_finalize() -> None:
    tracker = ReleaseTracker("relaxed")
    units, t = grow(tracker, "we ship on friday. then we rest.".split())
    assert units == []
    final = tracker.on_finalize("We ship on Friday. Then we rest.", t)
    assert [(u.text, u.reason) for u in final] == [
        ("We ship on Friday. Then we rest.", ReleaseReason.FINALIZE)
    ]


def test_balanced_releases_at_clause_boundaries_of_a_minimum_size() -> None:
    tracker = ReleaseTracker("balanced", NO_PAUSE)
    units, t = grow(tracker, "yes. we ship on friday. then we rest here".split())
    # "yes." is one word: too small to go alone, it rides with the next clause
    assert [(u.text, u.reason) for u in units] == [
        ("yes. we ship on friday.", ReleaseReason.BOUNDARY)
    ]
    final = tracker.on_finalize("Yes. We ship on Friday. Then we rest here.", t)
    assert [u.text for u in final] == ["Then we rest here."]
    assert final[0].first_word == 5


def test_finalize_releases_only_the_unreleased_tail() -> None:
    tracker = ReleaseTracker("live", NO_PAUSE)
    units, t = grow(tracker, unpunctuated(12), every_ms=800)
    released = sum(u.words for u in units)
    assert released > 0
    final = tracker.on_finalize(" ".join(unpunctuated(12)), t)
    assert [u.words for u in final] == [12 - released]
    assert final[0].first_word == released
    assert tracker.on_finalize("", t + 1) == []  # a new, empty utterance releases nothing


def test_live_dwell_clock_starts_when_text_first_settles() -> None:
    tracker = ReleaseTracker("live", NO_PAUSE)
    assert tracker.on_partial("alpha beta", 0) == []
    assert tracker.on_partial("alpha beta gamma", 100) == []  # "alpha beta" settles at 100
    # the text keeps changing, but the clock does not restart with each change
    assert tracker.on_partial("alpha beta gamma delta", 100 + LIVE_DWELL_MS - 1) == []
    units = tracker.on_partial("alpha beta gamma delta epsilon", 100 + LIVE_DWELL_MS)
    assert [(u.text, u.reason) for u in units] == [("alpha beta gamma delta", ReleaseReason.DWELL)]


def test_balanced_holds_unpunctuated_text_until_the_stretch_proves_itself() -> None:
    tracker = ReleaseTracker("balanced", NO_PAUSE)
    tracker.on_partial("w0 w1", 0)
    tracker.on_partial("w0 w1 w2", 100)  # unreleased stable text since 100
    assert tracker.poll(100 + LIVE_DWELL_MS + 1) == []  # not Live: no dwell yet
    assert tracker.poll(100 + ESCALATE_AFTER_MS - 1) == []
    assert not tracker.escalated
    units = tracker.poll(100 + ESCALATE_AFTER_MS)
    assert tracker.escalated
    assert [(u.text, u.reason) for u in units] == [("w0 w1", ReleaseReason.DWELL)]


def test_one_stray_boundary_does_not_de_escalate_a_sustained_presence_does() -> None:
    tracker = ReleaseTracker("balanced", NO_PAUSE)
    words = unpunctuated(30)
    _, t = grow(tracker, words, every_ms=600)
    assert tracker.escalated
    words += ["stray.", *unpunctuated(3)]
    _, t = grow(tracker, words, start_ms=t, every_ms=600)
    assert tracker.escalated, "one boundary is not evidence"
    words += "then it came. back for good.".split()
    grow(tracker, words, start_ms=t, every_ms=600)
    assert not tracker.escalated
    assert [c.escalated for c in tracker.transitions] == [True, False]


def test_escalation_cannot_flip_twice_inside_one_window() -> None:
    # alternate unpunctuated and punctuated stretches; probe every 500 ms
    tracker = ReleaseTracker("balanced", NO_PAUSE)
    words: list[str] = []
    t = 0
    per_stretch = ESCALATE_AFTER_MS // 500 + 6  # long enough to escalate in each bare stretch
    for stretch in range(6):
        for i in range(per_stretch):
            punctuate = stretch % 2 == 1 and i % 4 == 3
            words.append(f"s{stretch}w{i}" + ("." if punctuate else ""))
            tracker.on_partial(" ".join(words), t)
            tracker.poll(t + 250)
            t += 500
    times = [c.t_ms for c in tracker.transitions]
    assert len(times) >= 3
    for a, b in pairwise(times):
        assert b - a >= 1000  # both directions need evidence: time or two boundaries
    escalations = [c.t_ms for c in tracker.transitions if c.escalated]
    for a, b in pairwise(escalations):
        assert b - a >= ESCALATE_AFTER_MS


def test_a_pause_is_a_soft_boundary() -> None:
    tracker = ReleaseTracker("balanced")
    grow(tracker, "so the plan is to ship it".split(), every_ms=300)  # last partial at 1800
    # the same text again, and no change for PAUSE_MS: the speaker paused
    assert tracker.on_partial("so the plan is to ship it", 2800) == []
    units = tracker.poll(1800 + PAUSE_MS)
    assert [(u.text, u.reason) for u in units] == [("so the plan is to ship", ReleaseReason.PAUSE)]


def test_unknown_mode_lists_the_valid_ones() -> None:
    with pytest.raises(UnknownNameError, match="balanced, live, relaxed"):
        ReleaseTracker("fast")


word = st.sampled_from(["we", "ship", "it", "friday.", "then", "Rest", "ok?", "now,", "plan"])


@given(
    st.lists(
        st.tuples(
            st.lists(word, min_size=0, max_size=25), st.integers(0, 2), st.integers(50, 2500)
        ),
        min_size=1,
        max_size=30,
    ),
    st.sampled_from(["relaxed", "balanced", "live"]),
)
def test_no_word_is_released_twice_and_nothing_released_is_erased(
    script: list[tuple[list[str], int, int]], mode: str
) -> None:
    tracker = ReleaseTracker(mode)
    t = 0
    released: list[str] = []
    for words, kind, gap in script:
        t += gap
        if kind == 0:
            units = tracker.on_partial(" ".join(words), t)
        elif kind == 1:
            units = tracker.poll(t)
        else:
            units = tracker.on_finalize(" ".join(words), t)
        for u in units:
            assert u.first_word == len(released), "units are contiguous: no gap, no overlap"
            assert u.words == len(u.text.split()) > 0
            assert u.t_ms == t
            released += u.text.split()
        if kind == 2:
            assert len(released) == max(len(released), len(words))
            released = []
        else:
            # what was released is still what the stable prefix says: erasure is 0
            stable = tracker._acc.stable_prefix.split()
            assert [normalized_key(w) for w in stable[: len(released)]] == [
                normalized_key(w) for w in released
            ]
        if mode == "relaxed":
            assert all(u.reason is ReleaseReason.FINALIZE for u in units)
