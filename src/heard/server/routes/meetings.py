"""Meetings: create one, upload each participant's track, run the pipeline, read the result."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import re
import uuid
from pathlib import Path
from typing import Annotated, BinaryIO, Literal

from fastapi import APIRouter, HTTPException, Query, Request, Response
from fastapi import Path as FastAPIPath

from heard.asr.audio import check_duration, measure_audio
from heard.errors import ConflictError, InputError
from heard.pipeline import jobs
from heard.server.bodies import StrictJSONRoute
from heard.server.deps import Caller, Settings
from heard.server.errors import BAD, NOT_FOUND
from heard.server.quotas import StorageLedger
from heard.server.schemas import (
    ErrorOut,
    MeetingIn,
    MeetingOut,
    PhraseOut,
    RunOut,
    Text,
    TrackOut,
)
from heard.server.state import ServerSettings
from heard.store.database import Database
from heard.store.meetings import (
    MeetingSummary,
    TrackSpec,
    get_meeting,
    list_meetings,
    meeting_phrases,
    track_states,
)
from heard.store.models import MeetingStatus, TrackStatus
from heard.store.tracks import track_of, upload_track
from heard.timeline.formats import render

__all__ = ["MAX_UPLOAD_BYTES", "MEDIA_TYPES", "router", "stored_bytes"]

MAX_UPLOAD_BYTES = 512 * 1024 * 1024
MEDIA_TYPES = {
    "json": "application/json",
    "srt": "application/x-subrip",
    "vtt": "text/vtt",
    "md": "text/markdown",
    "txt": "text/plain",
}

EXPORTED_JSON = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["participant", "start", "end", "text"],
        "properties": {
            "participant": {"type": "string"},
            "start": {"type": "number", "description": "Seconds from the meeting's start."},
            "end": {"type": "number"},
            "text": {"type": "string"},
            "start_at": {"type": "string", "format": "date-time"},
            "end_at": {"type": "string", "format": "date-time"},
            "language": {"type": "string"},
        },
    },
}
"""What ``format=json`` returns: the timeline's phrases (``heard.timeline.formats``)."""

router = APIRouter(prefix="/v1/meetings", route_class=StrictJSONRoute)
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


def open_upload(path: Path) -> BinaryIO:
    """Where an upload's bytes go (a test puts a full disk here)."""
    return path.open("wb")


def _cannot_keep(error: OSError) -> HTTPException:
    """An upload the server had no room (507) or no way (503) to keep: one line for the
    client, without the server's folders; the operator's log says what the system said."""
    log.error("uploads: cannot write (%s)", error)
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        return HTTPException(507, "the server has no room for this upload now; nothing was kept")
    return HTTPException(503, "the server cannot keep uploads now; nothing was kept")


def stored_bytes(settings: ServerSettings, owner: str) -> int:
    """The bytes of the uploads ``owner`` keeps (uploads in flight not counted)."""
    used = 0
    for path in (settings.uploads / owner).rglob("*.audio"):
        with contextlib.suppress(OSError):
            used += path.stat().st_size
    return used


def _over_quota(settings: ServerSettings) -> HTTPException:
    gib = settings.user_storage_bytes / 2**30
    return HTTPException(
        507,
        f"this upload would take your stored audio past your limit of {gib:.3g} GiB "
        "($HEARD_USER_STORAGE_MB on the server); nothing was kept",
    )


_PATH = re.compile(r"(?<![^\s(\['\"])/(?:[^/:,()'\"]+/)+[^:,()'\"]*")
"""An absolute path of the server's, as an error message may quote it."""


def _without_paths(error: str | None, location: str) -> str | None:
    """A track's error as a client may read it: no path of the server's is said."""
    if error is None:
        return error
    if location:
        error = error.replace(location, "the upload")
    return _PATH.sub("<server path>", error)


def _meeting_out(db: Database, meeting_id: uuid.UUID, owner: str) -> MeetingOut:
    stands = jobs.view(db, meeting_id, owner)
    tracks = [
        TrackOut(
            participant=t.participant,
            status=jobs.track_label(t),
            attempts=t.attempts,
            offset_s=t.offset_s,
            last_error=_without_paths(t.last_error, t.location),
            language=t.language,
            language_probability=t.language_probability,
            language_asked=t.language_asked,
            speakers=t.speakers,
            speakers_found=t.speakers_found,
        )
        for t in stands.tracks
    ]
    return _summary_out(stands.meeting, tracks, stands.status)


@router.post("", status_code=201, response_model=MeetingOut, responses=BAD)
def create(body: MeetingIn, user: Caller, settings: Settings) -> MeetingOut:
    """Create a meeting whose participants' tracks are still to be uploaded."""
    here = settings.transcriber is not None and not settings.queue
    if here and any(p.speakers is not None for p in body.participants):
        from heard.diarize.onnx import model_files

        model_files()  # a 503 saying what is missing when this server cannot diarize
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
    meeting_id = jobs.submit(
        settings.db, specs, title=body.title, started_at=body.started_at, owner=user.owner
    )
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


