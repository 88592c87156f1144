"""Meetings in the store: create them with their tracks, read them back.

Every function takes a ``Database`` and works in one transaction; ids are UUIDs,
and wherever a user types one a unique prefix of at least 8 characters is enough.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import String, cast, delete, func, select
from sqlalchemy.orm import Session

from heard.errors import ConflictError, InputError, NotFoundError
from heard.storable import name_problem
from heard.store.database import Database
from heard.store.models import (
    AudioTrack,
    Meeting,
    MeetingStatus,
    Participant,
    Phrase,
    TrackStatus,
    utc_now,
)
from heard.timeline.formats import SpokenLanguage, TimedPhrase, TranscriptDoc

__all__ = [
    "MEETING_CONVERSATION",
    "MeetingRecord",
    "MeetingSummary",
    "Playback",
    "TrackSpec",
    "TrackState",
    "create_meeting",
    "delete_meeting",
    "find_meeting_id",
    "forget_meeting",
    "get_meeting",
    "list_meetings",
    "meeting_phrases",
    "meeting_record",
    "meeting_state",
    "phrase_of_evidence",
    "playback",
    "remember_meeting",
    "remember_missing",
    "rename_participant",
    "resolve_meeting_id",
    "track_states",
]


@dataclass(frozen=True, slots=True)
class TrackSpec:
    """One participant's track as a user describes it."""

    participant: str
    location: str
    offset_s: float = 0.0
    channel: int | None = None
    status: TrackStatus = TrackStatus.PENDING
    language: str | None = None
    """The language the participant speaks (ISO 639-1); None: the recognizer decides."""
    speakers: str | None = None
    """None: one participant's own track. ``auto`` or a number (``heard.diarize``): a recording
    of several people, whose speakers become the meeting's participants."""
    speaker_names: tuple[str, ...] = ()
    """Their names, in the order they are first heard (the rest are ``Speaker N``, or
    ``<participant> speaker N`` in a meeting with several such recordings)."""


@dataclass(frozen=True, slots=True)
class MeetingSummary:
    id: uuid.UUID
    title: str
    started_at: datetime
    status: MeetingStatus
    participants: tuple[str, ...]
    phrases: int


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

    @property
    def language_label(self) -> str:
        """``es (0.98)`` when detected, ``es`` when given, ``es?`` when asked, not yet done."""
        if self.language is None:
            return f"{self.language_asked}?" if self.language_asked else ""
        if self.language_probability is None:
            return self.language
        return f"{self.language} ({self.language_probability:.2f})"


def _check_tracks(tracks: Sequence[TrackSpec]) -> None:
    if not tracks:
        raise InputError("a meeting needs at least one track")
    seen: set[str] = set()
    for t in tracks:
        name = t.participant.strip()
        if not name:
            raise InputError(f"track {t.location!r}: the participant name is empty")
        problem = name_problem(name) or ("'/' is not allowed" if "/" in name else None)
        if problem:
            raise InputError(f"participant {name!r}: {problem}")
        if name.casefold() in seen:
            raise InputError(f"participant {name!r} is named twice; names must be unique")
        seen.add(name.casefold())
        if not (t.offset_s >= 0 and t.offset_s < float("inf")):
            raise InputError(f"track {t.location!r}: offset must be >= 0 seconds, got {t.offset_s}")
        if t.channel not in (None, 0, 1):
            raise InputError(f"track {t.location!r}: channel must be 0 or 1, got {t.channel}")
        if t.language is not None and not (t.language.isalpha() and len(t.language) <= 16):
            raise InputError(f"participant {name!r}: bad language {t.language!r}")
        _check_speakers(t, name, seen)


def _check_speakers(t: TrackSpec, name: str, seen: set[str]) -> None:
    """A diarized track's speaker count and names are valid and its names are unique."""
    if t.speakers is None:
        if t.speaker_names:
            raise InputError(
                f"track {name!r}: speaker names are for a recording of several people; "
                "give its number of speakers too"
            )
        return
    from heard.diarize import check_speakers, speaker_count

    count = speaker_count(check_speakers(t.speakers))
    if count is not None and len(t.speaker_names) > count:
        raise InputError(f"track {name!r}: {len(t.speaker_names)} names for {count} speakers")
    own = name.casefold()  # the recording's own name may be one of its speakers'
    for speaker in t.speaker_names:
        problem = name_problem(speaker) or ("'/' is not allowed" if "/" in speaker else None)
        if not speaker.strip() or problem:
            raise InputError(f"speaker name {speaker!r}: {problem or 'empty'}")
        folded = speaker.strip().casefold()
        if folded in seen and folded != own:
            raise InputError(f"participant {speaker!r} is named twice; names must be unique")
        if folded == own:
            own = ""  # once
        seen.add(folded)


