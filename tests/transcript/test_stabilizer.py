from __future__ import annotations

from pathlib import Path

from hypothesis import example, given
from hypothesis import strategies as st

from heard.transcript.events import EventKind, TranscriptEvent, read_events
from heard.transcript.signals import SignalExtractor
from heard.transcript.speculation import GateDecision
from heard.transcript.stabilizer import TranscriptStabilizer
from heard.transcript.turns import TurnId


def ev(t_ms: int, kind: str, text: str, speaker: str = "speaker") -> TranscriptEvent:
    return TranscriptEvent(t_ms, EventKind(kind), text, speaker)


def test_interleaved_speakers_keep_separate_turns_and_prefixes() -> None:
    session = TranscriptStabilizer()
    steps = list(
        session.replay(
            [
                ev(0, "partial", "where is", "alice"),
                ev(100, "partial", "yes I", "bob"),
                ev(500, "partial", "where is the Tokyo", "alice"),
                ev(600, "final", "Yes, I think so.", "bob"),
                ev(900, "final", "Where is the Tokyo office?", "alice"),
                ev(1500, "partial", "and the", "bob"),
            ]
        )
    )
    assert [str(s.turn_id) for s in steps] == [
        "alice#1", "bob#1", "alice#1", "bob#1", "alice#1", "bob#2",
    ]  # fmt: skip
    assert steps[2].hypothesis.stable_prefix == "where is"
    assert steps[3].decision is GateDecision.FIRE_FINAL
    assert steps[4].hypothesis.final
    assert steps[5].turn_id == TurnId("bob", 2)
    assert steps[5].hypothesis.stable_prefix == ""
    s = session.summary
    assert (s.events, s.turns, s.finals, s.revisions) == (6, 3, 2, 6)


def test_a_final_without_partials_is_a_turn_of_its_own() -> None:
    session = TranscriptStabilizer()
    step = session.on_final("carol", "Hello there.", 10)
    assert step.turn_id == TurnId("carol", 1)
    assert step.decision is GateDecision.FIRE_FINAL
    assert session.summary.turns == 1


def test_a_known_entity_in_the_stable_prefix_fires_through_the_debounce() -> None:
    session = TranscriptStabilizer(signals=SignalExtractor(["Rhea"]))
    decisions = [
        session.on_event(e).decision
        for e in [
            ev(0, "partial", "book a table"),
            ev(100, "partial", "book a table for"),
            ev(200, "partial", "book a table for Rhea at"),
            ev(300, "partial", "book a table for Rhea at seven"),
        ]
    ]
    assert decisions[0] is GateDecision.NOTHING_STABLE
    assert decisions[1] is GateDecision.FIRE  # "book a table": two content tokens
    assert decisions[2] is GateDecision.DEBOUNCED
    assert decisions[3] is GateDecision.FIRE_SIGNAL  # 200 ms later: "Rhea" became stable


def test_jfk_log_replays_to_the_recorded_final(jfk_log: Path) -> None:
    events = read_events(jfk_log)
    session = TranscriptStabilizer()
    steps = list(session.replay(events))
    stable_counts = [s.hypothesis.stable_word_count for s in steps]
    assert stable_counts == sorted(stable_counts)  # grows monotonically on real data
    assert steps[-1].hypothesis.stable_prefix == events[-1].text
    assert session.summary.turns == 1
    assert session.summary.contradictions == 1  # "And so am I fellow Americans."
    # the stable prefix covers most of the utterance before the final arrives
    assert stable_counts[-2] >= 0.8 * stable_counts[-1]


def test_runon_log_keeps_stabilizing_through_contradictions(runon_log: Path) -> None:
    session = TranscriptStabilizer()
    steps = list(session.replay(read_events(runon_log)))
    partials = [s for s in steps if s.kind is EventKind.PARTIAL]
    assert session.summary.contradictions >= 10
    assert session.summary.finals_contradicting_stable == 1
    # the prefix is never stuck at the first contradiction: it keeps growing afterwards
    first = next(i for i, s in enumerate(partials) if s.hypothesis.contradiction)
    assert partials[-1].hypothesis.stable_word_count > partials[first].hypothesis.stable_word_count
    assert session.summary.speculations >= 3


PHRASE_WORDS = ["do", "you", "remember", "rhea", "sharma", "the", "boat", "what", "did", "i"]
PHRASE_WORDS += ["tell", "last", "time", "we", "tokyo", "office", "Rhea.", "Tokyo,"]


@given(st.lists(st.lists(st.sampled_from(PHRASE_WORDS), min_size=1, max_size=4), max_size=12))
# found by hypothesis: a rescan that began inside "do you remember" also found "you remember"
@example([["do", "you"], ["remember", "do", "do", "do"], ["do"]])
def test_incremental_signals_match_a_full_rescan(growth: list[list[str]]) -> None:
    extractor = SignalExtractor({"Rhea": ["Rhea Sharma"], "Tokyo office": []})
    session = TranscriptStabilizer(signals=extractor)
    words: list[str] = []
    for t, added in enumerate(growth):
        words += added
        # each text is repeated, so all but its last word become stable
        session.on_partial("a", " ".join(words), 2 * t)
        step = session.on_partial("a", " ".join(words), 2 * t + 1)
        full = extractor.extract(step.hypothesis.stable_prefix)
        assert set(step.signals.entities) == set(full.entities)
        assert set(step.signals.recall_phrases) == set(full.recall_phrases)


def test_a_confirmed_new_reading_speculates_again_on_its_own_words() -> None:
    """Issue 25: once the recognizer's new reading is confirmed, the gate keys on it (it fired
    on "book a table" and never again in the turn before)."""
    extractor = SignalExtractor({"Rhea": []})
    session = TranscriptStabilizer(signals=extractor)
    texts = ["book a", "book a table", "book a table for", "look at the cable"]
    texts += ["look at the cable for Rhea", "look at the cable for Rhea tonight"]
    texts += ["look at the cable for Rhea tonight at"]
    steps = [session.on_partial("a", text, 1000 * i) for i, text in enumerate(texts)]
    assert steps[2].decision is GateDecision.FIRE  # "book a table": book, table
    revised = steps[4]
    assert revised.hypothesis.revised
    assert revised.decision is GateDecision.FIRE  # look, cable: new content
    assert session.summary.contradictions == 2
    assert steps[5].signals.entities == ("Rhea",)
    assert steps[5].decision is GateDecision.FIRE_SIGNAL