@router.get("/{meeting_id}", response_model=MeetingOut, responses=NOT_FOUND)
def meeting(meeting_id: uuid.UUID, user: Caller, settings: Settings) -> MeetingOut:
    return _meeting_out(settings.db, meeting_id, user.owner)


@router.put(
    "/{meeting_id}/tracks/{participant}",
    response_model=MeetingOut,
    responses={
        **NOT_FOUND,
        **BAD,
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
    meeting_id: uuid.UUID,
    participant: Participant,
    request: Request,
    user: Caller,
    settings: Settings,
) -> MeetingOut:
    """Upload one participant's audio (any format ffmpeg decodes), as the raw body."""
    track_id = await asyncio.to_thread(track_of, settings.db, meeting_id, participant, user.owner)
    ledger: StorageLedger = request.app.state.storage
    room = await asyncio.to_thread(ledger.begin, user.owner)
    try:
        return await _keep(request, settings, user.owner, meeting_id, track_id, participant, room)
    finally:
        ledger.end(user.owner)


async def _keep(
    request: Request,
    settings: ServerSettings,
    owner: str,
    meeting_id: uuid.UUID,
    track_id: uuid.UUID,
    participant: str,
    room: int | None,
) -> MeetingOut:
    """The upload's bytes kept, checked and given to the track, counted in the user's storage
    as they arrive (and given back if they are not kept)."""
    db, ledger = settings.db, request.app.state.storage
    assert isinstance(ledger, StorageLedger)
    folder = settings.uploads / owner / str(meeting_id)
    # every upload writes files of its own: racing uploads of one track never mix, and
    # the track points at exactly one complete upload that decoded (the last to finish)
    upload_id = uuid.uuid4().hex
    path = folder / f"{track_id}.{upload_id}.audio"
    partial = folder / f".{track_id}.{upload_id}.part"
    size = 0
    announced = request.headers.get("content-length", "")
    if room is not None and (room <= 0 or (announced.isdigit() and int(announced) > room)):
        raise _over_quota(settings)  # nothing read
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with open_upload(partial) as f:
            async for chunk in request.stream():
                if size + len(chunk) > MAX_UPLOAD_BYTES:
                    raise HTTPException(413, f"audio larger than {MAX_UPLOAD_BYTES} bytes")
                if not ledger.add(owner, len(chunk)):
                    raise _over_quota(settings)
                size += len(chunk)
                f.write(chunk)
    except OSError as e:
        partial.unlink(missing_ok=True)
        ledger.release(owner, size)
        raise _cannot_keep(e) from None
    except BaseException:
        partial.unlink(missing_ok=True)  # too big, or the client went away mid-upload
        ledger.release(owner, size)
        raise
    try:
        before = await _checked(settings, track_id, participant, partial, path, size)
    except BaseException:
        ledger.release(owner, size)
        raise
    if before and before != str(path) and Path(before).parent == folder:
        with contextlib.suppress(OSError):
            ledger.release(owner, Path(before).stat().st_size)
        Path(before).unlink(missing_ok=True)  # the upload this one replaced
    return _meeting_out(db, meeting_id, owner)


async def _checked(
    settings: ServerSettings,
    track_id: uuid.UUID,
    participant: str,
    partial: Path,
    path: Path,
    size: int,
) -> str | None:
    """The kept upload checked (decodable, within the limit) and given to its track; the
    upload it replaced. Refused, nothing of it stays."""
    if size == 0:
        partial.unlink(missing_ok=True)
        raise HTTPException(422, "the request body (the audio) is empty")
    try:
        info = await asyncio.to_thread(measure_audio, partial, settings.max_track_s)
    except InputError as e:
        partial.unlink(missing_ok=True)
        reason = str(e).replace(str(partial), "the upload")  # no server folders in replies
        raise HTTPException(422, f"{participant}: not decodable audio ({reason})") from e
    try:
        check_duration(info, settings.max_track_s)
    except InputError as e:
        partial.unlink(missing_ok=True)
        raise HTTPException(413, str(e).replace(str(partial), f"{participant}'s upload")) from e
    partial.replace(path)
    try:
        before: str | None = await asyncio.to_thread(upload_track, settings.db, track_id, str(path))
    except ConflictError:
        path.unlink(missing_ok=True)
        raise
    return before


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
def run(meeting_id: uuid.UUID, user: Caller, settings: Settings, request: Request) -> RunOut:
    """Transcribe the uploaded tracks and build the timeline: in the background (on the
    server's own transcription threads, at most four meetings per user waiting or running),
    or on Celery workers when the server runs with --queue."""
    db = settings.db
    get_meeting(db, meeting_id, user.owner)
    if settings.queue:
        sent = jobs.enqueue(db, meeting_id)
        return RunOut(id=meeting_id, started=True, queued_tasks=sent)
    if settings.transcriber is not None:
        request.app.state.runs.start(user.owner, meeting_id)
    return RunOut(id=meeting_id, started=settings.transcriber is not None)


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
