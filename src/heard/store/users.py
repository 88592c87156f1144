"""Users and bearer tokens. A token is shown once, when made; only its SHA-256 is stored."""

from __future__ import annotations

import hashlib
import secrets
import unicodedata
import uuid
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import CursorResult, delete, select

from heard.errors import ConflictError, InputError, NotFoundError
from heard.store.database import Database
from heard.store.models import ApiToken, User

__all__ = [
    "LOCAL_USER",
    "Principal",
    "add_token",
    "add_user",
    "authenticate",
    "digest",
    "revoke_tokens",
    "token_digests",
]

TOKEN_PREFIX = "heard_"


@dataclass(frozen=True, slots=True)
class Principal:
    """The user a request acts for; ``owner`` is what their rows carry."""

    id: uuid.UUID
    name: str

    @property
    def owner(self) -> str:
        return "" if self.id == LOCAL_ID else str(self.id)


LOCAL_ID = uuid.UUID(int=0)
LOCAL_USER = Principal(LOCAL_ID, "local")
"""The one user of a laptop's server (``heard serve --local``): it owns what ``heard
transcribe`` and ``heard memory`` store (owner "")."""


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def add_user(db: Database, name: str) -> tuple[Principal, str]:
    """Create user ``name`` with a first token; returns the user and the token (shown once)."""
    name = name.strip()
    if not name or len(name) > 200:
        raise InputError("a user name must be 1-200 characters")
    if any(unicodedata.category(c).startswith("C") for c in name):
        raise InputError(f"a user name cannot hold control or invisible characters: {name!r}")
    token = _new_token()
    with db.session() as s:
        if s.scalar(select(User.id).where(User.name == name)) is not None:
            raise ConflictError(
                f"user {name!r} already exists (`heard users token {name}` adds a token)"
            )
        user = User(name=name)
        s.add(user)
        s.flush()
        s.add(ApiToken(user_id=user.id, digest=digest(token)))
        return Principal(user.id, user.name), token


def add_token(db: Database, name: str) -> str:
    """Another token for an existing user."""
    token = _new_token()
    with db.session() as s:
        user_id = s.scalar(select(User.id).where(User.name == name.strip()))
        if user_id is None:
            raise NotFoundError(f"no user {name!r} (`heard users add {name}` creates one)")
        s.add(ApiToken(user_id=user_id, digest=digest(token)))
    return token


def revoke_tokens(db: Database, name: str, token: str | None = None) -> int:
    """Delete user ``name``'s tokens (only ``token``, if given); how many went."""
    with db.session() as s:
        user_id = s.scalar(select(User.id).where(User.name == name.strip()))
        if user_id is None:
            raise NotFoundError(f"no user {name!r}")
        query = delete(ApiToken).where(ApiToken.user_id == user_id)
        if token is not None:
            query = query.where(ApiToken.digest == digest(token.strip()))
        gone = int(cast(CursorResult[Any], s.execute(query)).rowcount)
        if token is not None and gone == 0:
            raise NotFoundError(f"that token is not one of {name!r}'s")
        return gone


def authenticate(db: Database, token: str) -> Principal | None:
    if not token.startswith(TOKEN_PREFIX) or len(token) > 200:
        return None
    with db.session() as s:
        row = s.execute(
            select(User.id, User.name)
            .join(ApiToken, ApiToken.user_id == User.id)
            .where(ApiToken.digest == digest(token))
        ).first()
        return Principal(row[0], row[1]) if row else None


def token_digests(db: Database, user_id: uuid.UUID) -> tuple[Principal, list[str]] | None:
    """The user with that id and the digests of their tokens (None: no such user)."""
    with db.session() as s:
        name = s.scalar(select(User.name).where(User.id == user_id))
        if name is None:
            return None
        digests = s.scalars(select(ApiToken.digest).where(ApiToken.user_id == user_id)).all()
        return Principal(user_id, name), list(digests)
