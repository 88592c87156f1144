from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from heard.speech import Segment
from heard.timeline.phrases import PhraseDraft, Track, build_phrases


def seg(start: float, end: float, text: str) -> Segment:
    return Segment(start, end, text)


def test_spec_example_two_participants_taking_turns() -> None:
    tracks = {
        "A": Track([seg(0, 10, "Hello"), seg(15, 25, "how are you")]),
        "B": Track([seg(10, 15, "Hello")]),
    }
    assert build_phrases(tracks) == [
        PhraseDraft("A", 0, 10, "Hello"),
        PhraseDraft("B", 10, 15, "Hello"),
        PhraseDraft("A", 15, 25, "how are you"),
    ]


def test_spec_example_a_late_joiner_overlaps() -> None:
    tracks = {
        "A": Track([seg(0, 20, "I'll start without you"), seg(30, 40, "so")]),
        "B": Track([seg(5, 15, "I'm here")], offset_s=5.0),
    }
    assert build_phrases(tracks) == [
        PhraseDraft("A", 0, 20, "I'll start without you"),
        PhraseDraft("B", 10, 20, "I'm here"),
        PhraseDraft("A", 30, 40, "so"),
    ]


def test_an_interjection_is_its_own_phrase_and_does_not_break_the_speaker() -> None:
    tracks = {
        "A": Track([seg(0, 5, "so the plan is"), seg(5.8, 12, "to ship on friday")]),
        "B": Track([seg(5.0, 5.6, "uh-huh")]),
    }
    assert build_phrases(tracks) == [
        PhraseDraft("A", 0, 12, "so the plan is to ship on friday"),
        PhraseDraft("B", 5.0, 5.6, "uh-huh"),
    ]


@pytest.mark.parametrize(
    ("duration", "phrases"),
    [(1.49, 2), (1.5, 3), (4.0, 3)],
)
def test_the_interjection_threshold_is_strict(duration: float, phrases: int) -> None:
    tracks = {
        "A": Track([seg(0, 5, "one"), seg(10, 12, "two")]),
        "B": Track([seg(6, 6 + duration, "reply")]),
    }
    assert len(build_phrases(tracks)) == phrases


def test_the_threshold_is_configurable() -> None:
    tracks = {
        "A": Track([seg(0, 5, "one"), seg(10, 12, "two")]),
        "B": Track([seg(6, 8, "a longer reply")]),
    }
    assert len(build_phrases(tracks)) == 3
    assert len(build_phrases(tracks, interjection_threshold_s=3.0)) == 2
    with pytest.raises(ValueError, match=">= 0"):
        build_phrases(tracks, interjection_threshold_s=-1)


def test_silence_inside_one_speaker_does_not_break_the_phrase() -> None:
    tracks = {"A": Track([seg(0, 2, "first"), seg(30, 32, "after a long pause")])}
    assert build_phrases(tracks) == [PhraseDraft("A", 0, 32, "first after a long pause")]


def test_overlapping_speech_keeps_both() -> None:
    tracks = {
        "A": Track([seg(0, 6, "we should ship")]),
        "B": Track([seg(3, 9, "no wait we cannot")]),
    }
    assert build_phrases(tracks) == [
        PhraseDraft("A", 0, 6, "we should ship"),
        PhraseDraft("B", 3, 9, "no wait we cannot"),
    ]


def test_empty_tracks_and_no_tracks() -> None:
    assert build_phrases({}) == []
    assert build_phrases({"A": Track([]), "B": Track([], offset_s=3)}) == []
    one = build_phrases({"A": Track([seg(1, 2, "hi")]), "B": Track([])})
    assert one == [PhraseDraft("A", 1, 2, "hi")]


def test_one_speaker_is_one_phrase() -> None:
    tracks = {"A": Track([seg(0, 1, "a"), seg(1, 2, "b"), seg(2, 3, "c")], offset_s=2)}
    assert build_phrases(tracks) == [PhraseDraft("A", 2, 5, "a b c")]


def test_ties_at_equal_start_are_broken_by_end_then_name() -> None:
    tracks = {
        "bob": Track([seg(0, 4, "b")]),
        "alice": Track([seg(0, 4, "a")]),
        "carol": Track([seg(0, 3, "c")]),
    }
    order = [p.participant for p in build_phrases(tracks)]
    assert order == ["carol", "alice", "bob"]
    assert build_phrases(dict(reversed(tracks.items()))) == build_phrases(tracks)


def test_input_is_not_mutated() -> None:
    segments = [seg(0, 1, "x")]
    tracks = {"A": Track(segments)}
    build_phrases(tracks)
    assert segments == [seg(0, 1, "x")]


def test_a_segment_cannot_end_before_it_starts() -> None:
    with pytest.raises(ValueError, match="before it starts"):
        Segment(3, 2, "x")


names = st.sampled_from(["alice", "bob", "carol"])


@st.composite
def meetings(draw: st.DrawFn) -> dict[str, Track]:
    tracks = {}
    counter = 0
    for name in draw(st.lists(names, unique=True, max_size=3)):
        t = 0.0
        segments = []
        for _ in range(draw(st.integers(0, 8))):
            t += draw(st.floats(0, 5, allow_nan=False))
            length = draw(st.floats(0, 6, allow_nan=False))
            counter += 1
            segments.append(Segment(t, t + length, f"w{counter}"))
            t += length
        tracks[name] = Track(segments, offset_s=draw(st.floats(0, 20, allow_nan=False)))
    return tracks


@given(meetings(), st.floats(0, 3, allow_nan=False))
def test_phrase_properties(tracks: dict[str, Track], threshold: float) -> None:
    phrases = build_phrases(tracks, interjection_threshold_s=threshold)
    # every segment's text lands in exactly one phrase, of its participant, in order
    for name, track in tracks.items():
        spoken = [w for p in phrases if p.participant == name for w in p.text.split()]
        assert spoken == [s.text for s in track.segments]
    # sorted by start
    assert [p.start for p in phrases] == sorted(p.start for p in phrases)
    # each phrase spans exactly its segments
    for p in phrases:
        track = tracks[p.participant]
        mine = [s for s in track.segments if s.text in p.text.split()]
        assert p.start == min(s.start for s in mine) + track.offset_s
        assert p.end == max(s.end for s in mine) + track.offset_s


def test_a_tie_that_changes_the_grouping_is_broken_by_name_in_any_input_order() -> None:
    # A and B both start a 7 s segment at 5 s; A's name sorts first, so A's run continues
    # (0-12) and B's overlapping segment is its own phrase. B first would split A in two.
    a = Track([seg(0, 5, "a1"), seg(5, 12, "a2")])
    b = Track([seg(5, 12, "b1")])
    expected = [PhraseDraft("A", 0, 12, "a1 a2"), PhraseDraft("B", 5, 12, "b1")]
    assert build_phrases({"A": a, "B": b}) == expected
    assert build_phrases({"B": b, "A": a}) == expected
