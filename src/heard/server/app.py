"""The FastAPI app: meetings and memory over REST, a live conversation over WebSocket.

Every route but ``/`` and ``/healthz`` needs ``Authorization: Bearer <token>``
(the WebSocket takes ``?token=`` too, since browsers cannot set its headers).
Meetings and evidence belong to the user whose token made them; asking for
someone else's gets the same 404 as asking for nothing.

The parts: request and reply bodies in ``schemas``, the caller and the server's state in
``deps``, one router per resource in ``routes/``, the error table and its handlers in
``errors``, the live sockets on one session loop (``session``) with a codec per protocol
(``live``, ``listen``, ``realtime``). This module assembles them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncIterator

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware
from fastapi.staticfiles import StaticFiles
from fastapi_offline import FastAPIOffline

from heard.errors import HeardError
from heard.pipeline import jobs
from heard.server import listen, live, realtime, session, spool
from heard.server.errors import install_error_handlers
from heard.server.guard import Guard
from heard.server.quotas import StorageLedger
from heard.server.routes import deepgram, meetings, memory, openai, site
from heard.server.schemas import ErrorOut
from heard.server.state import Memories, Runs, ServerSettings

__all__ = ["ServerSettings", "create_app"]

log = logging.getLogger("heard.server")


def _resume(settings: ServerSettings, runs: Runs, meeting_id: uuid.UUID) -> None:
    """Finish a meeting a process that is gone left off: here, or on the workers."""
    log.warning("resuming meeting %s, which a process that is gone left off", meeting_id)
    try:
        if settings.queue:
            jobs.enqueue(settings.db, meeting_id)
        elif settings.transcriber is not None:
            runs.resume(meeting_id)
    except HeardError as e:  # the broker or the database is down: the next start tries again
        log.error("meeting %s not resumed: %s", meeting_id, e)


def create_app(settings: ServerSettings) -> FastAPI:
    """The app for ``settings``: its schema migrated, leftovers of killed uploads removed, the
    tracks of processes that are gone taken back (and, once it starts, resumed)."""
    settings.db.migrate()
    for leftover in settings.uploads.glob("*/*/.*.part"):  # uploads cut short by a crash
        leftover.unlink(missing_ok=True)
    if removed := spool.clear_leftovers(settings.uploads):
        log.warning("removed %d upload file(s) that killed requests left behind", removed)
    interrupted = jobs.recover_interrupted(settings.db)
    memories = Memories(settings.db, settings.workspace, settings.memory, settings.stopping)
    runs = Runs(settings)

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        resuming = []
        if settings.resume and (settings.queue or settings.transcriber is not None):
            resuming = [asyncio.create_task(asyncio.to_thread(_resume, settings, runs, m))
                        for m in interrupted]  # fmt: skip
        yield
        settings.stopping.set()  # (heard serve sets it at the signal, before requests drain)
        for task in resuming:
            task.cancel()
        await asyncio.to_thread(runs.close)  # a run gives its track back at its next segment

    app = FastAPIOffline(  # /docs and /redoc from files served here: they work offline
        title="heard",
        summary="Meetings, live captions and memory for conversation audio.",
        version="0.1.0",
        responses={401: {"model": ErrorOut}},
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.memories = memories
    app.state.transcribing = openai.queue(settings.stopping)
    app.state.storage = StorageLedger(
        settings.user_storage_bytes, lambda owner: meetings.stored_bytes(settings, owner)
    )
    app.state.runs = runs
    install_error_handlers(app)
    app.add_middleware(Guard, database=lambda: settings.db, local=settings.local,
                       link_secret=settings.link_secret)  # fmt: skip
    if settings.cors_origins:  # outermost: a preflight (no token) is answered here
        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(settings.cors_origins),
            allow_methods=["GET", "POST", "PUT", "DELETE"],
            allow_headers=["Authorization", "Content-Type"],
            max_age=600,
        )
    app.mount("/static", StaticFiles(directory=site.STATIC), name="static")
    routers = (site.router, meetings.search_router, meetings.router, memory.router,
               openai.router, deepgram.router)  # fmt: skip
    for router in routers:
        app.include_router(router)
    session.mount(app, "/v1/live", live.LiveCodec, live.refuse)
    session.mount(app, "/v1/listen", listen.DeepgramCodec, listen.refuse)
    session.mount(app, "/v1/realtime", realtime.RealtimeCodec, realtime.refuse)
    return app
