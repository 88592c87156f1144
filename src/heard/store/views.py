"""What is read back of meetings, each read in one transaction (a snapshot where several
queries must agree): their summaries, tracks, phrases, the whole record an export writes, and
the tracks a player needs.

Ids are UUIDs or, wherever a user types one, a unique prefix of at least 8 characters.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from heard.speech import Word
from heard.store.database import Database
from heard.store.ids import resolve_meeting_id
from heard.store.models import (
    AudioTrack,
    EvidenceRow,
    Meeting,
    MeetingStatus,
    Participant,
    Phrase,
    TrackStatus,
)
from heard.store.phrases import voices
from heard.timeline.formats import SpokenLanguage, TimedPhrase, TranscriptDoc

__all__ = [
    "MeetingRecord",
    "MeetingSummary",
    "Playback",
    "TrackState",
    "get_meeting",
    "list_meetings",
    "meeting_owner_and_phrases",
    "meeting_phrases",
    "meeting_record",
    "meeting_state",
    "playback",
    "track_rows",
    "track_states",
    "unremembered_meetings",
]


@dataclass(frozen=True, slots=True)
class MeetingSummary:
    id: uuid.UUID
    title: str
    started_at: datetime
    status: MeetingStatus
    participants: tuple[str, ...]
    phrases: int
    run_by: str | None = None
    """The process that accepted a run of it and has not finished it (heard.store.runs)."""


@dataclass(frozen=True, slots=True)
class TrackState:
    id: uuid.UUID
    participant: str
    location: str
    channel: int | None
    offset_s: float
    status: TrackStatus
    attempts: int
    last_error: str | None
    updated_at: datetime
    claimed_by: str | None = None
    """``host:pid:start`` of the process transcribing the track, while it is."""
    language_asked: str | None = None
    language: str | None = None
    """Given or detected, once transcribed."""
    language_probability: float | None = None
    """Of the detection; None when the language was given."""
    speakers: str | None = None
    """``auto`` or a number for a recording of several people; None for one's own track."""
    speakers_found: int | None = None
    """How many speakers its diarization found, once made."""
    warnings: tuple[str, ...] = ()
    """What its transcription warned of, once done."""

    @property
    def language_label(self) -> str:
        """``es (0.98)`` when detected, ``es`` when given, ``es?`` when asked, not yet done."""
        if self.language is None:
            return f"{self.language_asked}?" if self.language_asked else ""
        if self.language_probability is None:
            return self.language
        return f"{self.language} ({self.language_probability:.2f})"


def _summary(session: Session, meeting: Meeting) -> MeetingSummary:
    count = session.scalar(select(func.count()).where(Phrase.meeting_id == meeting.id)) or 0
    speaking = set(
        session.scalars(
            select(Phrase.participant_id).where(Phrase.meeting_id == meeting.id).distinct()
        )
    )
    return MeetingSummary(
        meeting.id,
        meeting.title,
        meeting.started_at,
        meeting.status,
        tuple(
            p.name for p in meeting.participants if p.id in speaking or not _diarized_recording(p)
        ),
        count,
        meeting.run_by,
    )


def _diarized_recording(participant: Participant) -> bool:
    """A recording of several people, diarized: its speakers are the participants that
    speak, and the recording's name (often its file's) names none of them, unless one
    speaker was given that name."""
    tracks = participant.tracks
    return bool(tracks) and all(
        t.speakers is not None and t.diarization is not None for t in tracks
    )


def get_meeting(
    db: Database, meeting_id: uuid.UUID | str, owner: str | None = None
) -> MeetingSummary:
    with db.session() as s:
        meeting = s.get_one(Meeting, resolve_meeting_id(s, meeting_id, owner))
        return _summary(s, meeting)


def list_meetings(db: Database, owner: str | None = None) -> list[MeetingSummary]:
    with db.session() as s:
        query = select(Meeting).order_by(Meeting.started_at.desc())
        if owner is not None:
            query = query.where(Meeting.owner == owner)
        meetings = s.scalars(query).all()
        return [_summary(s, m) for m in meetings]


def track_states(
    db: Database, meeting_id: uuid.UUID | str, owner: str | None = None
) -> list[TrackState]:
    with db.session() as s:
        return _track_states(s, resolve_meeting_id(s, meeting_id, owner))


def meeting_state(
    db: Database, meeting_id: uuid.UUID | str, owner: str | None = None
) -> tuple[MeetingSummary, list[TrackState]]:
    """The meeting and its tracks, as one moment saw them."""
    with db.snapshot() as s:
        meeting = s.get_one(Meeting, resolve_meeting_id(s, meeting_id, owner))
        return _summary(s, meeting), _track_states(s, meeting.id)


def _track_states(s: Session, mid: uuid.UUID) -> list[TrackState]:
    rows = track_rows(s, mid)
    return [
        TrackState(
            t.id,
            name,
            t.location,
            t.channel,
            t.offset_s,
            t.status,
            t.attempts,
            t.last_error,
            t.updated_at,
            t.claimed_by,
            t.language_asked,
            t.language,
            t.language_probability,
            t.speakers,
            (t.diarization or {}).get("speakers"),
            tuple(t.warnings or ()),
        )
        for t, name in rows
    ]


