"""A meeting's phrases, built from its finished tracks and stored in one transaction.

The build locks the meeting row (``SELECT ... FOR UPDATE`` on PostgreSQL), so concurrent
builds serialize; positions are unique per meeting, so a duplicate insert fails instead of
doubling the transcript. Track segments are kept as JSON (``segments_to_json``).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import delete, select

from heard.speech import Segment, Word
from heard.store.database import Database
from heard.store.models import AudioTrack, Meeting, MeetingStatus, Participant, Phrase, TrackStatus
from heard.store.tracks import FINISHED
from heard.timeline.phrases import Track, build_phrases

__all__ = ["BuildResult", "build_meeting", "segments_from_json", "segments_to_json"]


def segments_to_json(segments: Sequence[Segment]) -> list[dict[str, Any]]:
    return [
        {
            "start": s.start,
            "end": s.end,
            "text": s.text,
            "words": [[w.start, w.end, w.text, w.probability] for w in s.words],
        }
        for s in segments
    ]


def segments_from_json(data: list[dict[str, Any]]) -> list[Segment]:
    return [
        Segment(d["start"], d["end"], d["text"], tuple(Word(*w) for w in d.get("words", ())))
        for d in data
    ]


@dataclass(frozen=True, slots=True)
class BuildResult:
    built: bool
    """False when some track is not finished yet (nothing was written)."""
    status: MeetingStatus
    phrases: int
    waiting_on: tuple[str, ...] = ()
    failed: tuple[str, ...] = ()


def build_meeting(
    db: Database, meeting_id: uuid.UUID, *, interjection_threshold_s: float
) -> BuildResult:
    """Replace the meeting's phrases with those of all done tracks, in one transaction."""
    with db.session() as s:
        meeting = s.scalars(select(Meeting).where(Meeting.id == meeting_id).with_for_update()).one()
        rows = s.execute(
            select(AudioTrack, Participant.name)
            .join(Participant, AudioTrack.participant_id == Participant.id)
            .where(AudioTrack.meeting_id == meeting_id)
        ).all()
        waiting = tuple(sorted(name for t, name in rows if t.status not in FINISHED))
        if waiting:
            return BuildResult(False, meeting.status, 0, waiting_on=waiting)
        failed = tuple(sorted(name for t, name in rows if t.status is TrackStatus.FAILED))
        ids = {name: t.participant_id for t, name in rows}
        tracks = {
            name: Track(segments_from_json(t.segments or []), t.offset_s)
            for t, name in rows
            if t.status is TrackStatus.DONE
        }
        drafts = build_phrases(tracks, interjection_threshold_s=interjection_threshold_s)
        s.execute(delete(Phrase).where(Phrase.meeting_id == meeting_id))
        t0 = meeting.started_at
        s.add_all(
            Phrase(
                meeting_id=meeting_id,
                participant_id=ids[d.participant],
                position=i,
                text=d.text,
                start_at=t0 + timedelta(seconds=d.start),
                end_at=t0 + timedelta(seconds=d.end),
            )
            for i, d in enumerate(drafts)
        )
        if not failed:
            meeting.status = MeetingStatus.COMPLETE
        elif len(failed) == len(rows):
            meeting.status = MeetingStatus.FAILED
        else:
            meeting.status = MeetingStatus.PARTIAL
        return BuildResult(True, meeting.status, len(drafts), failed=failed)
