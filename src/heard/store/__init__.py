"""The SQL store: meetings, participants, audio tracks, phrases and evidence (SQLAlchemy +
Alembic). Its modules are imported by name (``heard.store.meetings``, ``heard.store.models``)."""

from heard.store.database import Database
from heard.store.models import MeetingStatus, TrackStatus

__all__ = ["Database", "MeetingStatus", "TrackStatus"]
