"""Leases (issue 71): a server's claims and runs belong to it while it renews its lease in the
store, and may be taken over once the lease runs out, wherever the server ran."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select, update

from heard.meetings import jobs
from heard.meetings.runner import MeetingRunner
from heard.speech import Segment
from heard.store.database import Database
from heard.store.holder import LOCAL, this_holder
from heard.store.leases import end_lease, judge, renew_lease
from heard.store.meetings import TrackSpec, create_meeting
from heard.store.models import AudioTrack, Meeting, MeetingStatus, TrackStatus
from heard.store.runs import accept_run, runs_of, take_run
from heard.store.tracks import claim_track, recover_abandoned, release_claims
from heard.store.views import track_states
from heard.testing import FakeTranscriber

T0 = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)
LEASE_S = 30.0
ELSEWHERE = "elsewhere:41:7"
"""A server on another host: nothing this host shows tells whether it runs."""
SAID = [Segment(0.0, 1.0, "hello")]


def meeting(db: Database, location: str = "a.wav") -> tuple[uuid.UUID, uuid.UUID]:
    mid = create_meeting(db, title="t", started_at=T0, tracks=[TrackSpec("ana", location)])
    return mid, track_states(db, mid)[0].id


def finished(db: Database, meetings: list[uuid.UUID]) -> None:
    """Wait (up to 30 s) until the meetings are no longer pending."""
    deadline = time.monotonic() + 30
    while any(jobs.view(db, m).meeting.status is MeetingStatus.PENDING for m in meetings):
        assert time.monotonic() < deadline, [jobs.view(db, m).status for m in meetings]
        time.sleep(0.02)


def test_a_holder_runs_while_it_renews_and_is_gone_a_lease_after_its_last_renewal(
    db: Database,
) -> None:
    renew_lease(db, ELSEWHERE, T0)
    renew_lease(db, ELSEWHERE, T0 + timedelta(seconds=20))  # a second renewal updates the row
    seen = judge(db, T0 + timedelta(seconds=49), LEASE_S)
    assert seen.renewing(ELSEWHERE)
    assert not seen.gone(ELSEWHERE)
    seen = judge(db, T0 + timedelta(seconds=51), LEASE_S)
    assert seen.gone(ELSEWHERE)
    assert not seen.renewing(ELSEWHERE)
    assert not seen.gone("nobody-knows:1:1")  # no lease: only the stuck timeout can tell


def test_an_observer_not_yet_in_touch_for_a_lease_judges_no_one_by_lease(db: Database) -> None:
    """After a store outage every lease looks old: none could be renewed while it was away."""
    renew_lease(db, ELSEWHERE, T0)
    assert judge(db, T0 + timedelta(hours=1), LEASE_S, by_lease=False) is LOCAL
    assert not LOCAL.gone(ELSEWHERE)


def test_a_clean_stop_ends_the_lease_at_once(db: Database) -> None:
    renew_lease(db, ELSEWHERE, T0)
    end_lease(db, ELSEWHERE, T0 + timedelta(seconds=1))
    assert judge(db, T0 + timedelta(seconds=2), LEASE_S).gone(ELSEWHERE)


def test_claims_expire_with_the_lease_and_never_grow_stale_while_it_is_renewed(
    db: Database,
) -> None:
    mid, tid = meeting(db)
    assert claim_track(db, tid, T0, holder=ELSEWHERE) is not None
    renew_lease(db, ELSEWHERE, T0 + timedelta(hours=2))
    later = T0 + timedelta(hours=2, seconds=10)
    # older than the stuck timeout, but its holder still renews: a long track, not a dead one
    alive = judge(db, later, LEASE_S)
    assert recover_abandoned(db, mid, later, stuck_after_s=60, max_attempts=3, holders=alive) == 0
    # with no lease to go by, the age decides, as before leases
    assert recover_abandoned(db, mid, later, stuck_after_s=60 * 60 * 3, max_attempts=3) == 0
    expired = judge(db, later + timedelta(seconds=LEASE_S), LEASE_S)
    assert recover_abandoned(db, mid, later, stuck_after_s=1e9, max_attempts=3,
                             holders=expired) == 1  # fmt: skip
    [track] = track_states(db, mid)
    assert track.status is TrackStatus.PENDING
    assert f"its process {ELSEWHERE} is gone" in (track.last_error or "")


def test_one_of_two_servers_racing_takes_a_dead_servers_run(db: Database) -> None:
    mid, _ = meeting(db)
    accept_run(db, mid, ELSEWHERE)
    renew_lease(db, ELSEWHERE, T0)
    alive = judge(db, T0 + timedelta(seconds=1), LEASE_S)
    assert not take_run(db, mid, "b:1:1", alive)  # its server still renews
    gone = judge(db, T0 + timedelta(seconds=LEASE_S + 1), LEASE_S)
    won = [take_run(db, mid, name, gone) for name in ("b:1:1", "c:1:1")]
    assert won == [True, False]
    assert runs_of(db, "b:1:1") == [mid]


def test_a_holder_gives_back_only_its_claims_outside_the_runs_it_still_has(db: Database) -> None:
    cut, cut_track = meeting(db)
    running, running_track = meeting(db)
    theirs, theirs_track = meeting(db)
    for tid, holder in ((cut_track, "me:1:1"), (running_track, "me:1:1"),
                        (theirs_track, ELSEWHERE)):  # fmt: skip
        assert claim_track(db, tid, T0, holder=holder) is not None
    assert release_claims(db, "me:1:1", {running}, T0) == [cut]
    assert [t.status for t in track_states(db, cut)] == [TrackStatus.PENDING]
    assert [t.status for t in track_states(db, running)] == [TrackStatus.TRANSCRIBING]
    assert [t.status for t in track_states(db, theirs)] == [TrackStatus.TRANSCRIBING]


def test_a_servers_keeper_takes_over_the_run_and_the_claim_of_a_server_whose_lease_ran_out(
    db: Database,
) -> None:
    """A run accepted elsewhere (one track claimed mid-run, one waiting) and a second meeting
    queued there: another server's keeper finishes both, once in touch for a lease."""
    now = datetime.now(UTC)
    mid = create_meeting(db, title="t", started_at=T0,
                         tracks=[TrackSpec("ana", "a.wav"), TrackSpec("bo", "b.wav")])  # fmt: skip
    queued, _ = meeting(db, "c.wav")
    accept_run(db, mid, ELSEWHERE)
    accept_run(db, queued, ELSEWHERE)
    ana = next(t.id for t in track_states(db, mid) if t.participant == "ana")
    assert claim_track(db, ana, now, holder=ELSEWHERE) is not None
    renew_lease(db, ELSEWHERE, now - timedelta(seconds=3))
    fake = FakeTranscriber({name: SAID for name in ("a.wav", "b.wav", "c.wav")})
    runner = MeetingRunner(db, fake, lease_s=0.2)
    try:
        runner.look_after()  # in touch for no time yet: the lease does not count
        assert fake.calls == []
        time.sleep(0.25)
        runner.look_after()
        finished(db, [mid, queued])
    finally:
        runner.close()
    assert sorted(fake.calls) == ["a.wav", "b.wav", "c.wav"]  # each once
    with db.session() as s:
        rows = s.execute(select(Meeting.id, Meeting.status, Meeting.run_by)).all()
    assert {(m, status, by) for m, status, by in rows} == {
        (mid, MeetingStatus.COMPLETE, None),
        (queued, MeetingStatus.COMPLETE, None),
    }
    assert judge(db, datetime.now(UTC), LEASE_S).gone(this_holder())  # its lease ended with it


