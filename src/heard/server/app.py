"""The FastAPI app: meetings and memory over REST, a live conversation over WebSocket.

Every route but ``/`` and ``/healthz`` needs ``Authorization: Bearer <token>``
(the WebSocket takes ``?token=`` too, since browsers cannot set its headers).
Meetings and evidence belong to the user whose token made them; asking for
someone else's gets the same 404 as asking for nothing.

The parts: request and reply bodies in ``schemas``; the server's state in ``state`` (what
every route shares: the meetings layer's runner and uploads, the users' memories); the
caller and that state as a route takes them in ``deps``; one router per resource in
``routes/``; the error table and its handlers in ``errors``; the live sockets on one session
loop (``session``) with a codec per protocol (``live``, ``listen``, ``realtime``). This
module assembles them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware
from fastapi.staticfiles import StaticFiles
from fastapi_offline import FastAPIOffline

from heard.meetings import jobs
from heard.meetings.runner import MeetingRunner
from heard.meetings.uploads import Uploads
from heard.memory.users import Memories
from heard.server import listen, live, realtime, session, spool
from heard.server.errors import install_error_handlers
from heard.server.guard import Guard
from heard.server.protocols import assemblyai, twilio
from heard.server.routes import deepgram, meetings, memory, openai, site
from heard.server.schemas import ErrorOut
from heard.server.shares import TokenChecks
from heard.server.state import ServerSettings, ServerState
from heard.work import FairPool

__all__ = ["ServerSettings", "create_app"]

log = logging.getLogger("heard.server")

WORK_THREADS, WORK_PER_USER = 6, 2
"""The threads of asynchronous routes' and sockets' blocking calls, and how many of them one
user's calls may hold at once: with five users busy, a sixth still finds a thread."""


def create_app(settings: ServerSettings) -> FastAPI:
    """The app for ``settings``: its schema migrated, leftovers of killed uploads removed, the
    tracks of processes that are gone taken back (and, once it starts, resumed)."""
    settings.db.migrate()
    work = FairPool(WORK_THREADS, per_owner=WORK_PER_USER, name="heard-work")
    uploads = Uploads(settings.db, settings.uploads, settings.max_track_s,
                      settings.user_storage_bytes, work)  # fmt: skip
    if removed := uploads.clear_leftovers() + spool.clear_leftovers(settings.uploads):
        log.warning("removed %d upload file(s) that killed requests left behind", removed)
    interrupted = jobs.recover_interrupted(settings.db)
    runs = MeetingRunner(settings.db, settings.transcriber, queue=settings.queue,
                         stopping=settings.stopping, lease_s=settings.lease_s,
                         take_over=settings.resume)  # fmt: skip
    state = ServerState(
        settings,
        Memories(settings.db, settings.workspace, settings.memory, settings.stopping),
        runs,
        uploads,
        openai.queue(settings.stopping),
        work,
        TokenChecks(lambda: settings.db),
    )

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        runs.keep(interrupted if settings.resume else [])
        yield
        settings.stopping.set()  # (heard serve sets it at the signal, before requests drain)
        await asyncio.to_thread(runs.close)  # a run gives its track back at its next segment

    app = FastAPIOffline(  # /docs and /redoc from files served here: they work offline
        title="heard",
        summary="Meetings, live captions and memory for conversation audio.",
        version="0.1.0",
        responses={
            401: {"model": ErrorOut},
            408: {"model": ErrorOut, "description": "The body stopped arriving (20 s)."},
            429: {
                "model": ErrorOut,
                "description": "Too many bad tokens from this address (Retry-After).",
            },
        },
        lifespan=lifespan,
    )
    app.state.heard = state
    install_error_handlers(app)
    app.add_middleware(Guard, database=lambda: settings.db, tokens=state.tokens,
                       local=settings.local, link_secret=settings.link_secret,
                       failures=state.failures)  # fmt: skip
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
    session.mount(app, assemblyai.PATH, assemblyai.AssemblyAICodec, assemblyai.refuse,
                  assemblyai.offered_key)  # fmt: skip
    session.mount(app, twilio.PATH, twilio.TwilioCodec, twilio.refuse, greeting=twilio.greeting)
    return app
