"""run_pipeline against SQLite and PostgreSQL, with a fake transcriber at the seam."""

from __future__ import annotations

import subprocess
import sys
import threading
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import delete, event, func, select, update
from sqlalchemy.orm import ORMExecuteState, Session

from heard.errors import AudioError, NotFoundError
from heard.meetings import PipelineOptions, PipelineOutcome, jobs, run_pipeline
from heard.meetings.steps import claim_track, recover_stuck
from heard.speech import Segment
from heard.store.database import Database
from heard.store.holder import this_holder
from heard.store.meetings import TrackSpec, create_meeting
from heard.store.models import AudioTrack, Phrase, TrackStatus
from heard.store.views import meeting_phrases, track_states
from heard.testing import FakeClock, FakeTranscriber
from heard.timeline.phrases import Track, build_phrases

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)

SEGMENTS = {
    "alice.wav": [Segment(0, 5, "so the plan is"), Segment(5.8, 12, "to ship on friday")],
    "bob.wav": [Segment(0.0, 0.6, "uh-huh"), Segment(10, 16, "friday works for me")],
}
OFFSETS = {"alice.wav": 0.0, "bob.wav": 5.0}


class Crash(BaseException):
    """A process dying mid-step: not an Exception, so nothing in heard catches it."""


def new_meeting(db: Database, **status: TrackStatus) -> uuid.UUID:
    return create_meeting(
        db,
        title="planning",
        started_at=T0,
        tracks=[
            TrackSpec(
                "alice",
                "alice.wav",
                OFFSETS["alice.wav"],
                status=status.get("alice", TrackStatus.PENDING),
            ),
            TrackSpec(
                "bob", "bob.wav", OFFSETS["bob.wav"], status=status.get("bob", TrackStatus.PENDING)
            ),
        ],
    )


def expected_phrases() -> list[tuple[str, datetime, datetime, str]]:
    drafts = build_phrases(
        {
            "alice": Track(SEGMENTS["alice.wav"], OFFSETS["alice.wav"]),
            "bob": Track(SEGMENTS["bob.wav"], OFFSETS["bob.wav"]),
        }
    )
    return [
        (d.participant, T0 + timedelta(seconds=d.start), T0 + timedelta(seconds=d.end), d.text)
        for d in drafts
    ]


def stored(db: Database, mid: uuid.UUID) -> list[tuple[str, datetime, datetime, str]]:
    return [(p.participant, p.start_at, p.end_at, p.text) for p in meeting_phrases(db, mid)]


def phrase_rows(db: Database) -> int:
    with db.session() as s:
        return s.scalar(select(func.count()).select_from(Phrase)) or 0


def test_a_clean_run_stores_the_timeline_in_utc(db: Database) -> None:
    mid = new_meeting(db)
    fake = FakeTranscriber(SEGMENTS)
    result = run_pipeline(mid, db=db, transcriber=fake)
    assert result.outcome is PipelineOutcome.COMPLETE
    assert result.phrases == 3
    assert stored(db, mid) == expected_phrases()
    # alice's phrase runs through bob's interjection; bob's reply comes 5 s late (his offset)
    assert stored(db, mid)[0] == (
        "alice",
        T0,
        T0 + timedelta(seconds=12),
        "so the plan is to ship on friday",
    )
    assert sorted(fake.calls) == ["alice.wav", "bob.wav"]
    assert {t.status for t in track_states(db, mid)} == {TrackStatus.DONE}


def test_a_rerun_changes_nothing_and_transcribes_nothing(db: Database) -> None:
    mid = new_meeting(db)
    run_pipeline(mid, db=db, transcriber=FakeTranscriber(SEGMENTS))
    again = FakeTranscriber(SEGMENTS)
    result = run_pipeline(mid, db=db, transcriber=again)
    assert result.outcome is PipelineOutcome.COMPLETE
    assert again.calls == []
    assert stored(db, mid) == expected_phrases()
    assert phrase_rows(db) == 3


