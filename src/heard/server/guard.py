"""Checks made before a request's body is read: who is calling, and how big the body may be.

A client address that sent too many bad tokens (``heard.server.quotas.AuthFailures``) gets a
429 with Retry-After for any request carrying a token, before the token is looked up, but for
the tokens found valid lately (the other users behind one proxy's address).

FastAPI reads a JSON body before it resolves a route's dependencies, so a route's own
authentication comes after the body is in memory. This middleware runs first: every
``/v1/`` request (the live sockets have their own handshake) must carry a valid token
(``Authorization: Bearer``, or ``Token`` as Deepgram's SDKs send it) or
gets a 401 before a byte of its body is read, and each route's body is limited while it is
read (a declared ``Content-Length`` over the limit is refused at once, a body that grows
past it is cut off with a 413, and one that stops arriving for ``bodies.BODY_IDLE_S`` with a
408: JSON, forms and raw bodies alike). A small body (a route's JSON) is read whole here,
before the request waits for its user's turn on a thread, so each is timed on its own clock.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import parse_qsl

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from heard.errors import StoreError
from heard.limits import EVIDENCE_BODY_BYTES, JSON_BODY_BYTES, MAX_UPLOAD_BYTES
from heard.server import bodies, tickets
from heard.server.errors import STORE_TROUBLE, error_reply
from heard.server.quotas import AuthFailures
from heard.server.shares import TokenChecks
from heard.store.database import Database
from heard.store.users import LOCAL_USER

log = logging.getLogger("heard.server")

__all__ = [
    "AUDIO_PATH",
    "BODY_LIMITS",
    "Guard",
    "bearer_token",
    "client_address",
    "from_this_machine",
    "raw_headers",
    "too_many_bad_tokens",
]

BODY_LIMITS: list[tuple[str, re.Pattern[str], int]] = [
    ("PUT", re.compile(r"^/v1/meetings/[^/]+/tracks/[^/]+$"), MAX_UPLOAD_BYTES),
    ("POST", re.compile(r"^/v1/memory/evidence$"), EVIDENCE_BODY_BYTES),
    ("POST", re.compile(r"^/v1/audio/(transcriptions|translations)$"), MAX_UPLOAD_BYTES),
    ("POST", re.compile(r"^/v1/listen$"), MAX_UPLOAD_BYTES),
]
"""Routes whose bodies may be larger than ``JSON_BODY_BYTES``: (method, path, bytes)."""


def body_limit(method: str, path: str) -> int:
    for route_method, pattern, limit in BODY_LIMITS:
        if method == route_method and pattern.match(path):
            return limit
    return JSON_BODY_BYTES


AUDIO_PATH = re.compile(r"^/v1/meetings/[^/]+/tracks/[^/]+/audio$")
"""A track's audio, which an audio element asks for with a ticket (``heard.server.tickets``)."""
LOOPBACK = {"127.0.0.1", "localhost", "::1"}


FORWARDED = ("forwarded", "via", "x-forwarded-for", "x-forwarded-host", "x-real-ip",
             "cf-connecting-ip", "true-client-ip", "x-client-ip", "x-cluster-client-ip",
             "fastly-client-ip", "x-original-forwarded-for")  # fmt: skip
"""Headers a proxy adds: a request through one is not this machine's, whatever it says. Any
``X-Forwarded-*`` header counts too, and a name is read with ``_`` as ``-`` (some servers pass
``X_Forwarded_For`` on as it was sent)."""


def proxied(name: str) -> bool:
    """Whether a header named ``name`` (lower case) is one a proxy adds."""
    name = name.replace("_", "-")
    return name in FORWARDED or name.startswith("x-forwarded-")


LOCAL_HOST = re.compile(r"^(?:127\.0\.0\.1|localhost|\[::1\])(?::\d{1,5})?$")
"""This machine's loopback as a Host header names it: the name, and a port or none."""
ONCE = ("host", "origin", "sec-fetch-site", *FORWARDED)
"""Headers a request may send once only to be taken as this machine's: a server and a proxy
may each read another copy of a repeated one."""


def bearer_token(headers: Mapping[str, str]) -> str:
    """The token of an ``Authorization`` header: ``Bearer``, or ``Token`` as Deepgram's SDKs
    send the key ("" for none)."""
    scheme, _, token = headers.get("authorization", "").partition(" ")
    return token.strip() if scheme.lower() in ("bearer", "token") else ""


