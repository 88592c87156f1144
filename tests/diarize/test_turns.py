"""Each recognized word goes to exactly one speaker, in order (``split_words``)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from heard.diarize import Diarization, SpeakerTurn, speaker_words, split_words
from heard.speech import Segment, Word


@st.composite
def talk(draw: st.DrawFn) -> tuple[list[Segment], Diarization]:
    t, segments = 0.0, []
    for s in range(draw(st.integers(0, 5))):
        ws = []
        for i in range(draw(st.integers(1, 6))):
            t += draw(st.floats(-0.3, 1.5))  # Whisper's words can overlap, or last no time
            t = max(t, 0.0)
            length = draw(st.sampled_from([0.0, 0.3, 2.0]))
            ws.append(Word(round(t, 3), round(t + length, 3), f"w{s}_{i}"))
            t += length
        segments.append(Segment(ws[0].start, ws[-1].end, " ".join(w.text for w in ws), tuple(ws)))
    turns = []
    for _ in range(draw(st.integers(0, 6))):
        a = draw(st.floats(0.0, max(t, 1.0)))
        turns.append(SpeakerTurn(round(a, 3), round(a + draw(st.floats(0.1, 5.0)), 3),
                                 draw(st.integers(0, 2))))  # fmt: skip
    return segments, Diarization(tuple(turns), len({x.speaker for x in turns}))


@given(talk())
def test_every_word_once_with_its_speaker(case: tuple[list[Segment], Diarization]) -> None:
    segments, diarization = case
    spoken = split_words(segments, diarization)
    given_out = sorted(w.text for segs in spoken.values() for s in segs for w in s.words)
    assert given_out == sorted(w.text for s in segments for w in s.words)
    for segs in spoken.values():
        assert all(s.text == " ".join(w.text for w in s.words) for s in segs)
        for s in segs:  # a segment holds its words, however they were placed
            assert all(s.start <= w.start <= w.end <= s.end for w in s.words)


def test_a_word_goes_to_the_turn_it_overlaps_most() -> None:
    seg = Segment(0.0, 2.0, "a b", (Word(0.0, 1.0, "a"), Word(1.0, 2.0, "b")))
    d = Diarization((SpeakerTurn(0.0, 1.2, 0), SpeakerTurn(1.1, 3.0, 1)), 2)
    spoken = split_words([seg], d)
    assert [s.text for s in spoken[0]] == ["a"]
    assert [s.text for s in spoken[1]] == ["b"]


def test_a_word_far_from_any_turn_stays_with_the_speaker_before_it() -> None:
    seg = Segment(0.0, 9.0, "a b", (Word(0.0, 1.0, "a"), Word(8.0, 9.0, "b")))
    d = Diarization((SpeakerTurn(0.0, 1.0, 1), SpeakerTurn(20.0, 21.0, 0)), 2)
    assert [s.text for s in split_words([seg], d)[1]] == ["a b"]


def test_a_word_inside_a_long_turn_after_many_short_ones_is_that_turns() -> None:
    blips = [SpeakerTurn(1.0 + i, 1.1 + i, 1) for i in range(70)]  # 70 back-channels
    d = Diarization((SpeakerTurn(0.0, 100.0, 0), *blips), 2)
    word = Segment(80.2, 80.9, "w", (Word(80.2, 80.9, "w"),))
    assert list(split_words([word], d)) == [0]


def test_a_segment_of_one_speaker_keeps_the_recognizers_text() -> None:
    seg = Segment(0.0, 1.0, "今日は", (Word(0.0, 0.5, "今日"), Word(0.5, 1.0, "は")))
    d = Diarization((SpeakerTurn(0.0, 1.0, 0),), 1)
    assert split_words([seg], d)[0][0].text == "今日は"


def test_words_take_their_times_from_their_speakers_speech() -> None:
    """Whisper's word edges are off by a tenth of a second or more: each word is cut to its
    speaker's speech, a short pause inside a turn is the word before it, and a turn starts
    with its first word and ends with its last."""
    words = (Word(0.9, 1.5, "so"), Word(1.5, 2.0, "we"), Word(2.4, 3.3, "ship."),
             Word(3.2, 3.9, "No."))  # fmt: skip
    d = Diarization((SpeakerTurn(0.6, 3.1, 0), SpeakerTurn(3.1, 3.7, 1)), 2)
    placed = speaker_words([Segment(0.9, 3.9, "so we ship. No.", words)], d)
    assert [(w.start, w.end, w.text, k) for w, k in placed] == [
        (0.6, 1.5, "so", 0), (1.5, 2.4, "we", 0), (2.4, 3.1, "ship.", 0), (3.1, 3.7, "No.", 1),
    ]  # fmt: skip
    spoken = split_words([Segment(0.9, 3.9, "so we ship. No.", words)], d)
    assert [(s.start, s.end, s.text) for s in spoken[0]] == [(0.6, 3.1, "so we ship.")]
    assert [(s.start, s.end, s.text) for s in spoken[1]] == [(3.1, 3.7, "No.")]


def test_a_word_far_from_its_speakers_speech_keeps_its_times() -> None:
    """A pause longer than WORD_GAP_S is not filled, nor an edge further than EDGE_S; a word
    over none of its speaker's speech is left where the recognizer put it."""
    words = (Word(3.0, 3.5, "one"), Word(5.0, 5.5, "two"), Word(20.0, 20.4, "three"))
    d = Diarization((SpeakerTurn(0.0, 8.0, 0),), 1)
    placed = speaker_words([Segment(3.0, 20.4, "one two three", words)], d)
    assert [(w.start, w.end) for w, _ in placed] == [(3.0, 3.5), (5.0, 5.5), (20.0, 20.4)]


def test_a_word_of_no_length_is_placed_in_the_turn_it_is_in() -> None:
    """faster-whisper gives a word start == end at times: it stays where it is, and its
    segment still holds every word."""
    words = (Word(0.5, 0.5, "z"), Word(0.7, 1.0, "a"))
    d = Diarization((SpeakerTurn(0.0, 5.0, 0),), 1)
    (segment,) = split_words([Segment(0.5, 1.0, "z a", words)], d)[0]
    assert all(segment.start <= w.start <= w.end <= segment.end for w in segment.words)
    assert [w.text for w in segment.words] == ["z", "a"]


def test_overlapping_words_across_two_stretches_do_not_break_their_segment() -> None:
    words = (Word(4.0, 6.0, "a"), Word(5.0, 5.2, "b"))
    d = Diarization((SpeakerTurn(4.9, 5.3, 0), SpeakerTurn(5.5, 9.0, 0)), 1)
    (segment,) = split_words([Segment(4.0, 6.0, "a b", words)], d)[0]
    assert segment.start <= min(w.start for w in segment.words)
    assert segment.end >= max(w.end for w in segment.words)
