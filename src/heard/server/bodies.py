"""How a request's body is read.

* JSON: once, and refused when it names a key twice. Python's JSON parser keeps the last of
  two equal keys, so ``{"k": 1, "k": 100}`` would reach a route as ``k = 100`` while a proxy
  or a log that reads the first saw ``1``. Every router's routes read their bodies here
  instead: a 422 naming the key (``StrictJSONRoute``).
* A raw body (an upload, a file to transcribe): a client that stops sending mid-body would
  hold its file and its place in its user's storage for good; ``arriving`` gives it up once
  nothing came for ``BODY_IDLE_S`` (a 408, nothing kept).
* A multipart form: its files are spooled to ``$TMPDIR`` (Starlette's, past 1 MB) before a
  route runs, so the body counts against its user's storage as it arrives, as an upload does
  (past the room left: a 507, nothing kept), until the request ends. FastAPI calls any
  failure while the form is read "an error parsing the body", a 400: the room, a body that
  stopped arriving (408) and a full or failing disk (507 or 503: the server's fault, not the
  client's) are answered as themselves (``SpooledFormRoute``).
"""

from __future__ import annotations

import asyncio
import errno
import json
import logging
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

from fastapi import HTTPException, Request, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from heard.errors import HeardError, NoRoomError, RepeatedKeyError, ServiceError, SlowBodyError
from heard.server.shares import SharedRoute
from heard.storable import unique_keys

__all__ = ["BODY_IDLE_S", "SpooledFormRoute", "StrictJSONRoute", "arriving"]

log = logging.getLogger("heard.server")

BODY_IDLE_S = 20.0
"""A body that sends nothing for this long is given up (a 408): a raw one here, any other
(JSON, a form) in ``heard.server.guard`` (nginx's client_body_timeout, between two reads, is
60 s)."""


async def arriving(
    chunks: AsyncIterator[bytes], idle_s: float | None = None
) -> AsyncIterator[bytes]:
    """``chunks`` as they come; ``SlowBodyError`` once none came for ``idle_s``
    (``BODY_IDLE_S``)."""
    idle_s = BODY_IDLE_S if idle_s is None else idle_s
    waiting = aiter(chunks)
    while True:
        try:
            async with asyncio.timeout(idle_s):
                chunk = await anext(waiting)
        except StopAsyncIteration:
            return
        except TimeoutError:
            raise SlowBodyError(
                f"the body stopped arriving (nothing for {idle_s:g} s); nothing was kept"
            ) from None
        yield chunk


def _one_of_each(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    try:
        return unique_keys(pairs)
    except RepeatedKeyError as e:
        raise HTTPException(422, f"the JSON body {e}") from None


class _StrictJSONRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            self._json = json.loads(await self.body(), object_pairs_hook=_one_of_each)
        return self._json


class StrictJSONRoute(SharedRoute):
    """A route whose JSON body may not name a key twice in an object (and which, synchronous,
    waits for its user's share of the request threads: ``SharedRoute``)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def route(request: Request) -> Response:
            return await handler(_StrictJSONRequest(request.scope, request.receive))

        return route


class SpooledFormRoute(SharedRoute):
    """A route whose form counts against its user's storage while it arrives, and whose form
    failures are answered as themselves: past the user's room a 507, a body that stopped
    arriving a 408, a full ``$TMPDIR`` a 507 (503 for another disk failure), not FastAPI's
    400 (and which, synchronous, waits for its user's share of the request threads:
    ``SharedRoute``)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def route(request: Request) -> Response:
            user = request.scope.get("state", {}).get("principal")
            if request.method != "POST" or user is None:  # no form
                return await _answered(handler, request)
            uploads = request.app.state.heard.uploads
            async with uploads.counted(user.owner) as count:
                return await _answered(handler, Request(request.scope, _counting(request, count)))

        return route


def _counting(request: Request, count: Callable[[int], None]) -> Any:
    """``request``'s receive, counting each piece of its body (``count`` raises past the
    room left)."""

    async def receive() -> Any:
        message = await request.receive()
        if message["type"] == "http.request":
            count(len(message.get("body", b"")))
        return message

    return receive


async def _answered(
    handler: Callable[[Request], Coroutine[Any, Any, Response]], request: Request
) -> Response:
    """``handler``'s answer, a failure while its form was read answered as itself."""
    try:
        return await handler(request)
    except StarletteHTTPException as e:  # FastAPI raises Starlette's here
        cause = e.__cause__
        if e.status_code == 400 and isinstance(cause, HeardError | StarletteHTTPException):
            raise cause from None  # past the room left, or a body that stopped arriving
        if e.status_code != 400 or not isinstance(cause, OSError):
            raise
        log.error("a form's files could not be spooled to $TMPDIR: %s", cause)
        if cause.errno in (errno.ENOSPC, errno.EDQUOT):
            raise NoRoomError("the server has no room for the file") from None
        raise ServiceError("the server cannot keep the file now") from None