def create_meeting(
    db: Database,
    *,
    title: str,
    tracks: Sequence[TrackSpec],
    started_at: datetime | None = None,
    owner: str = "",
) -> uuid.UUID:
    """Store a meeting, its participants and their tracks in one transaction."""
    _check_tracks(tracks)
    if problem := name_problem(title):
        raise InputError(f"meeting title {title[:60]!r}: {problem}")
    started = started_at or utc_now()
    if started.tzinfo is None:
        raise InputError(f"meeting start {started.isoformat()} has no time zone")
    with db.session() as s:
        meeting = Meeting(
            title=title, started_at=started, status=MeetingStatus.PENDING, owner=owner
        )
        s.add(meeting)
        s.flush()
        for spec in tracks:
            participant = Participant(meeting_id=meeting.id, name=spec.participant.strip())
            s.add(participant)
            s.flush()
            s.add(
                AudioTrack(
                    meeting_id=meeting.id,
                    participant_id=participant.id,
                    location=spec.location,
                    channel=spec.channel,
                    offset_s=float(spec.offset_s),
                    status=spec.status,
                    language_asked=spec.language,
                    speakers=None if spec.speakers is None else str(spec.speakers),
                    speaker_names=[n.strip() for n in spec.speaker_names] or None,
                    attempts=0,
                    updated_at=utc_now(),
                )
            )
        return meeting.id


def resolve_meeting_id(
    session: Session, meeting_id: uuid.UUID | str, owner: str | None = None
) -> uuid.UUID:
    """The meeting's id from a UUID or a unique prefix of one; ``NotFoundError`` otherwise.

    With ``owner``, someone else's meeting is not found either (its existence does not leak).
    """
    if isinstance(meeting_id, uuid.UUID):
        found = session.get(Meeting, meeting_id)
        if found is None or (owner is not None and found.owner != owner):
            raise NotFoundError(f"no meeting {meeting_id}")
        return found.id
    text = meeting_id.strip().lower()
    try:
        exact = uuid.UUID(text)
    except ValueError:
        exact = None
    if exact is not None:
        return resolve_meeting_id(session, exact, owner)
    if len(text) < 8 or any(c not in "0123456789abcdef-" for c in text):
        raise NotFoundError(
            f"no meeting {meeting_id!r} (give its id, or at least 8 characters of it)"
        )
    # UUIDs are stored without dashes on SQLite and as uuid on PostgreSQL; compare as text.
    column = func.replace(cast(Meeting.id, String), "-", "")
    query = select(Meeting.id).where(column.like(text.replace("-", "") + "%"))
    if owner is not None:
        query = query.where(Meeting.owner == owner)
    ids = session.scalars(query.limit(2)).all()
    if not ids:
        raise NotFoundError(f"no meeting {meeting_id!r}")
    if len(ids) > 1:
        raise NotFoundError(f"meeting id {meeting_id!r} is ambiguous; give more characters")
    return ids[0]


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
    )


def _diarized_recording(participant: Participant) -> bool:
    """A recording of several people, diarized: its speakers are the participants that
    speak, and the recording's name (often its file's) names none of them, unless one
    speaker was given that name."""
    tracks = participant.tracks
    return bool(tracks) and all(
        t.speakers is not None and t.diarization is not None for t in tracks
    )


def find_meeting_id(
    db: Database, meeting_id: uuid.UUID | str, owner: str | None = None
) -> uuid.UUID:
    """The full id of a meeting given by id or unique prefix (``NotFoundError`` if none)."""
    with db.session() as s:
        return resolve_meeting_id(s, meeting_id, owner)


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
    rows = _track_rows(s, mid)
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
        return TranscriptDoc(self.phrases, m.title, m.started_at, str(m.id), languages)


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
    from heard.store.phrases import voices

    with db.snapshot() as s:
        mid = resolve_meeting_id(s, meeting_id, owner)
        rows = _track_rows(s, mid)
        labels = voices(rows)
        return [
            Playback(t.id, name, t.location, t.offset_s,
                     tuple(labels.get(t.id, ())) if t.speakers is not None else (name,))
            for t, name in rows
            if t.location
        ]  # fmt: skip


def _track_rows(s: Session, mid: uuid.UUID) -> list[tuple[AudioTrack, str]]:
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


