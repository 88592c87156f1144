"""Meetings: create one, upload each participant's track, run the pipeline (its progress as
server-sent events), read the result, play its audio back, rename a participant, search
what was said across meetings, delete one."""

from __future__ import annotations

import logging
import uuid
from pathlib import Path
from typing import Annotated, Literal
from urllib.parse import quote

from fastapi import APIRouter, Query, Request, Response
from fastapi import Path as FastAPIPath
from fastapi.responses import FileResponse, StreamingResponse

from heard.errors import NotFoundError
from heard.meetings import jobs
from heard.meetings.search import Found, search_meetings
from heard.meetings.uploads import audio_type
from heard.server import tickets
from heard.server.bodies import StrictJSONRoute, arriving
from heard.server.deps import Caller, Settings, State, UserMemories
from heard.server.errors import BAD, NOT_FOUND, without_paths
from heard.server.guard import bearer_token
from heard.server.progress import progress_events
from heard.server.schemas import (
    EXPORTED_JSON,
    MEDIA_TYPES,
    ErrorOut,
    FoundOut,
    MeetingIn,
    MeetingOut,
    PhraseOut,
    PlaybackOut,
    RenameIn,
    RunOut,
    Text,
    TrackOut,
)
from heard.store.database import Database
from heard.store.meetings import TrackSpec
from heard.store.models import MeetingStatus, TrackStatus
from heard.store.views import MeetingSummary, list_meetings, meeting_phrases, playback, track_states
from heard.timeline.formats import render
from heard.work import lower_priority

__all__ = ["router", "search_router"]

router = APIRouter(prefix="/v1/meetings", route_class=StrictJSONRoute)
search_router = APIRouter(prefix="/v1", route_class=StrictJSONRoute)
"""``GET /v1/search``: what was said, across the caller's meetings."""
log = logging.getLogger("heard.server")

Participant = Annotated[Text, FastAPIPath(min_length=1, max_length=200)]


def _summary_out(
    m: MeetingSummary, tracks: list[TrackOut] | None = None, status: str | None = None
) -> MeetingOut:
    return MeetingOut(
        id=m.id,
        title=m.title,
        started_at=m.started_at,
        status=status or str(m.status),
        participants=list(m.participants),
        phrases=m.phrases,
        tracks=tracks or [],
    )


def _meeting_out(db: Database, meeting_id: uuid.UUID, owner: str) -> MeetingOut:
    stands = jobs.view(db, meeting_id, owner)
    tracks = [
        TrackOut(
            participant=t.participant,
            status=jobs.track_label(t),
            attempts=t.attempts,
            offset_s=t.offset_s,
            last_error=without_paths(t.last_error, t.location),
            language=t.language,
            language_probability=t.language_probability,
            language_asked=t.language_asked,
            speakers=t.speakers,
            speakers_found=t.speakers_found,
            warnings=list(t.warnings),
        )
        for t in stands.tracks
    ]
    return _summary_out(stands.meeting, tracks, stands.status)


@router.post("", status_code=201, response_model=MeetingOut, responses=BAD)
def create(body: MeetingIn, user: Caller, settings: Settings) -> MeetingOut:
    """Create a meeting whose participants' tracks are still to be uploaded."""
    specs = [
        TrackSpec(
            p.name,
            "",
            p.offset_s,
            None,
            TrackStatus.RECORDING,
            p.language,
            None if p.speakers is None else str(p.speakers),
            tuple(p.names),
        )
        for p in body.participants
    ]
    here = settings.transcriber is not None and not settings.queue
    meeting_id = jobs.submit(settings.db, specs, title=body.title, started_at=body.started_at,
                             owner=user.owner, diarize_here=here)  # fmt: skip
    return _meeting_out(settings.db, meeting_id, user.owner)


@router.get("", response_model=list[MeetingOut])
def meetings(user: Caller, settings: Settings) -> list[MeetingOut]:
    return [
        _summary_out(m, status=_listed_status(settings.db, m, user.owner))
        for m in list_meetings(settings.db, user.owner)
    ]


def _listed_status(db: Database, m: MeetingSummary, owner: str) -> str:
    """A pending meeting's tracks tell whether it is interrupted; a finished one's need not."""
    if m.status is not MeetingStatus.PENDING:
        return str(m.status)
    return jobs.meeting_label(m, track_states(db, m.id, owner))


