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
        # on the timeline's millisecond grid, offsets taken to the millisecond too
        offset = round(track.offset_s * 1000)
        assert p.start == (min(round(s.start * 1000) for s in mine) + offset) / 1000
        assert p.end == (max(round(s.end * 1000) for s in mine) + offset) / 1000


def test_a_tie_that_changes_the_grouping_is_broken_by_name_in_any_input_order() -> None:
    # A and B both start a 7 s segment at 5 s; A's name sorts first, so A's run continues
    # (0-12) and B's overlapping segment is its own phrase. B first would split A in two.
    a = Track([seg(0, 5, "a1"), seg(5, 12, "a2")])
    b = Track([seg(5, 12, "b1")])
    expected = [PhraseDraft("A", 0, 12, "a1 a2"), PhraseDraft("B", 5, 12, "b1")]
    assert build_phrases({"A": a, "B": b}) == expected
    assert build_phrases({"B": b, "A": a}) == expected


@given(
    st.integers(0, 360_000),  # the reply's start on the meeting timeline, in 10 ms steps
    st.integers(0, 6_000),  # its track's offset, in 10 ms steps
    st.sampled_from([149, 150, 151]),  # its duration, in 10 ms steps
)
def test_the_threshold_is_decided_exactly_on_a_10_ms_grid(
    start_cs: int, offset_cs: int, duration_cs: int
) -> None:
    # B's reply is written in its own track's time (start - offset), as a recognizer writes it
    start, offset = start_cs / 100, min(offset_cs, start_cs) / 100
    written = round(start - offset, 2)
    reply = seg(written, round(written + duration_cs / 100, 2), "reply")
    a = Track([seg(0, start, "one"), seg(start + 100, start + 102, "two")] if start else
              [seg(start + 100, start + 102, "two")])  # fmt: skip
    phrases = build_phrases({"A": a, "B": Track([reply], offset_s=offset)})
    broken = duration_cs >= 150  # strictly shorter than 1.5 s is an interjection
    a_phrases = [p for p in phrases if p.participant == "A"]
    assert len(a_phrases) == (2 if broken and start else 1)
    [b] = [p for p in phrases if p.participant == "B"]
    assert b.end - b.start == pytest.approx(duration_cs / 100)
    assert (b.start, b.end) == (round(b.start, 3), round(b.end, 3))  # no 2.0099999 written out


def test_a_reply_written_0_51_to_2_01_lasts_exactly_1_5_s() -> None:
    tracks = {"A": Track([seg(0, 5, "one"), seg(6, 7, "two")]), "B": Track([seg(0.51, 2.01, "r")])}
    assert [p.participant for p in build_phrases(tracks)] == ["A", "B", "A"]