def test_a_crash_mid_transcription_recovers_after_the_stuck_timeout(db: Database) -> None:
    mid = new_meeting(db)
    clock = FakeClock(T0)
    options = PipelineOptions(stuck_after_s=600)

    def die_on_bob(location: str) -> None:
        if location == "bob.wav":
            raise Crash

    with pytest.raises(Crash):
        run_pipeline(
            mid,
            db=db,
            transcriber=FakeTranscriber(SEGMENTS, before=die_on_bob),
            clock=clock,
            options=options,
        )
    states = {t.participant: t.status for t in track_states(db, mid)}
    assert states["bob"] is TrackStatus.TRANSCRIBING
    assert states["alice"] in (TrackStatus.DONE, TrackStatus.PENDING)  # tracks run in id order
    assert phrase_rows(db) == 0

    # too soon: bob's track may still be in someone's hands
    clock.now += timedelta(seconds=60)
    soon = run_pipeline(
        mid, db=db, transcriber=FakeTranscriber(SEGMENTS), clock=clock, options=options
    )
    assert soon.outcome is PipelineOutcome.RETRY_LATER
    assert soon.waiting_on == ("bob",)
    assert phrase_rows(db) == 0

    clock.now += timedelta(seconds=600)
    later = FakeTranscriber(SEGMENTS)
    result = run_pipeline(mid, db=db, transcriber=later, clock=clock, options=options)
    assert result.outcome is PipelineOutcome.COMPLETE
    assert later.calls == ["bob.wav"]  # alice, if left pending, was done by the run "too soon"
    assert stored(db, mid) == expected_phrases()
    bob = next(t for t in track_states(db, mid) if t.participant == "bob")
    assert bob.attempts == 2


def test_a_claim_whose_process_is_gone_is_recovered_at_once(db: Database) -> None:
    mid = new_meeting(db)
    clock = FakeClock(T0)
    options = PipelineOptions(stuck_after_s=600)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    host = this_holder().split(":")[0]
    with db.session() as s:
        bob = s.scalars(select(AudioTrack).where(AudioTrack.location == "bob.wav")).one()
        bob_id = bob.id
    assert claim_track(db, bob_id, clock(), holder=f"{host}:{dead.pid}:-") is not None
    assert recover_stuck(db, mid, clock(), options) == 1  # no waiting for the timeout
    bob_state = next(t for t in track_states(db, mid) if t.participant == "bob")
    assert bob_state.status is TrackStatus.PENDING
    assert bob_state.claimed_by is None
    assert f"its process {host}:{dead.pid}:- is gone" in (bob_state.last_error or "")
    # a claim held by a live process of this host is left alone until the timeout
    assert claim_track(db, bob_id, clock()) is not None
    assert recover_stuck(db, mid, clock(), options) == 0
    later = FakeTranscriber(SEGMENTS)
    clock.now += timedelta(seconds=601)
    result = run_pipeline(mid, db=db, transcriber=later, clock=clock, options=options)
    assert result.outcome is PipelineOutcome.COMPLETE
    assert stored(db, mid) == expected_phrases()


