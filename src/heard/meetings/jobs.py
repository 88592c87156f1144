"""The meeting job, one home for every front end: submit (with the checks every front end
makes before storing), enqueue, how it stands, its document, rename a participant, delete.

``heard transcribe`` (in this process or ``--queue``), ``heard status`` and ``heard export``,
and the server's meeting routes all go through here; ``run_pipeline`` (``pipeline.run``) does
the work and finishes an interrupted run. The store keeps what was last written
(``transcribing``, ``pending``); a track whose process died mid-run (killed, crashed, the
server restarted) still reads ``transcribing`` there. It is shown as ``interrupted`` when its
holder, a process of this host, no longer runs, and so is its meeting; so is a pending
meeting whose accepted run was lost with the server that took it (``heard.store.runs``):
``heard transcribe --resume`` or ``POST /v1/meetings/{id}/run`` finishes it, and so does the
next server to start, with its resume on.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from heard.asr.audio import check_duration, measure_audio
from heard.errors import InputError
from heard.limits import MAX_TRACK_S
from heard.meetings.memory import forget_meeting, remember_meeting
from heard.meetings.steps import PipelineOptions, recover_stuck
from heard.store.database import Database
from heard.store.holder import LOCAL, Holders, holder_is_gone
from heard.store.meetings import TrackSpec, create_meeting, delete_meeting, rename_participant
from heard.store.models import MeetingStatus, TrackStatus
from heard.store.runs import lost_run_meeting_ids
from heard.store.tracks import track_of, transcribing_meeting_ids, unheard_track
from heard.store.views import MeetingSummary, TrackState, get_meeting, meeting_record, meeting_state
from heard.timeline.formats import TranscriptDoc

__all__ = [
    "INTERRUPTED",
    "MeetingView",
    "check_files",
    "delete",
    "document",
    "enqueue",
    "meeting_label",
    "recover_interrupted",
    "rename",
    "submit",
    "track_label",
    "unheard",
    "view",
]

INTERRUPTED = "interrupted"


def track_label(track: TrackState) -> str:
    """``track``'s status, ``interrupted`` when the process transcribing it is gone."""
    if track.status is TrackStatus.TRANSCRIBING and holder_is_gone(track.claimed_by):
        return INTERRUPTED
    return str(track.status)


def meeting_label(meeting: MeetingSummary, tracks: Sequence[TrackState]) -> str:
    """``meeting``'s status, ``interrupted`` when one of its tracks is, or when it is pending
    and the process that accepted its run is gone (the run was lost with it)."""
    if _run_lost(meeting) or any(track_label(t) == INTERRUPTED for t in tracks):
        return INTERRUPTED
    return str(meeting.status)


def _run_lost(meeting: MeetingSummary) -> bool:
    """Whether the pending ``meeting``'s run was accepted by a process that is gone before it
    ran (a finished meeting shows what it has: its phrases are built)."""
    return meeting.status is MeetingStatus.PENDING and holder_is_gone(meeting.run_by)


@dataclass(frozen=True, slots=True)
class MeetingView:
    """A meeting as people are shown it: its tracks and the status both tell."""

    meeting: MeetingSummary
    tracks: list[TrackState]

    @property
    def status(self) -> str:
        return meeting_label(self.meeting, self.tracks)

    def require_finished(self) -> None:
        """Refuse to write the transcript of a meeting whose phrases are not built, naming why."""
        if self.meeting.status is not MeetingStatus.PENDING:
            return
        states = ", ".join(f"{t.participant} {track_label(t)}" for t in self.tracks)
        short = str(self.meeting.id)[:8]
        hint = (
            f"; `heard transcribe --resume {short}` finishes it"
            if any(track_label(t) in (INTERRUPTED, "pending") for t in self.tracks)
            else ""
        )
        raise InputError(f"meeting {short} is not finished ({states}){hint}")


def view(db: Database, meeting_id: uuid.UUID | str, owner: str | None = None) -> MeetingView:
    """How the meeting stands (``NotFoundError`` if ``owner`` has none by that id)."""
    return MeetingView(*meeting_state(db, meeting_id, owner))


def document(
    db: Database, meeting_id: uuid.UUID | str, owner: str | None = None, *, finished: bool = False
) -> TranscriptDoc:
    """The stored transcript, read in one transaction; with ``finished``, refused while the
    phrases are not built."""
    record = meeting_record(db, meeting_id, owner)
    if finished:
        MeetingView(record.meeting, record.tracks).require_finished()
    return record.document()