@search_router.get("/search", response_model=list[FoundOut], responses=BAD)
def search(
    q: Annotated[Text, Query(min_length=1, max_length=2000, description="What was said.")],
    user: Caller,
    settings: Settings,
    memories: UserMemories,
    k: Annotated[int, Query(ge=1, le=100)] = 10,
) -> list[FoundOut]:
    """The phrases of the caller's meetings that say it, best first: memory recall over the
    phrases, which every finished meeting adds to its owner's evidence."""
    lower_priority()  # live decoding first
    found = search_meetings(settings.db, memories, user.owner, q, k)
    return [_found_out(f) for f in found]


def _found_out(f: Found) -> FoundOut:
    m, p = f.meeting, f.phrase
    return FoundOut(meeting_id=m.id, title=m.title, started_at=m.started_at, position=f.position,
                    participant=p.participant, start=p.start_s, end=p.end_s, text=p.text,
                    score=f.score)  # fmt: skip


@router.get("/{meeting_id}", response_model=MeetingOut, responses=NOT_FOUND)
def meeting(meeting_id: uuid.UUID, user: Caller, settings: Settings) -> MeetingOut:
    return _meeting_out(settings.db, meeting_id, user.owner)


@router.put(
    "/{meeting_id}/tracks/{participant}",
    response_model=MeetingOut,
    responses={
        **NOT_FOUND,
        **BAD,
        408: {"model": ErrorOut, "description": "The body stopped arriving."},
        409: {"model": ErrorOut},
        413: {"model": ErrorOut},
        503: {"model": ErrorOut},
        507: {"model": ErrorOut},
    },
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
    meeting_id: uuid.UUID, participant: Participant, request: Request, user: Caller, state: State
) -> MeetingOut:
    """Upload one participant's audio (any format ffmpeg decodes), as the raw body."""
    announced = request.headers.get("content-length", "")
    size = int(announced) if announced.isdigit() else None
    chunks = arriving(request.stream())
    await state.uploads.keep(user.owner, meeting_id, participant, chunks, size)
    return await state.work.run(user.owner, _meeting_out, state.settings.db, meeting_id,
                                user.owner)  # fmt: skip


@router.post(
    "/{meeting_id}/run",
    status_code=202,
    response_model=RunOut,
    responses={
        **NOT_FOUND,
        429: {"model": ErrorOut, "description": "Four of the user's meetings wait or run."},
        503: {"model": ErrorOut, "description": "No broker."},
    },
)
def run(meeting_id: uuid.UUID, user: Caller, state: State) -> RunOut:
    """Transcribe the uploaded tracks and build the timeline: in the background (on the
    server's own transcription threads, at most four meetings per user waiting or running),
    or on Celery workers when the server runs with --queue."""
    started = state.runs.start(user.owner, meeting_id)
    return RunOut(id=meeting_id, started=started.started, queued_tasks=started.queued_tasks)


@router.get("/{meeting_id}/phrases", response_model=list[PhraseOut], responses=NOT_FOUND)
def phrases(meeting_id: uuid.UUID, user: Caller, settings: Settings) -> list[PhraseOut]:
    return [
        PhraseOut(
            participant=p.participant,
            start=p.start_s,
            end=p.end_s,
            text=p.text,
            language=p.language,
        )
        for p in meeting_phrases(settings.db, meeting_id, user.owner)
    ]


@router.get(
    "/{meeting_id}/export",
    response_class=Response,
    responses={
        **NOT_FOUND,
        200: {
            "description": "The transcript in the asked format.",
            "content": {
                **{t: {"schema": {"type": "string"}} for t in MEDIA_TYPES.values()},
                "application/json": {"schema": EXPORTED_JSON},
            },
        },
    },
)
def export(
    meeting_id: uuid.UUID,
    user: Caller,
    settings: Settings,
    format: Annotated[Literal["json", "srt", "vtt", "md", "txt"], Query()] = "txt",
) -> Response:
    doc = jobs.document(settings.db, meeting_id, user.owner)
    return Response(render(doc, format), media_type=MEDIA_TYPES[format])


@router.delete(
    "/{meeting_id}",
    status_code=204,
    responses={**NOT_FOUND, 409: {"model": ErrorOut, "description": "It is being transcribed."}},
)
def delete(meeting_id: uuid.UUID, user: Caller, state: State) -> None:
    """Delete the meeting: its tracks, phrases, the audio uploaded for it, and what memory
    kept of it."""
    locations = jobs.delete(state.settings.db, meeting_id, user.owner)
    state.uploads.discard(user.owner, meeting_id, locations)