def raw_headers(scope: Scope) -> list[tuple[str, str]]:
    """Every header of an ASGI request or socket, names lower-cased, repeats kept."""
    return [(k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in scope["headers"]]


def from_this_machine(headers: list[tuple[str, str]], client: tuple[str, int] | None) -> bool:
    """Whether a request without a token may act as the local user (``--local``): it comes
    over loopback, not through a proxy; it names this machine's loopback as its host (a page
    of another site that a rebinding DNS points here names its own), and nothing after it;
    a browser sent it from no other origin than this server's own pages; and none of those
    headers comes twice."""
    if client is None or client[0] not in LOOPBACK:
        return False
    names = [name for name, _ in headers]
    if any(proxied(name) for name in names) or any(names.count(h) > 1 for h in ONCE):
        return False
    one = dict(headers)
    host = one.get("host", "")
    if not LOCAL_HOST.match(host):
        return False
    if one.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
        return False
    origin = one.get("origin")
    return origin is None or origin in (f"http://{host}", f"https://{host}")


class Guard:
    """ASGI middleware: authentication and body limits before the app sees the request.

    With ``local`` (``heard serve --local`` on loopback), a request from this machine without
    a token acts as the local user, who owns what the command line stores."""

    def __init__(
        self,
        app: ASGIApp,
        database: Callable[[], Database],
        tokens: TokenChecks,
        local: bool = False,
        link_secret: bytes = b"",
        failures: AuthFailures | None = None,
    ) -> None:
        self.app = app
        self.database = database
        self.tokens = tokens
        self.local = local
        self.link_secret = link_secret
        self.failures = failures or AuthFailures()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith("/v1/"):
            await self.app(scope, receive, send)
            return
        raw = raw_headers(scope)
        headers = dict(raw)
        token = bearer_token(headers)
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        # a signed link is its signer's, in local mode too
        signed = not token and "sig" in query and AUDIO_PATH.match(scope["path"]) is not None
        address = client_address(scope)
        wait_s = self.failures.wait_s(address) if token or signed else 0
        if wait_s and not self.tokens.vouched(token):  # users behind a flooded proxy: served
            await _reply(send, scope["path"], 429, too_many_bad_tokens(wait_s),
                         {"Retry-After": str(wait_s)})  # fmt: skip
            return
        try:
            user = await self.tokens.principal(token) if token else None
            if signed:  # on the token checks' threads too, fair across links
                user = await self.tokens.pool.run(query["sig"][:100], tickets.check,
                                                  self.database(), self.link_secret,
                                                  scope["path"], query)  # fmt: skip
        except StoreError as e:  # locked, full, down: the 503 every route answers then
            log.error("store: %s", e)
            await _reply(send, scope["path"], 503, STORE_TROUBLE)
            return
        if user is None and not token and not signed and self.local:
            user = LOCAL_USER if from_this_machine(raw, scope.get("client")) else None
        if user is None:
            if token or signed:
                self.failures.failed(address)
            await _reply(send, scope["path"], 401, "a valid bearer token is required",
                         {"WWW-Authenticate": "Bearer"})  # fmt: skip
            return
        scope.setdefault("state", {})["principal"] = user
        limit = body_limit(scope["method"], scope["path"])
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            await _reply(send, scope["path"], 413, f"the body is larger than {limit} bytes")
            return
        if limit > JSON_BODY_BYTES:  # an upload: read as the route takes it
            await self.app(scope, _limited(receive, limit), send)
            return
        try:  # a small body: read whole now, on its own clock, before it waits for a thread
            messages = await _whole(_limited(receive, limit))
        except HTTPException as e:  # the rest of the body may still come: close after it
            await _reply(send, scope["path"], e.status_code, e.detail, {"Connection": "close"})
            return
        await self.app(scope, _replayed(messages, receive), send)


def client_address(scope: Scope) -> str:
    """The address a request or socket came from (as the server saw it: a proxy's own,
    behind one)."""
    client = scope.get("client")
    return str(client[0]) if client else "-"


def too_many_bad_tokens(wait_s: int) -> str:
    return f"too many bad tokens from this address: try again in {wait_s} s"


def _limited(receive: Receive, limit: int) -> Receive:
    """``receive``, raising a 413 once the body read so far is over ``limit``, and a 408 when
    the body stops arriving for ``bodies.BODY_IDLE_S`` (once it is whole, a wait is for the
    client to hang up, and is not timed)."""
    seen = 0
    whole = False

    async def limited() -> Message:
        nonlocal seen, whole
        if whole:
            return await receive()
        try:
            message = await asyncio.wait_for(receive(), bodies.BODY_IDLE_S)
        except TimeoutError:
            raise HTTPException(
                408, f"the body stopped arriving (nothing for {bodies.BODY_IDLE_S:g} s)"
            ) from None
        if message["type"] == "http.request":
            seen += len(message.get("body", b""))
            whole = not message.get("more_body", False)
            if seen > limit:
                raise HTTPException(413, f"the body is larger than {limit} bytes")
        else:
            whole = True
        return message

    return limited


async def _whole(receive: Receive) -> list[Message]:
    """Every message of a request's body (up to its end, or the client hanging up)."""
    messages = [await receive()]
    while messages[-1]["type"] == "http.request" and messages[-1].get("more_body", False):
        messages.append(await receive())
    return messages


def _replayed(messages: list[Message], receive: Receive) -> Receive:
    """``messages`` first, then ``receive`` (a route waiting for the client to hang up)."""
    waiting = list(messages)

    async def replayed() -> Message:
        return waiting.pop(0) if waiting else await receive()

    return replayed


async def _reply(
    send: Send, path: str, status: int, detail: str, extra: dict[str, str] | None = None
) -> None:
    status, shaped = error_reply(path, status, detail)
    body = json.dumps(shaped).encode()
    headers: list[Any] = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *((k.lower().encode(), v.encode()) for k, v in (extra or {}).items()),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
