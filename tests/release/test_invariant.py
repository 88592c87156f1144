"""The captions' invariant: applied in order, a speaker's units give that speaker's finals,
word for word (normalized), each word once; what a final contradicts is a correction.

Checked on random streams (revising partials, contradictions, finals that drop, add or change
words, partials that run past their final into the next utterance, two speakers), on every
committed cadence fixture and on the bundled real recognizer logs, in every mode.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from heard.release import ReleaseMode, ReleaseReason
from heard.release.cadence import ModeRun, caption_run
from heard.samples import SAMPLE_LOGS, sample_path
from heard.transcript.events import EventKind, TranscriptEvent, read_events
from heard.transcript.words import normalized_key

FIXTURES = sorted((Path(__file__).resolve().parents[1] / "data" / "cadence").rglob("*.jsonl"))
VOCABULARY = "we ship it Friday. friday then rest ok? now, plan book a table for two people".split()
VOCABULARY += ["look", "at", "the", "cable"]


def keys(words: list[str]) -> list[str]:
    return [normalized_key(w) for w in words]


def check(run: ModeRun) -> None:
    finals: dict[str, list[str]] = defaultdict(list)
    for speaker, text in run.finals:
        finals[speaker] += text.split()
    for speaker, words in finals.items():
        document = [w for w, _ in run.documents.get(speaker, [])]
        assert keys(document) == keys(words), speaker
    corrections = [u for u in run.units if u.reason is ReleaseReason.CORRECTION]
    released = sum(u.words for u in run.units) - sum(u.replaces for u in run.units)
    assert released == sum(len(w) for w in finals.values())  # each final word placed once
    assert all(u.replaces == 0 for u in run.units if u not in corrections)
    assert sum(u.replaces for u in corrections) >= run.corrected_words


@st.composite
def utterance(draw: st.DrawFn) -> tuple[list[list[str]], list[str]]:
    """Partials that grow toward the final, revise words, and may run past it."""
    final = draw(st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=12))
    partials = []
    for _ in range(draw(st.integers(0, 10))):
        words = final[: draw(st.integers(0, len(final)))]
        words = words + draw(st.lists(st.sampled_from(VOCABULARY), max_size=4))
        if words and draw(st.booleans()):
            words[draw(st.integers(0, len(words) - 1))] = draw(st.sampled_from(VOCABULARY))
        partials.append(words)
    return partials, final


@st.composite
def stream(draw: st.DrawFn) -> list[TranscriptEvent]:
    events, t = [], 0
    for _ in range(draw(st.integers(1, 6))):
        speaker = draw(st.sampled_from(["ana", "ben"]))
        partials, final = draw(utterance())
        for words in partials:
            t += draw(st.integers(50, 3000))
            events.append(TranscriptEvent(t, EventKind.PARTIAL, " ".join(words), speaker))
        t += draw(st.integers(50, 3000))
        events.append(TranscriptEvent(t, EventKind.FINAL, " ".join(final), speaker))
    return events


@settings(max_examples=150, deadline=None)
@given(stream(), st.sampled_from(list(ReleaseMode)))
def test_units_applied_in_order_are_the_finals_each_word_once(
    events: list[TranscriptEvent], mode: ReleaseMode
) -> None:
    check(caption_run(events, mode))


@pytest.mark.parametrize("mode", list(ReleaseMode))
@pytest.mark.parametrize("log", [*FIXTURES, *(sample_path(name) for name in SAMPLE_LOGS)],
                         ids=lambda p: f"{p.parent.name}/{p.stem}")  # fmt: skip
def test_the_invariant_holds_on_every_fixture_and_real_log(log: Path, mode: ReleaseMode) -> None:
    check(caption_run(read_events(log), mode))