def test_a_run_cut_short_by_the_store_runs_again_once_it_answers(db: Database) -> None:
    """What a store outage leaves: this process's run accepted and its track claimed by it,
    no thread on it any more. The keeper gives the track back and runs the meeting again."""
    mid, tid = meeting(db)
    accept_run(db, mid)
    assert claim_track(db, tid, datetime.now(UTC)) is not None
    with db.session() as s:  # the attempt the outage cut short
        s.execute(update(AudioTrack).where(AudioTrack.id == tid).values(attempts=1))
    fake = FakeTranscriber({"a.wav": SAID})
    runner = MeetingRunner(db, fake, take_over=False)
    try:
        runner.look_after()
        finished(db, [mid])
    finally:
        runner.close()
    assert fake.calls == ["a.wav"]
    assert jobs.view(db, mid).status == "complete"
    assert runs_of(db, this_holder()) == []


def test_the_keeper_never_gives_back_the_track_of_a_run_in_progress_here(db: Database) -> None:
    """A look of the keeper while this process transcribes: the claim is the run's own, not
    one a store outage left, and stays; the track is transcribed once."""
    mid, _ = meeting(db)
    looks: list[list[str]] = []

    def look(_: str) -> None:  # in the middle of the transcription, its claim held
        runner.look_after()
        looks.append([str(t.status) for t in track_states(db, mid)])

    fake = FakeTranscriber({"a.wav": SAID}, before=look)
    runner = MeetingRunner(db, fake, take_over=False)
    try:
        runner.start("", mid)
        finished(db, [mid])
    finally:
        runner.close()
    assert looks == [["transcribing"]]
    assert fake.calls == ["a.wav"]
    assert jobs.view(db, mid).status == "complete"


def test_a_look_of_the_keeper_between_a_users_start_and_its_run_runs_it_once(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The keeper runs this process's runs that have no thread here. A look that came after
    the store said a user's run was this process's, and before its thread started, ran it as
    the keeper's: the user's place was never given back (one meeting at a time here: the
    next start was a 429 for good)."""
    from heard.errors import BusyError
    from heard.meetings import runner as runner_module

    first, _ = meeting(db)
    second, _ = meeting(db, "b.wav")
    fake = FakeTranscriber({"a.wav": SAID, "b.wav": SAID})
    runner = MeetingRunner(db, fake, take_over=False, per_user=1)
    accepted = runner_module.accept_run

    def accepted_then_looked(db_: Database, meeting_id: uuid.UUID) -> None:
        accepted(db_, meeting_id)
        runner.look_after()

    monkeypatch.setattr(runner_module, "accept_run", accepted_then_looked)
    try:
        runner.start("", first)
        finished(db, [first])
        deadline = time.monotonic() + 10
        while True:  # the place comes back once the run's thread has ended
            try:
                runner.start("", second)
                break
            except BusyError:
                assert time.monotonic() < deadline, "the user's place never came back"
                time.sleep(0.02)
        finished(db, [second])
    finally:
        runner.close()
    assert fake.calls == ["a.wav", "b.wav"]


def test_a_run_that_met_a_bug_is_not_run_again_by_every_look(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    from heard.meetings import runner as runner_module

    mid, _ = meeting(db)
    runs: list[uuid.UUID] = []

    def broken(meeting_id: uuid.UUID, **_: object) -> None:
        runs.append(meeting_id)
        raise RuntimeError("a bug")

    monkeypatch.setattr(runner_module, "run_pipeline", broken)
    runner = MeetingRunner(db, FakeTranscriber({}), take_over=False)
    try:
        runner.start("", mid)
        for _ in range(3):
            time.sleep(0.1)
            runner.look_after()
        time.sleep(0.1)
    finally:
        runner.close()
    assert runs == [mid]
