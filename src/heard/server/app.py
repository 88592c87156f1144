"""The FastAPI app: meetings and memory over REST, a live conversation over WebSocket.

Every route but ``/`` and ``/healthz`` needs ``Authorization: Bearer <token>``
(the WebSocket takes ``?token=`` too, since browsers cannot set its headers).
Meetings and evidence belong to the user whose token made them; asking for
someone else's gets the same 404 as asking for nothing.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import BackgroundTasks, Depends, FastAPI, HTTPException, Query, Request
from fastapi import Path as FastAPIPath
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.routing import APIRoute
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.staticfiles import StaticFiles
from pydantic import AwareDatetime, BaseModel, BeforeValidator, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from heard.asr.audio import probe_audio
from heard.errors import ConflictError, HeardError, InputError, NotFoundError
from heard.memory.workspace import Page, write_page
from heard.pipeline.run import run_pipeline
from heard.server.errors import invalid_detail, status_of
from heard.server.state import Memories, ServerSettings
from heard.store.evidence import StoredUtterance
from heard.store.meetings import (
    MeetingSummary,
    TrackSpec,
    create_meeting,
    get_meeting,
    list_meetings,
    meeting_phrases,
    track_states,
    transcript_document,
)
from heard.store.models import TrackStatus
from heard.store.tracks import track_of, upload_track
from heard.store.users import Principal, authenticate
from heard.timeline.formats import render
from heard.transcript.tokenize import tokenize

__all__ = ["ServerSettings", "create_app"]

MAX_UPLOAD_BYTES = 512 * 1024 * 1024
MEDIA_TYPES = {
    "json": "application/json",
    "srt": "application/x-subrip",
    "vtt": "text/vtt",
    "md": "text/markdown",
    "txt": "text/plain",
}

log = logging.getLogger("heard.server")


# -- schemas ------------------------------------------------------------------------------


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _iso_text(value: object) -> object:
    if not isinstance(value, str):
        raise ValueError("expected an ISO 8601 date-time string with a time zone")
    return value


def _not_bool(value: object) -> object:
    if isinstance(value, bool):
        raise ValueError("expected a number, not true or false")
    return value


Timestamp = Annotated[AwareDatetime, BeforeValidator(_iso_text)]
"""A date-time as JSON carries it: a string (a bare number is not taken as Unix time)."""


class ParticipantIn(_Strict):
    name: str = Field(min_length=1, max_length=200)
    offset_s: Annotated[float, BeforeValidator(_not_bool)] = Field(default=0.0, ge=0, le=86_400)


class MeetingIn(_Strict):
    title: str = Field(min_length=1, max_length=500)
    participants: list[ParticipantIn] = Field(min_length=1, max_length=64)
    started_at: Timestamp | None = None


class TrackOut(BaseModel):
    participant: str
    status: str
    attempts: int
    offset_s: float
    last_error: str | None


class MeetingOut(BaseModel):
    id: uuid.UUID
    title: str
    started_at: datetime
    status: str
    participants: list[str]
    phrases: int
    tracks: list[TrackOut] = []


class PhraseOut(BaseModel):
    participant: str
    start: float
    end: float
    text: str


class RunOut(BaseModel):
    id: uuid.UUID
    started: bool
    queued_tasks: int = 0
    """With workers: the tasks sent (one per unfinished track, or the timeline build)."""


class UtteranceIn(_Strict):
    id: str = Field(min_length=1, max_length=200)
    speaker: str = Field(min_length=1, max_length=200)
    text: str = Field(min_length=1, max_length=20_000)
    session: str = Field(default="", max_length=200)
    conversation: str = Field(default="", max_length=200)
    t: Timestamp | None = None


class EvidenceIn(_Strict):
    utterances: list[UtteranceIn] = Field(min_length=1, max_length=10_000)


class StoredOut(BaseModel):
    stored: int


class RecallIn(_Strict):
    query: str = Field(min_length=1, max_length=2000)
    k: Annotated[int, BeforeValidator(_not_bool)] = Field(default=10, ge=1, le=100)


class RecalledOut(BaseModel):
    id: str
    kind: Literal["evidence", "page"]
    score: float
    speaker: str
    text: str


SLUG = r"^[a-z0-9][a-z0-9-]{0,99}$"


class PageIn(_Strict):
    summary: str = Field(default="", max_length=240)
    aliases: list[str] = Field(default=[], max_length=50)
    edges: list[Annotated[str, Field(pattern=SLUG)]] = Field(default=[], max_length=100)
    body: str = Field(default="", max_length=100_000)


class PageOut(BaseModel):
    slug: str
    summary: str
    aliases: list[str]
    edges: list[str]
    body: str


class UserOut(BaseModel):
    id: uuid.UUID
    name: str


class ErrorOut(BaseModel):
    detail: str


class InvalidOut(BaseModel):
    """Request validation lists its errors; heard's own input errors are one sentence."""

    detail: str | list[dict[str, Any]]


