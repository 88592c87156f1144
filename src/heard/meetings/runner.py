"""Meetings run in this process, as a long-running one (the server) runs them: on threads of
their own, a bound on each user's waiting or running, how far each track has come, and the
meetings a process that is gone left off taken up again. Each run accepted is kept in the
store until it ends (``heard.store.runs``), so that one waiting here when the process dies is
not lost with it.

A keeper thread renews this process's lease in the store (``heard.store.leases``) and, at each
renewal, looks after the runs: its own that a store outage cut short run again once the store
answers (their tracks given back first), and those of servers that are gone (a process of this
host that no longer runs, or one whose lease ran out) are taken over, one server winning each.

``heard serve`` holds one ``MeetingRunner``; ``heard transcribe`` runs its one meeting in the
foreground instead (``run_pipeline`` with progress bars).
"""

from __future__ import annotations

import logging
import os
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from heard.asr.transcriber import Transcriber
from heard.errors import BusyError, HeardError
from heard.meetings import jobs
from heard.meetings.run import PipelineOutcome, TrackProgress, run_pipeline
from heard.meetings.steps import ClaimedTrack, PipelineOptions
from heard.store.database import Database
from heard.store.holder import LOCAL, this_holder
from heard.store.leases import end_lease, judge, renew_lease
from heard.store.models import MeetingStatus, TrackStatus, utc_now
from heard.store.runs import accept_run, end_run, runs_of, take_run
from heard.store.tracks import release_claims
from heard.store.views import get_meeting
from heard.work import lower_priority

__all__ = ["MeetingProgress", "MeetingRunner", "Started", "TrackFraction", "Watched"]

log = logging.getLogger("heard.meetings")


class Watched(TrackProgress):
    """How far each track this process transcribes has come, for the pages' progress bars.
    A recording of several people goes through two passes (who spoke when, then the words);
    each pass counts for its share."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tracks: dict[uuid.UUID, tuple[int, int, float]] = {}
        """track id -> (passes in all, passes done, fraction of this pass)."""

    def started(self, track: ClaimedTrack) -> None:
        passes = 1 if track.speakers is None or track.diarization is not None else 2
        with self._lock:
            self._tracks[track.id] = (passes, 0, 0.0)

    def advanced(self, track: ClaimedTrack, done_s: float, total_s: float) -> None:
        fraction = min(1.0, done_s / total_s) if total_s > 0 else 0.0
        with self._lock:
            passes, done, before = self._tracks.get(track.id, (1, 0, 0.0))
            if fraction < before and done + 1 < passes:  # went back: the next pass began
                done += 1
            self._tracks[track.id] = (passes, done, fraction)

    def finished(self, track: ClaimedTrack, status: TrackStatus) -> None:
        with self._lock:
            self._tracks.pop(track.id, None)

    def fraction(self, track_id: uuid.UUID) -> float | None:
        """How much of the track is transcribed (None: this process is not on it)."""
        with self._lock:
            found = self._tracks.get(track_id)
        if found is None:
            return None
        passes, done, fraction = found
        return (done + fraction) / passes


@dataclass(frozen=True, slots=True)
class Started:
    """What asking for a meeting's run did."""

    started: bool
    """Whether anything will transcribe it: False on a server that transcribes nothing."""
    queued_tasks: int = 0
    """With workers: the tasks sent (one per unfinished track, or the timeline build)."""


@dataclass(frozen=True, slots=True)
class TrackFraction:
    participant: str
    status: str
    fraction: float
    """0-1: 1 once done or failed; within a track only while this process transcribes it."""
    error: str | None
    location: str
    """The track's audio (for an edge to take out of ``error`` before a client reads it)."""


@dataclass(frozen=True, slots=True)
class MeetingProgress:
    status: str
    fraction: float
    """0-1 over all tracks; 1 once the phrases are built."""
    finished: bool
    phrases: int
    tracks: tuple[TrackFraction, ...]


