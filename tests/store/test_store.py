from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import func, select

from heard.errors import InputError, NotFoundError
from heard.settings import database_url
from heard.store.database import Database
from heard.store.meetings import TrackSpec, create_meeting
from heard.store.models import Base, Meeting, MeetingStatus, Participant, TrackStatus
from heard.store.views import get_meeting, list_meetings, meeting_phrases, track_states

T0 = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)


def test_migrations_create_exactly_the_models_schema(db: Database) -> None:
    with db.engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    assert diff == []
    db.migrate()  # a second upgrade is a no-op
    assert db.has_schema()


def test_create_and_read_a_meeting(db: Database) -> None:
    mid = create_meeting(
        db,
        title="Weekly sync",
        started_at=T0,
        tracks=[TrackSpec("alice", "a.wav"), TrackSpec("bob", "b.wav", offset_s=30, channel=1)],
    )
    summary = get_meeting(db, mid)
    assert summary.title == "Weekly sync"
    assert summary.started_at == T0
    assert summary.started_at.tzinfo is not None
    assert summary.status is MeetingStatus.PENDING
    assert summary.participants == ("alice", "bob")
    states = track_states(db, mid)
    assert [(t.participant, t.offset_s, t.channel, t.status) for t in states] == [
        ("alice", 0.0, None, TrackStatus.PENDING),
        ("bob", 30.0, 1, TrackStatus.PENDING),
    ]
    assert meeting_phrases(db, mid) == []
    assert [m.id for m in list_meetings(db)] == [mid]


def test_times_are_stored_as_utc_whatever_the_zone(db: Database) -> None:
    paris = timezone(timedelta(hours=1))
    mid = create_meeting(
        db, title="t", started_at=T0.astimezone(paris), tracks=[TrackSpec("a", "a.wav")]
    )
    assert get_meeting(db, mid).started_at == T0
    assert get_meeting(db, mid).started_at.utcoffset() == timedelta(0)
    with pytest.raises(InputError, match="no time zone"):
        create_meeting(db, title="t", started_at=datetime(2026, 1, 1), tracks=[TrackSpec("a", "a")])


def test_meeting_ids_resolve_by_unique_prefix(db: Database) -> None:
    mid = create_meeting(db, title="t", started_at=T0, tracks=[TrackSpec("a", "a.wav")])
    assert get_meeting(db, str(mid)).id == mid
    assert get_meeting(db, str(mid)[:8]).id == mid
    assert get_meeting(db, str(mid).upper()).id == mid
    for bad in ["0000000000", "nope", str(mid)[:4], "zzzzzzzzzz"]:
        with pytest.raises(NotFoundError):
            get_meeting(db, bad)


@pytest.mark.parametrize(
    ("tracks", "problem"),
    [
        ([], "at least one track"),
        ([TrackSpec("alice", "a.wav"), TrackSpec("Alice", "b.wav")], "named twice"),
        ([TrackSpec(" ", "a.wav")], "name is empty"),
        ([TrackSpec("a", "a.wav", offset_s=-1)], "offset must be >= 0"),
        ([TrackSpec("a", "a.wav", offset_s=float("nan"))], "offset must be >= 0"),
        ([TrackSpec("a", "a.wav", channel=2)], "channel must be 0 or 1"),
        # issue 28: the CLI's NAME=FILE comes here too; a name is exported as it reads
        ([TrackSpec("x\n\n99\n00:00:00,000 --> 09:59:59,000", "a.wav")], "control or invisible"),
        ([TrackSpec("a\x1b[31m", "a.wav")], "control or invisible"),
        ([TrackSpec("a/b", "a.wav")], "'/' is not allowed"),
    ],
)
def test_bad_tracks_store_nothing(db: Database, tracks: list[TrackSpec], problem: str) -> None:
    with pytest.raises(InputError, match=problem):
        create_meeting(db, title="t", started_at=T0, tracks=tracks)
    with db.session() as s:
        assert s.scalar(select(func.count()).select_from(Meeting)) == 0
        assert s.scalar(select(func.count()).select_from(Participant)) == 0


def test_a_title_with_control_characters_stores_nothing(db: Database) -> None:
    with pytest.raises(InputError, match=r"meeting title .*control or invisible"):
        create_meeting(db, title="t\n00:00 --> 10:00", started_at=T0, tracks=[TrackSpec("a", "")])
    with db.session() as s:
        assert s.scalar(select(func.count()).select_from(Meeting)) == 0


def test_database_url_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HEARD_DATABASE_URL", "postgresql+psycopg://u@h/db")
    assert database_url() == "postgresql+psycopg://u@h/db"
    assert database_url("sqlite:///x.db") == "sqlite:///x.db"
    monkeypatch.delenv("HEARD_DATABASE_URL")
    assert database_url().startswith("sqlite:///")
    assert database_url().endswith("heard/heard.db")


def test_a_bad_url_is_an_input_error() -> None:
    with pytest.raises(InputError, match="not a SQLAlchemy URL"):
        Database("not a url")


def test_a_failed_statement_never_carries_users_text(db: Database) -> None:
    """An error's message (which a log may show) names the statement, not its parameters."""
    from sqlalchemy.exc import IntegrityError

    from heard.store.models import EvidenceRow

    secret = "zebra-7731 said something private"
    with pytest.raises(IntegrityError) as caught, db.session() as s:
        s.add_all(EvidenceRow(owner="", ext_id="d1", speaker="ana", text=secret) for _ in range(2))
    assert "evidence" in str(caught.value)
    assert secret not in str(caught.value)


def test_the_head_revision_is_alembics_and_a_current_schema_skips_alembic(
    tmp_path: Path,
) -> None:
    """``migrate`` on a database at the newest migration is one query (issue 46: Alembic took
    a fifth of a recall's start); the head it compares with is Alembic's own."""
    from importlib.resources import files

    from alembic.config import Config
    from alembic.script import ScriptDirectory

    from heard.store.database import head_revision

    config = Config()
    config.set_main_option("script_location", str(files("heard.store") / "migrations"))
    assert head_revision() == ScriptDirectory.from_config(config).get_current_head()
    db = Database(f"sqlite:///{tmp_path}/h.db")
    assert not db._at_head()  # empty: Alembic creates the schema
    db.migrate()
    assert db._at_head()
    with db.engine.begin() as connection:  # a database one migration behind is upgraded
        from sqlalchemy import text

        connection.execute(text("UPDATE alembic_version SET version_num = '0008'"))
    assert not db._at_head()
    db.dispose()
