"""Meetings in the store: create them with their tracks (checked first), rename a
participant, delete one. What is read back of them is ``heard.store.views``.

Every function takes a ``Database`` and works in one transaction; ids are UUIDs,
and wherever a user types one a unique prefix of at least 8 characters is enough.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete, select

from heard.diarize import check_speakers, speaker_count
from heard.errors import ConflictError, InputError, NotFoundError
from heard.storable import name_key, name_problem, participant_problem
from heard.store.database import Database
from heard.store.ids import resolve_meeting_id
from heard.store.models import (
    AudioTrack,
    Meeting,
    MeetingStatus,
    Participant,
    Phrase,
    TrackStatus,
    utc_now,
)
from heard.store.phrases import voices
from heard.store.views import track_rows

__all__ = [
    "TrackSpec",
    "create_meeting",
    "delete_meeting",
    "rename_participant",
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


def _check_tracks(tracks: Sequence[TrackSpec]) -> None:
    if not tracks:
        raise InputError("a meeting needs at least one track")
    seen: set[str] = set()
    for t in tracks:
        name = t.participant.strip()
        if not name:
            raise InputError(f"track {t.location!r}: the participant name is empty")
        if problem := participant_problem(name):
            raise InputError(f"participant {name!r}: {problem}")
        if name_key(name) in seen:
            raise InputError(f"participant {name!r} is named twice; names must be unique")
        seen.add(name_key(name))
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
    count = speaker_count(check_speakers(t.speakers))
    if count is not None and len(t.speaker_names) > count:
        raise InputError(f"track {name!r}: {len(t.speaker_names)} names for {count} speakers")
    own = name_key(name)  # the recording's own name may be one of its speakers'
    for speaker in t.speaker_names:
        problem = participant_problem(speaker)
        if not speaker.strip() or problem:
            raise InputError(f"speaker name {speaker!r}: {problem or 'empty'}")
        folded = name_key(speaker)
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


def rename_participant(
    db: Database, meeting_id: uuid.UUID | str, old: str, new: str, owner: str | None = None
) -> str:
    """Call participant ``old`` of the meeting ``new`` from now on: in its phrases, and so in
    every export, and in every rebuild (a diarized speaker's new name is kept on its
    recording). Returns the new name; ``ConflictError`` when another participant has it."""
    new = new.strip()
    problem = participant_problem(new)
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
        if any(name_key(name) == name_key(new) and name != old for name in people):
            raise ConflictError(f"meeting {mid} has a participant {new!r} already")
        rows = track_rows(s, mid)
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
