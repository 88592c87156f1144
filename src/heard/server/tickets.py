"""Links a browser's audio element can follow: it cannot send a bearer token, so the page
asks for a link (with its token) and gets one that carries a signature instead.

A ticket signs one path and an expiry with a key made of the server's secret and the digest
of the token that asked for it, so it opens that path only, only until it expires, only while
that token is not revoked, and no one who can read the database (where the digests are) can
make one. Servers that share the secret (``HEARD_LINK_SECRET``) take each other's tickets.
"""

from __future__ import annotations

import hashlib
import hmac
import time
import uuid
from urllib.parse import urlencode

from heard.store.database import Database
from heard.store.users import Principal, digest, token_digests

__all__ = ["TICKET_S", "check", "sign"]

TICKET_S = 6 * 3600
"""How long a link stays good: a long meeting played with pauses."""


def _signature(secret: bytes, token_digest: str, user: str, path: str, expires: int) -> str:
    key = hmac.new(secret, token_digest.encode(), hashlib.sha256).digest()
    message = f"{user}\n{path}\n{expires}".encode()
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def sign(secret: bytes, token: str, user: Principal, path: str, now: float | None = None) -> str:
    """The query that opens ``path`` (as the server sees it: not percent-encoded) for
    ``user`` for ``TICKET_S``."""
    expires = int((time.time() if now is None else now) + TICKET_S)
    signature = _signature(secret, digest(token), str(user.id), path, expires)
    return urlencode({"user": str(user.id), "expires": expires, "sig": signature})


def check(
    db: Database, secret: bytes, path: str, query: dict[str, str], now: float | None = None
) -> Principal | None:
    """The user a ticket for ``path`` opens it for; None when it is not one, has expired,
    or its token was revoked."""
    try:
        user_id = uuid.UUID(query.get("user", ""))
        expires = int(query.get("expires", ""))
    except ValueError:
        return None
    signature = query.get("sig", "")
    if expires < (time.time() if now is None else now) or len(signature) != 64:
        return None
    found = token_digests(db, user_id)
    if found is None:
        return None
    user, digests = found
    for key in digests:
        if hmac.compare_digest(_signature(secret, key, str(user_id), path, expires), signature):
            return user
    return None
