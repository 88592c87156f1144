"""SQLAlchemy models of meetings, participants, audio tracks and phrases.

Times are timezone-aware UTC in Python; SQLite stores them as naive UTC,
PostgreSQL as ``timestamptz``. Status columns are strings with CHECK
constraints, so both backends enforce the same values.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    DateTime,
    Dialect,
    Enum,
    Float,
    ForeignKey,
    Integer,
    LargeBinary,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
    Uuid,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

__all__ = [
    "AudioTrack",
    "Base",
    "EvidenceRow",
    "Holder",
    "Meeting",
    "MeetingStatus",
    "Participant",
    "Phrase",
    "TrackStatus",
    "UTCDateTime",
    "utc_now",
]


def utc_now() -> datetime:
    return datetime.now(UTC)


class UTCDateTime(TypeDecorator[datetime]):
    """Aware UTC datetimes on every backend; naive values are refused."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value!r}: heard stores aware UTC times")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class TrackStatus(StrEnum):
    RECORDING = "recording"
    PENDING = "pending"
    TRANSCRIBING = "transcribing"
    DONE = "done"
    FAILED = "failed"


class MeetingStatus(StrEnum):
    PENDING = "pending"
    """Phrases not built yet."""
    COMPLETE = "complete"
    PARTIAL = "partial"
    """Phrases built without one or more failed tracks."""
    FAILED = "failed"
    """Every track failed."""


def _enum(cls: type[StrEnum], name: str) -> Enum:
    return Enum(
        cls,
        name=name,
        native_enum=False,
        create_constraint=True,
        length=16,
        values_callable=lambda e: [m.value for m in e],
    )


class Base(DeclarativeBase):
    type_annotation_map: ClassVar[dict[Any, Any]] = {datetime: UTCDateTime(), uuid.UUID: Uuid()}


class Meeting(Base):
    __tablename__ = "meetings"

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    owner: Mapped[str] = mapped_column(String(36), default="", index=True)
    """The owning user's id; "" for the local user of the command line."""
    title: Mapped[str] = mapped_column(String(500))
    started_at: Mapped[datetime]
    created_at: Mapped[datetime] = mapped_column(default=utc_now)
    status: Mapped[MeetingStatus] = mapped_column(
        _enum(MeetingStatus, "meeting_status"), default=MeetingStatus.PENDING
    )
    run_by: Mapped[str | None] = mapped_column(String(300))
    """``host:pid:start`` of the process that accepted a run of the meeting and has not
    finished it (heard.store.runs); None: no run waits on a process."""

    participants: Mapped[list[Participant]] = relationship(
        back_populates="meeting", cascade="all, delete-orphan", order_by="Participant.name"
    )


class Participant(Base):
    __tablename__ = "participants"
    __table_args__ = (UniqueConstraint("meeting_id", "name", name="uq_participant_name"),)

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    meeting_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("meetings.id", ondelete="CASCADE"), index=True
    )
    name: Mapped[str] = mapped_column(String(200))

    meeting: Mapped[Meeting] = relationship(back_populates="participants")
    tracks: Mapped[list[AudioTrack]] = relationship(
        back_populates="participant", cascade="all, delete-orphan"
    )


class AudioTrack(Base):
    __tablename__ = "audio_tracks"

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    meeting_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("meetings.id", ondelete="CASCADE"), index=True
    )
    participant_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("participants.id", ondelete="CASCADE"), index=True
    )
    location: Mapped[str] = mapped_column(Text)
    """Where the audio is: a file path (a URL scheme may come later)."""
    channel: Mapped[int | None] = mapped_column(Integer)
    """0 or 1 for one channel of a stereo file; None for the downmix."""
    offset_s: Mapped[float] = mapped_column(Float, default=0.0)
    status: Mapped[TrackStatus] = mapped_column(
        _enum(TrackStatus, "track_status"), default=TrackStatus.PENDING
    )
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    last_error: Mapped[str | None] = mapped_column(Text)
    updated_at: Mapped[datetime] = mapped_column(default=utc_now)
    claimed_by: Mapped[str | None] = mapped_column(String(300))
    """``host:pid:start`` of the process transcribing it (heard.store.holder)."""
    segments: Mapped[list[dict[str, Any]] | None] = mapped_column(JSON)
    """The transcriber's segments (track-relative seconds) once done."""
    transcriber: Mapped[str | None] = mapped_column(String(200))
    language_asked: Mapped[str | None] = mapped_column(String(16))
    """The language the user said the participant speaks; None: let the model decide."""
    language: Mapped[str | None] = mapped_column(String(16))
    """The language of the segments, given or detected, once done."""
    language_probability: Mapped[float | None] = mapped_column(Float)
    """How sure the detection was; None when the language was given."""
    speakers: Mapped[str | None] = mapped_column(String(8))
    """None: the participant's own track. ``auto`` or a number: a recording of several people,
    diarized into that many speakers (``auto``: as many as are heard)."""
    speaker_names: Mapped[list[str] | None] = mapped_column(JSON)
    """The names the user gave its speakers, in the order they are first heard."""
    diarization: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    """Who spoke when (``heard.diarize.Diarization.to_json``), kept as soon as it is made: a
    run that dies while transcribing resumes without diarizing again."""
    warnings: Mapped[list[str] | None] = mapped_column(JSON)
    """What its transcription warned of (``heard.speech.Transcription.warnings``), once done."""

    participant: Mapped[Participant] = relationship(back_populates="tracks")


