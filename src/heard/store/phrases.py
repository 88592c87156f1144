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
from sqlalchemy.orm import Session

from heard.speech import Segment, Word
from heard.store.database import Database
from heard.store.models import AudioTrack, Meeting, MeetingStatus, Participant, Phrase, TrackStatus
from heard.store.tracks import FINISHED
from heard.timeline.phrases import Track, build_phrases

__all__ = [
    "BuildResult",
    "segments_from_json",
    "segments_to_json",
    "store_phrases",
    "voices",
]


def segments_to_json(
    segments: Sequence[Segment], speaker: int | None = None
) -> list[dict[str, Any]]:
    """Segments as the store keeps them; ``speaker``: the diarized speaker who said them."""
    extra = {} if speaker is None else {"speaker": speaker}
    return [
        {
            "start": s.start,
            "end": s.end,
            "text": s.text,
            "words": [[w.start, w.end, w.text, w.probability] for w in s.words],
            **extra,
        }
        for s in segments
    ]


def segments_from_json(data: list[dict[str, Any]]) -> list[Segment]:
    return [
        Segment(d["start"], d["end"], d["text"], tuple(Word(*w) for w in d.get("words", ())))
        for d in data
    ]


def voices(rows: Sequence[tuple[AudioTrack, str]]) -> dict[uuid.UUID, list[str]]:
    """The participant names each diarized recording's speakers go by, in the order they are
    first heard, by track id: the names the user gave (or a rename stored), then ``Speaker N``
    (or ``<track> speaker N`` when the meeting has several such recordings), the number moved
    on past any name of an own track or given. Only speakers with words count, so the numbers
    have no gaps. ``rows``: the meeting's tracks with their participants' names."""
    from heard.diarize import speaker_labels

    taken = {name.casefold() for t, name in rows if t.speakers is None}
    mixed = sum(1 for t, _ in rows if t.speakers is not None)
    found: dict[uuid.UUID, list[str]] = {}
    for t, name in sorted(rows, key=lambda row: (row[1], str(row[0].id))):
        if t.speakers is None or t.status is not TrackStatus.DONE:
            continue
        heard = {int(r.get("speaker", 0)) for r in t.segments or []}
        fallback = "Speaker" if mixed == 1 else f"{name[:150]} speaker"
        found[t.id] = speaker_labels(t.speaker_names or (), len(heard), fallback, taken)
    return found


def _speakers(track: AudioTrack, labels: list[str]) -> dict[str, Track]:
    """A diarized recording's segments per speaker, each under its participant name."""
    rows = track.segments or []
    heard = sorted({int(r.get("speaker", 0)) for r in rows})  # numbered as first heard
    return {
        label: Track(
            segments_from_json([r for r in rows if int(r.get("speaker", 0)) == k]),
            track.offset_s,
        )
        for k, label in zip(heard, labels, strict=True)
    }


def _drop_unheard_speakers(s: Session, meeting_id: uuid.UUID) -> None:
    """Participants made for speakers of an earlier diarization that no phrase names now
    (the recording was replaced): gone, as they were never heard in this one."""
    s.execute(
        delete(Participant).where(
            Participant.meeting_id == meeting_id,
            Participant.id.not_in(select(AudioTrack.participant_id)),
            Participant.id.not_in(select(Phrase.participant_id)),
        )
    )


def _participant_id(s: Session, meeting_id: uuid.UUID, name: str) -> uuid.UUID:
    """The id of the meeting's participant ``name``, made now if a speaker is new."""
    found = s.scalar(
        select(Participant.id).where(Participant.meeting_id == meeting_id, Participant.name == name)
    )
    if found is not None:
        return found
    participant = Participant(meeting_id=meeting_id, name=name)
    s.add(participant)
    s.flush()
    return participant.id


@dataclass(frozen=True, slots=True)
class BuildResult:
    built: bool
    """False when some track is not finished yet (nothing was written)."""
    status: MeetingStatus
    phrases: int
    waiting_on: tuple[str, ...] = ()
    failed: tuple[str, ...] = ()


def store_phrases(
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
            if t.status is TrackStatus.DONE and t.speakers is None
        }
        labels = voices(rows)
        for t, _ in rows:
            if t.id in labels:
                for label, track in _speakers(t, labels[t.id]).items():
                    tracks[label] = track
                    ids[label] = _participant_id(s, meeting_id, label)
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
                words=[[w.start, w.end, w.text, round(w.probability, 4)] for w in d.words] or None,
            )
            for i, d in enumerate(drafts)
        )
        s.flush()
        _drop_unheard_speakers(s, meeting_id)
        if not failed:
            meeting.status = MeetingStatus.COMPLETE
        elif len(failed) == len(rows):
            meeting.status = MeetingStatus.FAILED
        else:
            meeting.status = MeetingStatus.PARTIAL
        return BuildResult(True, meeting.status, len(drafts), failed=failed)
