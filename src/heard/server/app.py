"""The FastAPI app: meetings and memory over REST, a live conversation over WebSocket.

Every route but ``/`` and ``/healthz`` needs ``Authorization: Bearer <token>``
(the WebSocket takes ``?token=`` too, since browsers cannot set its headers).
Meetings and evidence belong to the user whose token made them; asking for
someone else's gets the same 404 as asking for nothing.

The parts: request and reply bodies in ``schemas``, the caller and the server's state in
``deps``, one router per resource in ``routes/``, the error table and its handlers in
``errors``, the live socket in ``live``. This module assembles them.
"""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware
from fastapi.staticfiles import StaticFiles

from heard.server.errors import install_error_handlers
from heard.server.guard import Guard
from heard.server.live import mount_live
from heard.server.routes import meetings, memory, site
from heard.server.schemas import ErrorOut
from heard.server.state import Memories, ServerSettings

__all__ = ["ServerSettings", "create_app"]


def create_app(settings: ServerSettings) -> FastAPI:
    """The app for ``settings``: its schema migrated, leftovers of killed uploads removed."""
    settings.db.migrate()
    for leftover in settings.uploads.glob("*/*/.*.part"):  # uploads cut short by a crash
        leftover.unlink(missing_ok=True)
    memories = Memories(settings.db, settings.workspace, settings.memory)
    app = FastAPI(
        title="heard",
        summary="Meetings, live captions and memory for conversation audio.",
        version="0.1.0",
        responses={401: {"model": ErrorOut}},
    )
    app.state.settings = settings
    app.state.memories = memories
    install_error_handlers(app)
    app.add_middleware(Guard, database=lambda: settings.db)
    if settings.cors_origins:  # outermost: a preflight (no token) is answered here
        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(settings.cors_origins),
            allow_methods=["GET", "POST", "PUT", "DELETE"],
            allow_headers=["Authorization", "Content-Type"],
            max_age=600,
        )
    app.mount("/static", StaticFiles(directory=site.STATIC), name="static")
    for router in (site.router, meetings.router, memory.router):
        app.include_router(router)
    mount_live(app, settings, memories)
    return app