class Phrase(Base):
    __tablename__ = "phrases"
    __table_args__ = (UniqueConstraint("meeting_id", "position", name="uq_phrase_position"),)

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    meeting_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("meetings.id", ondelete="CASCADE"), index=True
    )
    participant_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("participants.id", ondelete="CASCADE"), index=True
    )
    position: Mapped[int] = mapped_column(Integer)
    """Order on the timeline; unique per meeting, so a double insert cannot duplicate."""
    text: Mapped[str] = mapped_column(Text)
    start_at: Mapped[datetime]
    end_at: Mapped[datetime]
    words: Mapped[list[list[Any]] | None] = mapped_column(JSON)
    """``[start s, end s, text, probability]`` of each word, seconds from the meeting start;
    None for phrases stored before words were kept, or from segments without word times."""

    participant: Mapped[Participant] = relationship()


class MemoryVersion(Base):
    """A counter per user, bumped in the same transaction as every change to their memory
    (evidence, pages): a process holding the memory in RAM compares it at each recall."""

    __tablename__ = "memory_versions"

    owner: Mapped[str] = mapped_column(String(36), primary_key=True)
    version: Mapped[int] = mapped_column(Integer, default=0)


class EvidenceRow(Base):
    """A final utterance kept as memory evidence (only finals are admissible)."""

    __tablename__ = "evidence"
    __table_args__ = (UniqueConstraint("owner", "ext_id", name="uq_evidence_owner_ext_id"),)

    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    """Insertion order: neighbouring turns are neighbours in this order."""
    owner: Mapped[str] = mapped_column(String(36), default="", index=True)
    """The owning user's id; "" for the local user of the command line."""
    ext_id: Mapped[str] = mapped_column(String(200))
    speaker: Mapped[str] = mapped_column(String(200))
    text: Mapped[str] = mapped_column(Text)
    conversation: Mapped[str] = mapped_column(String(200), default="")
    session: Mapped[str] = mapped_column(String(200), default="")
    t: Mapped[datetime | None]
    language: Mapped[str] = mapped_column(String(16), default="", server_default="")
    """ISO 639-1, as heard was told it ("": read from the text)."""
    created_at: Mapped[datetime] = mapped_column(default=utc_now)


class EvidenceVector(Base):
    """An evidence item's embedding by one model (float32, little-endian): a recall encodes
    only its query. Vectors of another model are kept apart, never mixed."""

    __tablename__ = "evidence_vectors"

    seq: Mapped[int] = mapped_column(
        ForeignKey("evidence.seq", ondelete="CASCADE"), primary_key=True
    )
    model: Mapped[str] = mapped_column(String(100), primary_key=True)
    vector: Mapped[bytes] = mapped_column(LargeBinary)


class User(Base):
    """Someone the server serves; meetings and memory belong to one."""

    __tablename__ = "users"

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    created_at: Mapped[datetime] = mapped_column(default=utc_now)


class ApiToken(Base):
    """A bearer token, stored only as its SHA-256 digest."""

    __tablename__ = "api_tokens"

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    user_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), index=True
    )
    digest: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(default=utc_now)


class Holder(Base):
    """A process that holds runs and claims (a server), and when it last said it still does
    (``heard.store.leases``)."""

    __tablename__ = "holders"

    holder: Mapped[str] = mapped_column(String(300), primary_key=True)
    """``host:pid:start``, as its claims name it (heard.store.holder)."""
    renewed_at: Mapped[datetime]
