"""Each user's share of what a server does in threads, so that one user's load cannot delay
another user's requests or live finals.

Three kinds of work, three bounds:

* **Token checks** (``TokenChecks``): every request, every live final and every event stream's
  recheck looks its token up in the database. They run on two threads of their own, one
  check of a token at a time and checks of a token asked meanwhile answered by it (400 event
  streams of one token make one lookup, not 400), fair across tokens.
* **Blocking calls of asynchronous routes and sockets** (``ServerState.work``, a
  ``heard.work.FairPool``): counting an upload's length, the database reads of an event
  stream, opening a user's memory; a few at once per user, fair across users.
* **Synchronous routes** (``SharedRoute``): FastAPI runs them on one pool of 40 threads for
  the whole server; a user's requests past ``USER_REQUESTS`` at once wait on the event loop,
  holding no thread, and past ``USER_WAITING`` more are a 429.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.routing import APIRoute

from heard.errors import BusyError
from heard.store.database import Database
from heard.store.users import Principal, authenticate, digest
from heard.work import FairPool

__all__ = ["USER_REQUESTS", "USER_WAITING", "SharedRoute", "TokenChecks", "UserShares"]

USER_REQUESTS = 1
"""A user's synchronous requests served at once (of the 40 request threads). Threads share
one interpreter lock: every one of a user's requests that runs Python beside another user's
takes its turns from it. ``bench/stall.py``'s renames (12 loops of rename and search over
50,000 utterances) against another user's tiny GET, p95: 4 at once 177 ms, 2 at once 63 ms,
one 33 ms, against 10-14 ms alone; the heavy user's own answers in those runs went from 742
to 1,590 in the same time, as fewer threads fight for the lock (BENCHMARKS.md, issue 57)."""
USER_WAITING = 256
"""A user's synchronous requests waiting beyond those: more are refused (429) at once."""


VOUCHED = 10_000
"""Tokens remembered as valid (the most recently seen), so that a client address over its bad
tokens' limit (all the users behind one proxy) still lets them in."""


class TokenChecks:
    """Tokens looked up on threads of their own (``threads``), fair across tokens; a check of
    a token while one is in flight takes that one's answer. The tokens found valid lately are
    remembered (``vouched``)."""

    def __init__(self, database: Callable[[], Database], threads: int = 2) -> None:
        self.database = database
        self.pool = FairPool(threads, per_owner=1, name="heard-tokens")
        self._in_flight: dict[str, asyncio.Future[Principal | None]] = {}
        self._valid: OrderedDict[str, None] = OrderedDict()

    def vouched(self, token: str) -> bool:
        """Whether ``token`` was found valid lately (it may have been revoked since: a check
        still decides)."""
        return bool(token) and digest(token) in self._valid

    def _found(self, key: str, check: asyncio.Future[Principal | None]) -> None:
        self._in_flight.pop(key, None)
        if check.cancelled() or check.exception() is not None:
            return
        if check.result() is None:
            self._valid.pop(key, None)
            return
        self._valid[key] = None
        self._valid.move_to_end(key)
        while len(self._valid) > VOUCHED:
            self._valid.popitem(last=False)

    async def principal(self, token: str) -> Principal | None:
        """The user ``token`` belongs to (None: no such token, or revoked); ``StoreError``
        when the store cannot say."""
        key = digest(token)
        check = self._in_flight.get(key)
        if check is None:
            check = asyncio.ensure_future(self.pool.run(key, authenticate, self.database(), token))
            self._in_flight[key] = check
            check.add_done_callback(lambda done: self._found(key, done))
        return await asyncio.shield(check)


class UserShares:
    """At most ``per_user`` of one user's requests in at once; the others wait their turn (at
    most ``waiting`` of them: more, ``BusyError``)."""

    def __init__(self, per_user: int = USER_REQUESTS, waiting: int = USER_WAITING) -> None:
        self.per_user, self.waiting = per_user, waiting
        self._users: dict[str, tuple[asyncio.Semaphore, list[int]]] = {}

    @contextlib.asynccontextmanager
    async def taken(self, owner: str) -> AsyncIterator[None]:
        semaphore, count = self._users.setdefault(owner, (asyncio.Semaphore(self.per_user), [0]))
        if count[0] >= self.per_user + self.waiting:
            raise BusyError(
                f"this user has {count[0]} requests in flight; send more once they are answered",
                retry_after_s=1.0,
            )
        count[0] += 1
        try:
            async with semaphore:
                yield
        finally:
            count[0] -= 1
            if not count[0]:
                del self._users[owner]


class SharedRoute(APIRoute):
    """A route that, when its endpoint is synchronous (run on a request thread), first waits
    for its user's share (``ServerState.shares``); asynchronous endpoints bound their own
    blocking calls (``ServerState.work``)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        if inspect.iscoroutinefunction(self.endpoint):
            return handler

        async def route(request: Request) -> Response:
            user: Principal | None = request.scope.get("state", {}).get("principal")
            if user is None:  # the site's own files: no user, no share
                return await handler(request)
            shares: UserShares = request.app.state.heard.shares
            async with shares.taken(user.owner):
                return await handler(request)

        return route