PAGE_HEADERS = {
    # the pages hold a bearer token: only heard's own scripts run (the audio worklet is a blob),
    # they talk only to this server, and no other site may frame them
    "Content-Security-Policy": "default-src 'self'; script-src 'self' blob:; "
    "connect-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; "
    "form-action 'none'; frame-ancestors 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}

# -- the app ------------------------------------------------------------------------------

_bearer = HTTPBearer(auto_error=False)


def _principal(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Principal:
    settings: ServerSettings = request.app.state.settings
    user = authenticate(settings.db, credentials.credentials) if credentials else None
    if user is None:
        raise HTTPException(
            401, "a valid bearer token is required", headers={"WWW-Authenticate": "Bearer"}
        )
    return user


User = Annotated[Principal, Depends(_principal)]


def create_app(settings: ServerSettings) -> FastAPI:
    db = settings.db
    db.migrate()
    for leftover in settings.uploads.glob("*/*/.*.part"):  # uploads cut short by a crash
        leftover.unlink(missing_ok=True)
    memories = Memories(db, settings.workspace, settings.memory)
    app = FastAPI(
        title="heard",
        summary="Meetings, live captions and memory for conversation audio.",
        version="0.1.0",
        responses={401: {"model": ErrorOut}},
    )
    app.state.settings = settings
    app.state.memories = memories

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        headers = dict(exc.headers or {})
        if exc.status_code == 405:
            # one route per method: list every method the path has, not the first route's
            methods: set[str] = set()
            for route in app.router.routes:
                if isinstance(route, APIRoute) and route.matches(request.scope)[0] != Match.NONE:
                    methods |= route.methods or set()
            headers["Allow"] = ", ".join(sorted(methods))
        return JSONResponse({"detail": exc.detail}, status_code=exc.status_code, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse({"detail": invalid_detail(exc.errors())}, status_code=422)

    @app.exception_handler(HeardError)
    async def _heard_error(_: Request, exc: HeardError) -> JSONResponse:
        status = status_of(exc)
        if status == 500:
            log.error("unexpected %s", type(exc).__name__, exc_info=exc)
            return JSONResponse({"detail": "internal error"}, status_code=500)
        return JSONResponse({"detail": str(exc)}, status_code=status)

    NOT_FOUND: dict[int | str, dict[str, Any]] = {404: {"model": ErrorOut}}
    BAD: dict[int | str, dict[str, Any]] = {
        400: {"model": ErrorOut, "description": "The body is not JSON."},
        422: {"model": InvalidOut},
    }

    static = Path(__file__).parent / "static"
    app.mount("/static", StaticFiles(directory=static), name="static")

    @app.get("/", include_in_schema=False)
    def index() -> FileResponse:
        return FileResponse(static / "index.html", headers=PAGE_HEADERS)

    @app.get("/meetings", include_in_schema=False)
    def meetings_page() -> FileResponse:
        return FileResponse(static / "meetings.html", headers=PAGE_HEADERS)

    @app.get("/healthz", include_in_schema=False)
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/v1/me", response_model=UserOut)
    def me(user: User) -> UserOut:
        return UserOut(id=user.id, name=user.name)

    def meeting_out(meeting_id: uuid.UUID, owner: str) -> MeetingOut:
        m = get_meeting(db, meeting_id, owner)
        tracks = [
            TrackOut(
                participant=t.participant,
                status=str(t.status),
                attempts=t.attempts,
                offset_s=t.offset_s,
                last_error=t.last_error,
            )
            for t in track_states(db, m.id, owner)
        ]
        return _meeting_out(m, tracks)

    @app.post("/v1/meetings", status_code=201, response_model=MeetingOut, responses=BAD)
    def create(body: MeetingIn, user: User) -> MeetingOut:
        """Create a meeting whose participants' tracks are still to be uploaded."""
        specs = [
            TrackSpec(p.name, "", p.offset_s, None, TrackStatus.RECORDING)
            for p in body.participants
        ]
        meeting_id = create_meeting(
            db, title=body.title, tracks=specs, started_at=body.started_at, owner=user.owner
        )
        return meeting_out(meeting_id, user.owner)

    @app.get("/v1/meetings", response_model=list[MeetingOut])
    def meetings(user: User) -> list[MeetingOut]:
        return [_meeting_out(m) for m in list_meetings(db, user.owner)]

    @app.get("/v1/meetings/{meeting_id}", response_model=MeetingOut, responses=NOT_FOUND)
    def meeting(meeting_id: uuid.UUID, user: User) -> MeetingOut:
        return meeting_out(meeting_id, user.owner)

    @app.put(
        "/v1/meetings/{meeting_id}/tracks/{participant}",
        response_model=MeetingOut,
        responses={**NOT_FOUND, **BAD, 409: {"model": ErrorOut}, 413: {"model": ErrorOut}},
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {
                    "application/octet-stream": {"schema": {"type": "string", "format": "binary"}}
                },
            }
        },
    )
    async def upload(
        meeting_id: uuid.UUID, participant: str, request: Request, user: User
    ) -> MeetingOut:
        """Upload one participant's audio (any format ffmpeg decodes), as the raw body."""
        track_id = await asyncio.to_thread(track_of, db, meeting_id, participant, user.owner)
        folder = settings.uploads / user.owner / str(meeting_id)
        folder.mkdir(parents=True, exist_ok=True)
        # every upload writes files of its own: racing uploads of one track never mix, and
        # the track points at exactly one complete upload that decoded (the last to finish)
        upload_id = uuid.uuid4().hex
        path = folder / f"{track_id}.{upload_id}.audio"
        partial = folder / f".{track_id}.{upload_id}.part"
        size = 0
        with partial.open("wb") as f:
            async for chunk in request.stream():
                size += len(chunk)
                if size > MAX_UPLOAD_BYTES:
                    f.close()
                    partial.unlink(missing_ok=True)
                    raise HTTPException(413, f"audio larger than {MAX_UPLOAD_BYTES} bytes")
                f.write(chunk)
        if size == 0:
            partial.unlink(missing_ok=True)
            raise HTTPException(422, "the request body (the audio) is empty")
        try:
            await asyncio.to_thread(probe_audio, partial)
        except InputError as e:
            partial.unlink(missing_ok=True)
            reason = str(e).replace(str(partial), "the upload")  # no server folders in replies
            raise HTTPException(422, f"{participant}: not decodable audio ({reason})") from e
        partial.replace(path)
        try:
            before = await asyncio.to_thread(upload_track, db, track_id, str(path))
        except ConflictError:
            path.unlink(missing_ok=True)
            raise
        if before and before != str(path) and Path(before).parent == folder:
            Path(before).unlink(missing_ok=True)  # the upload this one replaced
        return meeting_out(meeting_id, user.owner)

    @app.post(
        "/v1/meetings/{meeting_id}/run",
        status_code=202,
        response_model=RunOut,
        responses={**NOT_FOUND, 503: {"model": ErrorOut, "description": "No broker."}},
    )
    def run(meeting_id: uuid.UUID, user: User, background: BackgroundTasks) -> RunOut:
        """Transcribe the uploaded tracks and build the timeline: in the background, or on
        Celery workers when the server runs with --queue."""
        get_meeting(db, meeting_id, user.owner)
        if settings.queue:
            from heard.pipeline.celery_app import check_broker, enqueue_meeting

            check_broker()
            sent = enqueue_meeting(db, meeting_id)
            return RunOut(id=meeting_id, started=True, queued_tasks=sent)
        if settings.transcriber is not None:
            background.add_task(run_pipeline, meeting_id, db=db, transcriber=settings.transcriber)
        return RunOut(id=meeting_id, started=settings.transcriber is not None)

    @app.get(
        "/v1/meetings/{meeting_id}/phrases", response_model=list[PhraseOut], responses=NOT_FOUND
    )
    def phrases(meeting_id: uuid.UUID, user: User) -> list[PhraseOut]:
        return [
            PhraseOut(participant=p.participant, start=p.start_s, end=p.end_s, text=p.text)
            for p in meeting_phrases(db, meeting_id, user.owner)
        ]

    @app.get(
        "/v1/meetings/{meeting_id}/export",
        response_class=Response,
        responses={
            **NOT_FOUND,
            200: {
                "description": "The transcript in the asked format.",
                "content": {t: {"schema": {"type": "string"}} for t in MEDIA_TYPES.values()},
            },
        },
    )
    def export(
        meeting_id: uuid.UUID,
        user: User,
        format: Annotated[Literal["json", "srt", "vtt", "md", "txt"], Query()] = "txt",
    ) -> Response:
        doc = transcript_document(db, meeting_id, user.owner)
        return Response(render(doc, format), media_type=MEDIA_TYPES[format])

    @app.post(
        "/v1/memory/evidence",
        status_code=201,
        response_model=StoredOut,
        responses={**BAD, 409: {"model": ErrorOut, "description": "An id is taken."}},
    )
    def ingest(body: EvidenceIn, user: User) -> StoredOut:
        """Store final utterances as evidence: all of them, or none."""
        items = [
            StoredUtterance(u.id, u.speaker, u.text, u.conversation or u.session, u.session, u.t)
            for u in body.utterances
        ]
        return StoredOut(stored=memories.store(user.owner, items))

    @app.post("/v1/memory/recall", response_model=list[RecalledOut], responses=BAD)
    def recall(body: RecallIn, user: User) -> list[RecalledOut]:
        """Pages (through the retrieval loop) then evidence, best first."""
        if not tokenize(body.query):
            return []
        memory = memories.current(user.owner)
        with memory.lock:
            recaller = memory.recall
            items = recaller.recall(body.query, k=body.k).items(recaller.workspace)
        return [
            RecalledOut(
                id=h.id,
                kind="page" if h.kind == "page" else "evidence",
                score=h.score,
                speaker=h.speaker,
                text=h.text,
            )
            for h in items
        ]

    def pages_dir(user: Principal) -> Path:
        return settings.workspace(user.owner) / "pages"

    def user_pages(user: Principal) -> dict[str, Page]:
        workspace = memories.current(user.owner).recall.workspace
        return workspace.pages.by_slug if workspace is not None else {}

    def read_page(user: Principal, slug: str) -> PageOut:
        page = user_pages(user).get(slug)
        if page is None:
            raise NotFoundError(f"no page {slug!r}")
        return _page_out(page)

    @app.get("/v1/memory/pages", response_model=list[PageOut])
    def pages(user: User) -> list[PageOut]:
        return [_page_out(p) for p in user_pages(user).values()]

    @app.get("/v1/memory/pages/{slug}", response_model=PageOut, responses=NOT_FOUND)
    def page(slug: Annotated[str, FastAPIPath(pattern=SLUG)], user: User) -> PageOut:
        return read_page(user, slug)

    @app.put("/v1/memory/pages/{slug}", response_model=PageOut, responses=BAD)
    def put_page(
        slug: Annotated[str, FastAPIPath(pattern=SLUG)], body: PageIn, user: User
    ) -> PageOut:
        """Create or replace a page (YAML frontmatter + markdown body, as `heard memory` reads)."""
        page = write_page(pages_dir(user), slug, summary=body.summary, aliases=body.aliases,
                          edges=body.edges, body=body.body)  # fmt: skip
        memories.pages_changed(user.owner)
        return _page_out(page)

    @app.delete("/v1/memory/pages/{slug}", status_code=204, responses=NOT_FOUND)
    def delete_page(slug: Annotated[str, FastAPIPath(pattern=SLUG)], user: User) -> None:
        path = pages_dir(user) / f"{slug}.md"
        if not path.is_file():
            raise NotFoundError(f"no page {slug!r}")
        path.unlink()
        memories.pages_changed(user.owner)

    from heard.server.live import mount_live

    mount_live(app, settings, memories)
    return app


def _meeting_out(m: MeetingSummary, tracks: list[TrackOut] | None = None) -> MeetingOut:
    return MeetingOut(
        id=m.id,
        title=m.title,
        started_at=m.started_at,
        status=str(m.status),
        participants=list(m.participants),
        phrases=m.phrases,
        tracks=tracks or [],
    )


def _page_out(page: Page) -> PageOut:
    return PageOut(
        slug=page.slug,
        summary=page.summary,
        aliases=list(page.aliases),
        edges=list(page.edges),
        body=page.body,
    )