class MeetingRunner:
    """The meetings this process has transcribed: on threads of their own, ``workers`` of them
    (cores but one), never on the request threads, so a user who runs many meetings stalls no
    one's requests; each user has at most ``per_user`` waiting or running (``BusyError``, a
    429, beyond). With ``queue`` they go to the Celery workers instead; with no
    ``transcriber`` runs are accepted and nothing is transcribed here. A stop gives each track
    back, and each run that waited stays accepted in the store, for the next start.

    ``keep`` starts the keeper (``lease_s``: the lease; with ``take_over``, the runs of
    servers that are gone are taken over, else only this process's own are looked after)."""

    def __init__(
        self,
        db: Database,
        transcriber: Transcriber | None,
        *,
        queue: bool = False,
        stopping: threading.Event | None = None,
        workers: int = 0,
        per_user: int = 4,
        lease_s: float = 30.0,
        take_over: bool = True,
        options: PipelineOptions | None = None,
    ) -> None:
        self.db, self.transcriber, self.queue = db, transcriber, queue
        self.stopping = stopping or threading.Event()
        self.per_user = per_user
        self.lease_s, self.take_over = lease_s, take_over
        self.options = options or PipelineOptions()
        self._threads = ThreadPoolExecutor(
            max_workers=workers or max(1, (os.cpu_count() or 2) - 1),
            thread_name_prefix="heard-run",
            initializer=lower_priority,  # live decoding first (heard.work)
        )
        self._lock = threading.Lock()
        self._waiting: dict[str, set[uuid.UUID]] = {}
        """Each user's meetings waiting or running here."""
        self._active: set[uuid.UUID] = set()
        """Every meeting waiting or running here (users' runs, and those taken over)."""
        self._broken: set[uuid.UUID] = set()
        """Meetings whose run here met a bug: the keeper does not run them again."""
        self._keeper: threading.Thread | None = None
        self._closing = threading.Event()
        self._in_touch_since: float | None = None
        """When the keeper's renewals began to go through without a gap (monotonic)."""
        self._leased = False
        """Whether this process has renewed a lease (to end when it closes)."""
        self.progress = Watched()
        """How far the tracks being transcribed here have come."""

    @property
    def transcribes(self) -> bool:
        """Whether a run here transcribes anything (here or on the workers)."""
        return self.queue or self.transcriber is not None

    def start(self, owner: str, meeting_id: uuid.UUID) -> Started:
        """Transcribe the meeting soon: on the workers with ``queue`` (the broker checked
        first), else here, the run kept in the store before this returns; nothing new if it
        is waiting or running here already. ``NotFoundError`` when ``owner`` has no such
        meeting."""
        get_meeting(self.db, meeting_id, owner)
        if self.queue:
            return Started(True, self._send(meeting_id))
        if self.transcriber is None:
            return Started(False)
        with self._lock:
            mine = self._waiting.setdefault(owner, set())
            if meeting_id in mine or meeting_id in self._active:
                return Started(True)
            if len(mine) >= self.per_user:
                raise BusyError(
                    f"this user has {self.per_user} meetings waiting or transcribing; run this "
                    "one when one of them is done"
                )
            mine.add(meeting_id)
            self._active.add(meeting_id)  # before the store says it is ours: the keeper waits
            self._broken.discard(meeting_id)
        try:
            accept_run(self.db, meeting_id)
        except BaseException:
            with self._lock:
                mine.discard(meeting_id)
                self._active.discard(meeting_id)
            raise
        self._threads.submit(self._run, owner, meeting_id)
        return Started(True)

    def _submit(self, owner: str | None, meeting_id: uuid.UUID) -> None:
        """Run the meeting on a thread here, unless it waits or runs here already, or its
        last run here met a bug (a user's ``start`` tries it again)."""
        with self._lock:
            if meeting_id in self._active or meeting_id in self._broken:
                return
            self._active.add(meeting_id)
        self._threads.submit(self._run, owner, meeting_id)

    def resume(self, meeting_id: uuid.UUID) -> None:
        """Finish a meeting a process that is gone left off, here or on the workers (no
        per-user bound). A broker or database that is down is logged: the keeper tries
        again."""
        try:
            if self.queue:
                log.warning("resuming meeting %s on the workers", meeting_id)
                self._send(meeting_id)
                return
            if self.transcriber is None:
                return
            if take_run(self.db, meeting_id, this_holder(), LOCAL):  # one of the servers starting
                log.warning("resuming meeting %s, which a process that is gone left off",
                            meeting_id)  # fmt: skip
                self._submit(None, meeting_id)
        except HeardError as e:
            log.error("meeting %s not resumed: %s", meeting_id, e)

    def keep(self, first: list[uuid.UUID] | None = None) -> None:
        """Start the keeper: ``first`` resumed at once (the meetings start-up found left
        off), then a look every fifth of a lease until the process stops."""
        if not self.transcribes or self._keeper is not None:
            return
        self._keeper = threading.Thread(
            target=self._keep, args=(list(first or ()),), name="heard-keeper", daemon=True
        )
        self._keeper.start()

    def _keep(self, first: list[uuid.UUID]) -> None:
        for meeting_id in first:
            if self.stopping.is_set() or self._closing.is_set():
                return
            self.resume(meeting_id)
        while not self.stopping.is_set():
            try:
                self.look_after()
            except Exception:  # a bug: logged, and the next look tries again
                log.exception("the keeper's look at the runs failed")
            if self._closing.wait(self.lease_s / 5):
                return

    def look_after(self) -> None:
        """One look of the keeper: renew the lease; run again this process's runs that a
        store outage cut short; with ``take_over``, take over the runs of processes that
        are gone. A store that is away is waited for (logged once)."""
        me, now = this_holder(), utc_now()
        try:
            renew_lease(self.db, me, now)
        except HeardError as e:
            if self._in_touch_since is not None:
                log.warning("the store is away (%s): the runs wait for it", e)
            self._in_touch_since = None
            return
        self._leased = True
        if self._in_touch_since is None:
            self._in_touch_since = time.monotonic()
        by_lease = time.monotonic() - self._in_touch_since >= self.lease_s
        try:
            if not self.queue:
                with self._lock:  # no run of this process starts while its claims are read
                    here = set(self._active)
                    given_back = release_claims(self.db, me, here, now)
                for meeting_id in given_back:
                    log.warning("meeting %s: a track given back after a store outage", meeting_id)
                for meeting_id in runs_of(self.db, me):
                    self._submit(None, meeting_id)
            if not self.take_over:
                return
            holders = judge(self.db, now, self.lease_s, by_lease=by_lease)
            for meeting_id in jobs.recover_interrupted(self.db, self.options, now, holders):
                with self._lock:
                    running_here = meeting_id in self._active
                if not running_here and take_run(self.db, meeting_id, me, holders):
                    log.warning("taking over meeting %s, whose process is gone", meeting_id)
                    if self.queue:
                        self._send(meeting_id)
                    else:
                        self._submit(None, meeting_id)
        except HeardError as e:  # the store went away mid-look: the next look
            log.warning("the keeper's look at the runs stopped: %s", e)

    def _send(self, meeting_id: uuid.UUID) -> int:
        """Send the meeting's work to the workers; the broker keeps the run from then on, so
        a run a process that is gone had accepted is no longer lost. The tasks sent."""
        sent = jobs.enqueue(self.db, meeting_id)
        end_run(self.db, meeting_id, None)
        return sent

    def _run(self, owner: str | None, meeting_id: uuid.UUID) -> None:
        try:
            if self.transcriber is not None:
                ran = run_pipeline(meeting_id, db=self.db, transcriber=self.transcriber,
                                   stop=self.stopping, progress=self.progress)  # fmt: skip
                if ran.outcome is not PipelineOutcome.STOPPED:  # stopped: the next start's to end
                    end_run(self.db, meeting_id, this_holder())
        except HeardError as e:  # the store went away: the keeper runs it again once it is back
            log.warning("meeting %s: the run stopped: %s", meeting_id, e)
        except Exception:  # a bug: logged, not retried by the keeper; the next start tries again
            log.exception("meeting %s: the run stopped", meeting_id)
            with self._lock:
                self._broken.add(meeting_id)
        finally:
            with self._lock:
                self._active.discard(meeting_id)
                if owner is not None:
                    self._waiting[owner].discard(meeting_id)

    def progress_of(self, meeting_id: uuid.UUID, owner: str) -> MeetingProgress:
        """How far the meeting's transcription has come: each track's fraction (this process's
        runs report within a track; tracks on workers count when they are done), the whole,
        and whether it is finished."""
        stands = jobs.view(self.db, meeting_id, owner)
        tracks = []
        for t in stands.tracks:
            if t.status in (TrackStatus.DONE, TrackStatus.FAILED):
                fraction = 1.0
            elif t.status is TrackStatus.TRANSCRIBING:
                fraction = self.progress.fraction(t.id) or 0.0
            else:
                fraction = 0.0
            tracks.append(TrackFraction(t.participant, jobs.track_label(t), round(fraction, 3),
                                        t.last_error, t.location))  # fmt: skip
        finished = stands.meeting.status is not MeetingStatus.PENDING
        whole = sum(t.fraction for t in tracks) / max(1, len(tracks))
        return MeetingProgress(
            status=stands.status,
            fraction=1.0 if finished else round(min(whole, 0.99), 3),
            finished=finished,
            phrases=stands.meeting.phrases,
            tracks=tuple(tracks),
        )

    def close(self) -> None:
        """No more runs: those waiting are dropped (their tracks stay pending, and the runs
        accepted in the store: the next start takes them back), those running are waited
        for; with ``stopping`` set, each gives its track back at its next segment. Then the
        lease ends, so that another server takes over at once what was given back."""
        self._closing.set()
        if self._keeper is not None:
            self._keeper.join()
        self._threads.shutdown(wait=True, cancel_futures=True)
        if self._leased:
            try:
                end_lease(self.db, this_holder(), utc_now())
            except HeardError as e:
                log.warning("the lease was not ended (%s): it runs out by itself", e)