@pytest.mark.parametrize("where", ["before_delete", "after_delete", "after_insert"])
def test_a_crash_while_writing_phrases_leaves_the_old_ones(
    db: Database, where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    mid = new_meeting(db)
    run_pipeline(mid, db=db, transcriber=FakeTranscriber(SEGMENTS))
    before = stored(db, mid)
    # make the next build differ, so a half-written build would show
    with db.session() as s:
        s.execute(update(AudioTrack).where(AudioTrack.location == "bob.wav").values(segments=[]))

    def crash_after_flush(*_: object) -> None:
        raise Crash

    def crash_after_delete(state: ORMExecuteState) -> None:
        if state.is_delete:
            state.invoke_statement()  # the old phrases are deleted in this transaction...
            raise Crash  # ...and the process dies before the new ones are written

    def crash_before_delete(*_: object, **__: object) -> None:
        raise Crash

    listeners = {"after_delete": ("do_orm_execute", crash_after_delete),
                 "after_insert": ("after_flush", crash_after_flush)}  # fmt: skip
    if where == "before_delete":
        monkeypatch.setattr("heard.store.phrases.build_phrases", crash_before_delete)
    else:
        event.listen(Session, *listeners[where])
    try:
        with pytest.raises(Crash):
            run_pipeline(mid, db=db, transcriber=FakeTranscriber(SEGMENTS))
    finally:
        if where in listeners:
            event.remove(Session, *listeners[where])
    assert stored(db, mid) == before
    monkeypatch.undo()
    result = run_pipeline(mid, db=db, transcriber=FakeTranscriber(SEGMENTS))
    assert result.phrases == 1  # only alice now
    assert phrase_rows(db) == 1


def test_a_track_still_recording_means_retry_later(db: Database) -> None:
    mid = new_meeting(db, bob=TrackStatus.RECORDING)
    fake = FakeTranscriber(SEGMENTS)
    result = run_pipeline(mid, db=db, transcriber=fake, options=PipelineOptions(retry_delay_s=45))
    assert result.outcome is PipelineOutcome.RETRY_LATER
    assert result.retry_in_s == 45
    assert result.waiting_on == ("bob",)
    assert fake.calls == ["alice.wav"]  # work that can be done is done
    assert phrase_rows(db) == 0
    with db.session() as s:
        s.execute(
            update(AudioTrack)
            .where(AudioTrack.location == "bob.wav")
            .values(status=TrackStatus.PENDING)
        )
    assert run_pipeline(mid, db=db, transcriber=fake).outcome is PipelineOutcome.COMPLETE
    assert stored(db, mid) == expected_phrases()


def test_a_flaky_transcriber_is_retried_then_the_track_fails(db: Database) -> None:
    mid = new_meeting(db)
    fake = FakeTranscriber({**SEGMENTS, "bob.wav": RuntimeError("model exploded")})
    result = run_pipeline(mid, db=db, transcriber=fake, options=PipelineOptions(max_attempts=3))
    assert result.outcome is PipelineOutcome.PARTIAL
    assert result.failed == ("bob",)
    assert fake.calls.count("bob.wav") == 3
    bob = next(t for t in track_states(db, mid) if t.participant == "bob")
    assert (bob.status, bob.attempts) == (TrackStatus.FAILED, 3)
    assert bob.last_error == "RuntimeError: model exploded"
    # the failed track does not block the rest
    assert [p.participant for p in meeting_phrases(db, mid)] == ["alice"]


def test_bad_audio_fails_the_track_at_once_with_its_reason(db: Database) -> None:
    mid = new_meeting(db)
    fake = FakeTranscriber({**SEGMENTS, "bob.wav": AudioError("bob.wav: cannot decode audio")})
    result = run_pipeline(mid, db=db, transcriber=fake)
    assert result.outcome is PipelineOutcome.PARTIAL
    bob = next(t for t in track_states(db, mid) if t.participant == "bob")
    assert (bob.status, bob.attempts, bob.last_error) == (
        TrackStatus.FAILED,
        1,
        "bob.wav: cannot decode audio",
    )


def test_every_track_failing_is_a_failed_meeting(db: Database) -> None:
    mid = new_meeting(db)
    fake = FakeTranscriber({k: AudioError(f"{k}: bad") for k in SEGMENTS})
    assert run_pipeline(mid, db=db, transcriber=fake).outcome is PipelineOutcome.FAILED
    assert phrase_rows(db) == 0


def test_a_track_stuck_on_its_last_attempt_is_marked_failed(db: Database) -> None:
    mid = new_meeting(db)
    clock = FakeClock(T0)
    with db.session() as s:
        s.execute(
            update(AudioTrack)
            .where(AudioTrack.location == "bob.wav")
            .values(status=TrackStatus.TRANSCRIBING, attempts=3, updated_at=T0 - timedelta(hours=2))
        )
    result = run_pipeline(mid, db=db, transcriber=FakeTranscriber(SEGMENTS), clock=clock)
    assert result.outcome is PipelineOutcome.PARTIAL
    bob = next(t for t in track_states(db, mid) if t.participant == "bob")
    assert bob.status is TrackStatus.FAILED
    assert "abandoned in transcribing after 3 attempts" in (bob.last_error or "")


def test_no_transcriber_is_a_noop(db: Database) -> None:
    mid = new_meeting(db)
    result = run_pipeline(mid, db=db, transcriber=None)
    assert result.outcome is PipelineOutcome.NOOP
    assert {t.status for t in track_states(db, mid)} == {TrackStatus.PENDING}


def test_unknown_meeting(db: Database) -> None:
    with pytest.raises(NotFoundError):
        run_pipeline(uuid.uuid4(), db=db, transcriber=FakeTranscriber({}))


def test_only_one_claim_wins(db: Database) -> None:
    mid = new_meeting(db)
    track_id = track_states(db, mid)[0].id
    first = claim_track(db, track_id, T0)
    second = claim_track(db, track_id, T0)
    assert first is not None
    assert first.attempts == 1
    assert second is None


def test_an_export_reads_the_meeting_in_one_transaction(db: Database) -> None:
    mid = new_meeting(db)
    run_pipeline(mid, db=db, transcriber=FakeTranscriber(SEGMENTS))
    begun: list[object] = []

    def count(connection: object) -> None:
        begun.append(connection)

    event.listen(db.engine, "begin", count)
    try:
        doc = jobs.document(db, mid, finished=True)
    finally:
        event.remove(db.engine, "begin", count)
    assert len(begun) == 1
    assert [(p.participant, p.text) for p in doc.phrases] == [
        (who, text) for who, _, _, text in expected_phrases()
    ]


@pytest.mark.parametrize(
    "db", [pytest.param("postgresql", marks=pytest.mark.services)], indirect=True
)
def test_a_rebuild_committed_mid_export_is_not_half_seen(db: Database) -> None:
    """PostgreSQL reads each statement afresh unless told otherwise: the export must not see
    the meeting from before a rebuild and its phrases from after it."""
    mid = new_meeting(db)
    run_pipeline(mid, db=db, transcriber=FakeTranscriber(SEGMENTS))
    statements: list[object] = []

    def meanwhile(state: ORMExecuteState) -> None:
        statements.append(state.statement)
        if len(statements) == 2:  # the meeting was read: its phrases are dropped meanwhile
            with db.session() as s:
                s.execute(delete(Phrase).where(Phrase.meeting_id == mid))

    event.listen(Session, "do_orm_execute", meanwhile)
    try:
        doc = jobs.document(db, mid)
    finally:
        event.remove(Session, "do_orm_execute", meanwhile)
    assert len(doc.phrases) == 3
    assert stored(db, mid) == []


@pytest.mark.parametrize("db", ["sqlite"], indirect=True)
def test_on_sqlite_a_rebuild_waits_for_the_export_reading_it(db: Database) -> None:
    """SQLite's driver reads outside any transaction unless one is begun: the export begins
    one, so a writer that comes mid-export waits for it rather than being half-seen."""
    mid = new_meeting(db)
    run_pipeline(mid, db=db, transcriber=FakeTranscriber(SEGMENTS))
    writers: list[threading.Thread] = []
    statements: list[object] = []

    def drop_phrases() -> None:
        with db.session() as s:
            s.execute(delete(Phrase).where(Phrase.meeting_id == mid))

    def meanwhile(state: ORMExecuteState) -> None:
        statements.append(state.statement)
        if len(statements) == 2:  # the meeting was read: a rebuild drops its phrases meanwhile
            writers.append(threading.Thread(target=drop_phrases))
            writers[0].start()
            writers[0].join(timeout=1.0)  # done at once, unless the export holds it off

    event.listen(Session, "do_orm_execute", meanwhile)
    try:
        doc = jobs.document(db, mid)
    finally:
        event.remove(Session, "do_orm_execute", meanwhile)
    writers[0].join()
    assert len(doc.phrases) == 3
    assert stored(db, mid) == []


def test_a_run_told_to_stop_gives_its_track_back_and_starts_no_other(db: Database) -> None:
    """A server shutting down: the track being transcribed stops at its next segment, its
    attempt not counted; once the process is gone, the next start takes the track back and
    resumes the meeting (HEARD_RESUME), which is then done whole."""
    mid = new_meeting(db)
    stop = threading.Event()
    fake = FakeTranscriber(SEGMENTS, before=lambda location: stop.set())
    result = run_pipeline(mid, db=db, transcriber=fake, stop=stop)
    assert result.outcome is PipelineOutcome.STOPPED
    assert len(fake.calls) == 1  # the other track was not started
    states = {t.participant: t for t in track_states(db, mid)}
    stopped = states["alice" if fake.calls == ["alice.wav"] else "bob"]
    assert (stopped.status, stopped.attempts) == (TrackStatus.TRANSCRIBING, 0)
    assert stopped.claimed_by == this_holder()  # still this process's, until it is gone
    assert "shutting down" in str(stopped.last_error)
    assert phrase_rows(db) == 0
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    with db.session() as s:  # the process exits
        s.execute(update(AudioTrack).where(AudioTrack.status == TrackStatus.TRANSCRIBING)
                  .values(claimed_by=f"{this_holder().split(':')[0]}:{dead.pid}:-"))  # fmt: skip
    assert jobs.recover_interrupted(db) == [mid]  # what the next start resumes
    again = run_pipeline(mid, db=db, transcriber=FakeTranscriber(SEGMENTS))
    assert again.outcome is PipelineOutcome.COMPLETE
    assert stored(db, mid) == expected_phrases()