def meeting_phrases(
    db: Database, meeting_id: uuid.UUID | str, owner: str | None = None
) -> list[TimedPhrase]:
    """The meeting's phrases in timeline order."""
    with db.snapshot() as s:
        return _phrases(s, s.get_one(Meeting, resolve_meeting_id(s, meeting_id, owner)))


def _phrases(s: Session, meeting: Meeting) -> list[TimedPhrase]:
    rows = s.execute(
        select(Phrase, Participant.name)
        .join(Participant, Phrase.participant_id == Participant.id)
        .where(Phrase.meeting_id == meeting.id)
        .order_by(Phrase.position)
    ).all()
    languages: dict[uuid.UUID, str | None] = {
        pid: language
        for pid, language in s.execute(
            select(AudioTrack.participant_id, AudioTrack.language).where(
                AudioTrack.meeting_id == meeting.id
            )
        )
    }
    t0 = meeting.started_at
    return [
        TimedPhrase(
            name,
            (p.start_at - t0).total_seconds(),
            (p.end_at - t0).total_seconds(),
            p.text,
            p.start_at,
            p.end_at,
            languages.get(p.participant_id),
            tuple(Word(*w) for w in p.words or ()),
        )
        for p, name in rows
    ]


@dataclass(frozen=True, slots=True)
class MeetingRecord:
    """Everything stored of one meeting, read in one transaction: what an export writes."""

    meeting: MeetingSummary
    tracks: list[TrackState]
    phrases: list[TimedPhrase]

    def document(self) -> TranscriptDoc:
        """The transcript, ready for any format."""
        m = self.meeting
        languages = {
            t.participant: SpokenLanguage(t.language, t.language_probability)
            for t in self.tracks
            if t.language is not None
        }
        warnings = {t.participant: t.warnings for t in self.tracks if t.warnings}
        return TranscriptDoc(self.phrases, m.title, m.started_at, str(m.id), languages, warnings)


def meeting_record(
    db: Database, meeting_id: uuid.UUID | str, owner: str | None = None
) -> MeetingRecord:
    """The meeting, its tracks and its phrases as one moment saw them (no upload or rebuild
    half-seen)."""
    with db.snapshot() as s:
        meeting = s.get_one(Meeting, resolve_meeting_id(s, meeting_id, owner))
        return MeetingRecord(
            _summary(s, meeting), _track_states(s, meeting.id), _phrases(s, meeting)
        )


@dataclass(frozen=True, slots=True)
class Playback:
    """One track as a player needs it: its audio, where it starts on the meeting's timeline,
    and the participants whose phrases are heard in it."""

    track_id: uuid.UUID
    participant: str
    location: str
    offset_s: float
    voices: tuple[str, ...]


def playback(db: Database, meeting_id: uuid.UUID | str, owner: str | None = None) -> list[Playback]:
    """The meeting's tracks with audio, and whose phrases each one holds: its own
    participant's, or (a recording of several people) its speakers'."""
    with db.snapshot() as s:
        mid = resolve_meeting_id(s, meeting_id, owner)
        rows = track_rows(s, mid)
        labels = voices(rows)
        return [
            Playback(t.id, name, t.location, t.offset_s,
                     tuple(labels.get(t.id, ())) if t.speakers is not None else (name,))
            for t, name in rows
            if t.location
        ]  # fmt: skip


def track_rows(s: Session, mid: uuid.UUID) -> list[tuple[AudioTrack, str]]:
    """The meeting's tracks with their participants' names, by name."""
    return [
        (t, name)
        for t, name in s.execute(
            select(AudioTrack, Participant.name)
            .join(Participant, AudioTrack.participant_id == Participant.id)
            .where(AudioTrack.meeting_id == mid)
            .order_by(Participant.name, AudioTrack.id)
        ).all()
    ]


def meeting_owner_and_phrases(
    db: Database, meeting_id: uuid.UUID
) -> tuple[str, list[TimedPhrase]] | None:
    """The meeting's owner and phrases as one moment saw them (None: no such meeting)."""
    with db.snapshot() as s:
        meeting = s.get(Meeting, meeting_id)
        if meeting is None:
            return None
        return meeting.owner, _phrases(s, meeting)


def unremembered_meetings(db: Database, owner: str, conversation: str) -> list[uuid.UUID]:
    """The built meetings of ``owner``'s (finished, with phrases) of which no evidence is kept
    under ``conversation`` and the meeting's id."""
    with db.session() as s:
        remembered = select(EvidenceRow.conversation).where(
            EvidenceRow.owner == owner,
            EvidenceRow.conversation.like(f"{conversation}%"),
        )
        built = s.scalars(
            select(Meeting.id).where(
                Meeting.owner == owner,
                Meeting.status != MeetingStatus.PENDING,
                Meeting.id.in_(select(Phrase.meeting_id)),
            )
        ).all()
        known = set(s.scalars(remembered.distinct()))
    return [m for m in built if f"{conversation}{m}" not in known]