def rename_participant(
    db: Database, meeting_id: uuid.UUID | str, old: str, new: str, owner: str | None = None
) -> str:
    """Call participant ``old`` of the meeting ``new`` from now on: in its phrases, and so in
    every export, and in every rebuild (a diarized speaker's new name is kept on its
    recording). Returns the new name; ``ConflictError`` when another participant has it."""
    from heard.store.phrases import voices

    new = new.strip()
    problem = name_problem(new) or ("'/' is not allowed" if "/" in new else None)
    if not new or len(new) > 200 or problem:
        raise InputError(f"participant name {new[:60]!r}: {problem or 'give 1-200 characters'}")
    with db.session() as s:
        mid = resolve_meeting_id(s, meeting_id, owner)
        s.scalars(select(Meeting).where(Meeting.id == mid).with_for_update()).one()
        people = {
            p.name: p for p in s.scalars(select(Participant).where(Participant.meeting_id == mid))
        }
        if old not in people:
            raise NotFoundError(f"no participant {old!r} in meeting {mid}")
        if new == old:
            return new
        if any(name.casefold() == new.casefold() and name != old for name in people):
            raise ConflictError(f"meeting {mid} has a participant {new!r} already")
        rows = _track_rows(s, mid)
        for track, labels in voices(rows).items():
            found = next((t, name) for t, name in rows if t.id == track)
            if old in labels or found[1] == old:
                # the speaker's new name, or (the recording renamed) its speakers' names as
                # they are: a rebuild names them from the recording's name no more
                found[0].speaker_names = [new if label == old else label for label in labels]
        people[old].name = new
        return new


def delete_meeting(
    db: Database, meeting_id: uuid.UUID | str, owner: str | None = None
) -> list[str]:
    """Delete the meeting with its participants, tracks and phrases; the locations of its
    tracks' audio (for the caller to remove what it keeps). ``ConflictError`` while a track of
    it is being transcribed."""
    with db.session() as s:
        mid = resolve_meeting_id(s, meeting_id, owner)
        meeting = s.scalars(select(Meeting).where(Meeting.id == mid).with_for_update()).one()
        tracks = s.scalars(
            select(AudioTrack).where(AudioTrack.meeting_id == mid).with_for_update()
        ).all()  # a claim waits for the delete, then finds no track
        if any(t.status is TrackStatus.TRANSCRIBING for t in tracks):
            raise ConflictError(f"meeting {mid} is being transcribed; delete it once that is done")
        locations = [t.location for t in tracks if t.location]
        s.execute(delete(Phrase).where(Phrase.meeting_id == mid))
        s.delete(meeting)
        return locations


MEETING_CONVERSATION = "meeting:"
"""The conversation a meeting's phrases are remembered under: this and the meeting's id."""


def remember_meeting(db: Database, meeting_id: uuid.UUID) -> int:
    """Keep the meeting's phrases as its owner's memory evidence, in place of what was kept
    of it before (none when it has none: a deleted meeting is forgotten). Each phrase's id
    names the meeting, its position and a digest of who said what, so a memory holding an
    older build of it notices the change. How many were kept."""
    import hashlib

    from heard.store.evidence import replace_conversation
    from heard.utterance import Evidence

    conversation = f"{MEETING_CONVERSATION}{meeting_id}"
    with db.snapshot() as s:
        meeting = s.get(Meeting, meeting_id)
        owner = "" if meeting is None else meeting.owner
        if meeting is None:
            return 0
        said = _phrases(s, meeting)
    items = []
    for position, p in enumerate(said):
        digest = hashlib.sha256(f"{p.participant}\n{p.text}".encode()).hexdigest()[:10]
        items.append(
            Evidence(
                id=f"{meeting_id}:{position}:{digest}",
                speaker=p.participant,
                text=p.text,
                conversation=conversation,
                t=p.start_at,
                language=p.language or "",
            )
        )
    return replace_conversation(db, items, conversation=conversation, owner=owner)


def forget_meeting(db: Database, meeting_id: uuid.UUID, owner: str) -> None:
    """Drop the evidence a deleted meeting left in its owner's memory."""
    from heard.store.evidence import replace_conversation

    replace_conversation(db, [], conversation=f"{MEETING_CONVERSATION}{meeting_id}", owner=owner)


def phrase_of_evidence(evidence_id: str) -> tuple[uuid.UUID, int] | None:
    """The meeting and phrase position a remembered phrase's id names (None: not one)."""
    parts = evidence_id.split(":")
    if len(parts) != 3 or not parts[1].isdigit():
        return None
    try:
        return uuid.UUID(parts[0]), int(parts[1])
    except ValueError:
        return None


def remember_missing(db: Database, owner: str) -> int:
    """Remember the built meetings of ``owner``'s that memory has nothing of (built before
    meetings were remembered, or while the store failed); how many."""
    from heard.store.models import EvidenceRow

    with db.session() as s:
        remembered = select(EvidenceRow.conversation).where(
            EvidenceRow.owner == owner,
            EvidenceRow.conversation.like(f"{MEETING_CONVERSATION}%"),
        )
        built = s.scalars(
            select(Meeting.id).where(
                Meeting.owner == owner,
                Meeting.status != MeetingStatus.PENDING,
                Meeting.id.in_(select(Phrase.meeting_id)),
            )
        ).all()
        known = set(s.scalars(remembered.distinct()))
    missing = [m for m in built if f"{MEETING_CONVERSATION}{m}" not in known]
    for meeting_id in missing:
        remember_meeting(db, meeting_id)
    return len(missing)
