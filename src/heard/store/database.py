"""The store's engine and sessions; the schema is created and upgraded by Alembic."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event, inspect, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DatabaseError, OperationalError
from sqlalchemy.orm import Session, sessionmaker

from heard.errors import InputError, MissingDependencyError, StoreError
from heard.scopes import opened

__all__ = ["Database", "StoreError", "safe_url"]


_REVISION = re.compile(r'^(down_)?revision = "([^"]*)"', re.M)


@cache
def head_revision() -> str:
    """The newest migration's revision: the one no other migration revises."""
    revisions: set[str] = set()
    revised: set[str] = set()
    for path in (files("heard.store") / "migrations" / "versions").iterdir():
        if path.name.endswith(".py"):
            for down, value in _REVISION.findall(path.read_text(encoding="utf-8")):
                (revised if down else revisions).add(value)
    (head,) = revisions - revised
    return head


def _first_line(error: DatabaseError) -> str:
    text = str(error.orig if error.orig is not None else error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()


def safe_url(url: str) -> str:
    """``url`` with its password hidden, for messages (an unparsable one as given)."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return url


class Database:
    """One store, at ``url`` (``heard.settings.database_url()`` gives the environment's:
    ``$HEARD_DATABASE_URL`` or the SQLite default)."""

    def __init__(self, url: str, *, engine_options: dict[str, Any] | None = None):
        if not isinstance(url, str) or not url:
            raise InputError(f"a database URL is a non-empty string, not {url!r}")
        self.url = url
        try:
            parsed = make_url(self.url)
        except ArgumentError as e:
            raise InputError(f"database URL {self.url!r} is not a SQLAlchemy URL ({e})") from None
        if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
            folder = Path(parsed.database).expanduser().parent
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise StoreError(
                    f"cannot open the SQLite database {parsed.database}: "
                    f"its folder {folder} cannot be created ({e.strerror})"
                ) from None
        # hide_parameters: an error names the statement, never the users' text it carried
        options = {"pool_pre_ping": True, "hide_parameters": True, **(engine_options or {})}
        try:
            self.engine: Engine = create_engine(self.url, **options)
        except ModuleNotFoundError as e:  # the URL's driver is not installed
            extra = " (heard[postgres]: pip install '.[postgres]' in heard's clone)" if (
                "psycopg" in (e.name or "")) else ""  # fmt: skip
            raise MissingDependencyError(
                f"the database URL needs the Python package {e.name!r}{extra}"
            ) from None
        if self.engine.dialect.name == "sqlite":
            event.listen(self.engine, "connect", _sqlite_pragmas)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        opened(self)  # a CLI command's store is disposed when the command ends

    def migrate(self) -> None:
        """Bring the schema to the newest migration (creates it on an empty database). One
        that is there already costs one query: Alembic (a tenth of a second to import) loads
        only when there is something to do."""
        if self._at_head():
            return
        from alembic import command
        from alembic.config import Config

        config = Config()
        config.set_main_option("script_location", str(files("heard.store") / "migrations"))
        with self.reachable(), self.engine.begin() as connection:
            config.attributes["connection"] = connection
            command.upgrade(config, "head")

    def _at_head(self) -> bool:
        """Whether the database's schema is at the newest migration already."""
        try:
            with self.reachable(), self.engine.connect() as connection:
                found = connection.execute(text("SELECT version_num FROM alembic_version"))
                return [row[0] for row in found] == [head_revision()]
        except (StoreError, DatabaseError):  # no version table yet: Alembic makes it
            return False

    @contextmanager
    def reachable(self) -> Iterator[None]:
        """Turn a database that cannot be reached, opened or read into one ``StoreError`` line."""
        try:
            yield
        except OperationalError as e:
            # no statement: the failure came before any SQL, while connecting
            what = "cannot reach the database at" if e.statement is None else "database error at"
            raise StoreError(f"{what} {self.safe_url}: {_first_line(e)}") from None
        except DatabaseError as e:
            if e.orig is None or "not a database" not in str(e.orig):
                raise
            raise StoreError(f"{self.safe_url} is not a database: {_first_line(e)}") from None

    @property
    def safe_url(self) -> str:
        return safe_url(self.url)

    def has_schema(self) -> bool:
        with self.reachable():
            return inspect(self.engine).has_table("meetings")

    @contextmanager
    def session(self) -> Iterator[Session]:
        """A session in one transaction: committed on success, rolled back on any error.

        A database that cannot be reached (or a SQLite file that cannot be written) raises
        ``StoreError``; constraint violations keep their SQLAlchemy type for the caller.
        """
        with self.reachable(), self._sessions() as session, session.begin():
            yield session

    @contextmanager
    def snapshot(self) -> Iterator[Session]:
        """A session for reading whose statements all see the database at one moment:
        PostgreSQL's REPEATABLE READ; on SQLite, a transaction begun before the first read
        (its driver would otherwise read outside any). Nothing is written in it."""
        with self.reachable(), self._sessions() as session, session.begin():
            if self.engine.dialect.name == "postgresql":
                session.connection(execution_options={"isolation_level": "REPEATABLE READ"})
            elif self.engine.dialect.name == "sqlite":
                connection = session.connection()
                if not connection.connection.driver_connection.in_transaction:  # type: ignore[union-attr]
                    connection.exec_driver_sql("BEGIN")
            yield session

    def dispose(self) -> None:
        self.engine.dispose()
