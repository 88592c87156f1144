"""The SQL store: meetings, participants, audio tracks and phrases (SQLAlchemy + Alembic)."""

from heard.store.database import Database
from heard.store.models import (
    AudioTrack,
    Meeting,
    MeetingStatus,
    Participant,
    Phrase,
    TrackStatus,
)

__all__ = [
    "AudioTrack",
    "Database",
    "Meeting",
    "MeetingStatus",
    "Participant",
    "Phrase",
    "TrackStatus",
]