@router.put(
    "/{meeting_id}/participants/{participant}",
    response_model=MeetingOut,
    responses={**NOT_FOUND, **BAD, 409: {"model": ErrorOut, "description": "The name is taken."}},
)
def rename(
    meeting_id: uuid.UUID,
    participant: Participant,
    body: RenameIn,
    user: Caller,
    settings: Settings,
) -> MeetingOut:
    """Rename a participant (a diarized "Speaker 2" to who it is): in the phrases, every
    export, the memory's evidence, and every later rebuild."""
    lower_priority()  # live decoding first
    jobs.rename(settings.db, meeting_id, participant, body.name, user.owner)
    return _meeting_out(settings.db, meeting_id, user.owner)


@router.get("/{meeting_id}/playback", response_model=list[PlaybackOut], responses=NOT_FOUND)
def playback_links(
    meeting_id: uuid.UUID, user: Caller, settings: Settings, request: Request
) -> list[PlaybackOut]:
    """Each track's audio, as links an audio element can follow, and whose phrases it holds."""
    token = bearer_token(request.headers)
    out = []
    for track in playback(settings.db, meeting_id, user.owner):
        path = f"/v1/meetings/{meeting_id}/tracks/{track.participant}/audio"
        url = quote(path)
        if token:  # the local user of --local needs no ticket
            url += "?" + tickets.sign(settings.link_secret, token, user, path)
        out.append(PlaybackOut(participant=track.participant, offset_s=track.offset_s,
                               voices=list(track.voices), url=url))  # fmt: skip
    return out


AUDIO_HEADERS = {"Cache-Control": "private, max-age=3600", "X-Content-Type-Options": "nosniff"}
"""A track's audio is cached by its owner's browser only, and never read as anything but the
type it is sent as (an upload may hold any bytes)."""


@router.get(
    "/{meeting_id}/tracks/{participant}/audio",
    response_class=FileResponse,
    responses={
        **NOT_FOUND,
        200: {"description": "The audio as uploaded.", "content": {"audio/*": {}}},
        206: {"description": "The range asked for (a Range header)."},
        416: {"model": ErrorOut, "description": "A range outside the file."},
    },
)
def audio(
    meeting_id: uuid.UUID, participant: Participant, user: Caller, settings: Settings
) -> FileResponse:
    """One track's audio as it was uploaded, with range requests (what an audio element
    asks for when it seeks) and HEAD. The bearer token, or a link from ``playback``."""
    for track in playback(settings.db, meeting_id, user.owner):
        if track.participant == participant:
            path = Path(track.location)
            if not path.is_file():
                raise NotFoundError(f"the audio of {participant!r} is no longer kept")
            return FileResponse(path, media_type=audio_type(path), headers=AUDIO_HEADERS)
    raise NotFoundError(f"meeting {meeting_id} has no track of {participant!r}")


router.add_api_route(  # what a player asks before it fetches (no body: FileResponse knows)
    "/{meeting_id}/tracks/{participant}/audio", audio, methods=["HEAD"], include_in_schema=False
)


@router.get(
    "/{meeting_id}/events",
    response_class=StreamingResponse,
    responses={
        **NOT_FOUND,
        200: {
            "description": "Server-sent events: ``progress`` (JSON: status, fraction 0-1, "
            "finished, phrases, tracks) whenever it changes, until the meeting is finished; "
            "``caption`` (JSON: participant, text, start, end) for each final of a live call "
            "(/v1/twilio) as it is said; ``gone`` when the meeting is deleted or the token "
            "revoked; ``idle`` when nothing has moved it for ten minutes (connect again to "
            "follow it).",
            "content": {"text/event-stream": {"schema": {"type": "string"}}},
        },
        429: {"model": ErrorOut, "description": "The user follows 32 meetings already."},
    },
)
async def events(
    meeting_id: uuid.UUID, user: Caller, state: State, request: Request
) -> StreamingResponse:
    """The meeting's progress as it is transcribed, as server-sent events."""
    events = await progress_events(state, meeting_id, user.owner, request)
    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    return StreamingResponse(events, media_type="text/event-stream", headers=headers)