def recover_interrupted(
    db: Database,
    options: PipelineOptions | None = None,
    now: datetime | None = None,
    holders: Holders = LOCAL,
) -> list[uuid.UUID]:
    """Take back the tracks of processes that are gone (as ``run_pipeline`` does for one
    meeting), in every meeting: they are pending again, or failed after their last attempt,
    and take uploads again. The meetings to resume: those that had one, and those whose
    accepted run a process that is gone never finished (``heard.store.runs``). ``holders``
    judges the processes (default: what this host shows of its own)."""
    options = options or PipelineOptions()
    now = now or datetime.now(UTC)
    stuck = [m for m in transcribing_meeting_ids(db) if recover_stuck(db, m, now, options, holders)]
    return stuck + [m for m in lost_run_meeting_ids(db, holders) if m not in stuck]


def check_files(tracks: Sequence[TrackSpec], max_track_s: float = MAX_TRACK_S) -> None:
    """Every track's file decodes, has the channel it names and lasts at most
    ``max_track_s`` (``InputError`` naming it)."""
    for spec in tracks:
        info = measure_audio(spec.location, max_track_s)
        check_duration(info, max_track_s)
        if spec.channel is not None and info.channels < 2:
            raise InputError(f"{spec.location}: has {info.channels} channel, cannot take #right")


def submit(
    db: Database,
    tracks: Sequence[TrackSpec],
    *,
    title: str,
    started_at: datetime | None = None,
    owner: str = "",
    workers: bool = False,
    migrate: bool = False,
    max_track_s: float = MAX_TRACK_S,
    diarize_here: bool = False,
) -> uuid.UUID:
    """Check the tracks' files (those that have one), then store the meeting with its tracks
    pending (or recording, for uploads to come); its id. With ``workers``, the broker is
    checked first and the meeting's work sent to the Celery workers once stored; with
    ``diarize_here``, a recording of several people needs this process's diarization models
    (``MissingDependencyError`` naming what is missing); with ``migrate``, the schema is
    brought up to date once the checks pass. Nothing is stored, and no schema made, on a bad
    file, a missing model or an unreachable broker."""
    check_files([t for t in tracks if t.location], max_track_s)
    if diarize_here and any(t.speakers is not None for t in tracks):
        from heard.diarize.onnx import model_files  # loads NumPy: only when diarizing

        model_files()
    if workers:
        from heard.meetings.celery_app import check_broker, enqueue_meeting

        check_broker()
    if migrate:
        db.migrate()
    meeting_id = create_meeting(db, title=title, tracks=tracks, started_at=started_at, owner=owner)
    if workers:
        enqueue_meeting(db, meeting_id)
    return meeting_id


def unheard(db: Database, meeting_id: uuid.UUID, participant: str, owner: str, reason: str) -> bool:
    """The participant's track, still waiting for its recording, will get none (a call's
    track that carried no audio): failed with ``reason``, so the meeting is built from the
    others. Whether it was still waiting."""
    return unheard_track(db, track_of(db, meeting_id, participant, owner), reason)


def rename(
    db: Database, meeting_id: uuid.UUID | str, old: str, new: str, owner: str | None = None
) -> None:
    """Call participant ``old`` ``new`` in the meeting's phrases, every export and rebuild,
    and its owner's memory (``heard.store.meetings.rename_participant``)."""
    rename_participant(db, meeting_id, old, new, owner)
    meeting = get_meeting(db, meeting_id, owner)
    if meeting.phrases:
        remember_meeting(db, meeting.id)


def delete(db: Database, meeting_id: uuid.UUID | str, owner: str) -> list[str]:
    """Delete the meeting (``ConflictError`` while it is being transcribed) and what memory
    kept of it; the locations of its tracks' audio, for whoever keeps them to remove."""
    meeting = get_meeting(db, meeting_id, owner)
    locations = delete_meeting(db, meeting.id, owner)
    forget_meeting(db, meeting.id, owner)
    return locations


def enqueue(db: Database, meeting_id: uuid.UUID) -> int:
    """Send the meeting's work to the Celery workers (the broker checked first); the tasks
    sent. The workers must open ``db``: the CLI and the server refuse a ``--queue`` with a
    database they do not use."""
    from heard.meetings.celery_app import check_broker, enqueue_meeting

    check_broker()
    return enqueue_meeting(db, meeting_id)
