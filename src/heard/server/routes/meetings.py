"""Meetings: create one, upload each participant's track, run the pipeline (its progress as
server-sent events), read the result, play its audio back, rename a participant, search
what was said across meetings, delete one."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import re
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Annotated, BinaryIO, Literal
from urllib.parse import quote

from fastapi import APIRouter, HTTPException, Query, Request, Response
from fastapi import Path as FastAPIPath
from fastapi.responses import FileResponse, StreamingResponse

from heard.asr.audio import check_duration, measure_audio
from heard.errors import InputError, NotFoundError
from heard.memory.language import analyze
from heard.pipeline import jobs
from heard.server import tickets
from heard.server.bodies import StrictJSONRoute
from heard.server.deps import Caller, Settings, UserMemories
from heard.server.errors import BAD, NOT_FOUND
from heard.server.quotas import StorageLedger
from heard.server.schemas import (
    ErrorOut,
    FoundOut,
    MeetingIn,
    MeetingOut,
    PhraseOut,
    PlaybackOut,
    ProgressOut,
    RenameIn,
    RunOut,
    Text,
    TrackOut,
    TrackProgressOut,
)
from heard.server.state import Runs, ServerSettings
from heard.store.database import Database
from heard.store.meetings import (
    MeetingSummary,
    TrackSpec,
    delete_meeting,
    forget_meeting,
    get_meeting,
    list_meetings,
    meeting_phrases,
    phrase_of_evidence,
    playback,
    remember_meeting,
    remember_missing,
    rename_participant,
    track_states,
)
from heard.store.models import MeetingStatus, TrackStatus
from heard.store.tracks import track_of, upload_track
from heard.timeline.formats import TimedPhrase, render
from heard.transcript.tokenize import tokenize

__all__ = ["MAX_UPLOAD_BYTES", "MEDIA_TYPES", "router", "search_router", "stored_bytes"]

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
    for path in settings.folder(owner).rglob("*.audio"):
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
    if not tokenize(q):
        return []
    remember_missing(settings.db, user.owner)
    memory = memories.current(user.owner)
    with memory.lock:
        hits = memory.index.recall(q, k=4 * k)  # some may be of conversations, not meetings
    if memory.index.embedder is None:  # lexical: a phrase that says none of it only came
        # along with its neighbours (context for an assistant, not a match for a search)
        asked = set(analyze(q, ""))
        hits = [h for h in hits if asked & set(analyze(f"{h.speaker} {h.text}", ""))]
    found: list[FoundOut] = []
    said: dict[uuid.UUID, tuple[MeetingSummary, list[TimedPhrase]] | None] = {}
    for hit in hits:
        where = phrase_of_evidence(hit.id)
        if where is None:
            continue
        meeting_id, position = where
        if meeting_id not in said:
            try:
                said[meeting_id] = (
                    get_meeting(settings.db, meeting_id, user.owner),
                    meeting_phrases(settings.db, meeting_id, user.owner),
                )
            except NotFoundError:  # deleted since
                said[meeting_id] = None
        if (stored := said[meeting_id]) is None:
            continue
        m, phrases = stored
        if position >= len(phrases) or phrases[position].text != hit.text:
            continue  # rebuilt since: the memory catches up at its next recall
        p = phrases[position]
        found.append(FoundOut(meeting_id=m.id, title=m.title, started_at=m.started_at,
                              position=position, participant=p.participant, start=p.start_s,
                              end=p.end_s, text=p.text, score=hit.score))  # fmt: skip
        if len(found) == k:
            break
    return found


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
    folder = settings.folder(owner) / str(meeting_id)
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
    except BaseException:  # being transcribed, the meeting deleted meanwhile, the store down
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


@router.delete(
    "/{meeting_id}",
    status_code=204,
    responses={**NOT_FOUND, 409: {"model": ErrorOut, "description": "It is being transcribed."}},
)
def delete(meeting_id: uuid.UUID, user: Caller, settings: Settings, request: Request) -> None:
    """Delete the meeting: its tracks, phrases, the audio uploaded for it, and what memory
    kept of it."""
    locations = delete_meeting(settings.db, meeting_id, user.owner)
    forget_meeting(settings.db, meeting_id, user.owner)
    folder = settings.folder(user.owner) / str(meeting_id)
    ledger: StorageLedger = request.app.state.storage
    for location in locations:
        path = Path(location)
        if path.parent == folder:  # only what the server keeps; a command line's files stay
            with contextlib.suppress(OSError):
                ledger.release(user.owner, path.stat().st_size)
                path.unlink()
    with contextlib.suppress(OSError):
        folder.rmdir()


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
    rename_participant(settings.db, meeting_id, participant, body.name, user.owner)
    if get_meeting(settings.db, meeting_id, user.owner).phrases:
        remember_meeting(settings.db, meeting_id)
    return _meeting_out(settings.db, meeting_id, user.owner)


@router.get("/{meeting_id}/playback", response_model=list[PlaybackOut], responses=NOT_FOUND)
def playback_links(
    meeting_id: uuid.UUID, user: Caller, settings: Settings, request: Request
) -> list[PlaybackOut]:
    """Each track's audio, as links an audio element can follow, and whose phrases it holds."""
    token = request.headers.get("authorization", "").partition(" ")[2].strip()
    out = []
    for track in playback(settings.db, meeting_id, user.owner):
        path = f"/v1/meetings/{meeting_id}/tracks/{track.participant}/audio"
        url = quote(path)
        if token:  # the local user of --local needs no ticket
            url += "?" + tickets.sign(settings.link_secret, token, user, path)
        out.append(PlaybackOut(participant=track.participant, offset_s=track.offset_s,
                               voices=list(track.voices), url=url))  # fmt: skip
    return out


AUDIO_TYPES = (
    (b"RIFF", "audio/wav"),
    (b"fLaC", "audio/flac"),
    (b"OggS", "audio/ogg"),
    (b"ID3", "audio/mpeg"),
    (b"\xff\xfb", "audio/mpeg"),
    (b"\xff\xf3", "audio/mpeg"),
    (b"\x1aE\xdf\xa3", "audio/webm"),
)


def audio_type(path: Path) -> str:
    """The media type of the audio at ``path``, read from its first bytes."""
    with path.open("rb") as f:
        head = f.read(12)
    if head[4:8] == b"ftyp":
        return "audio/mp4"
    for magic, media_type in AUDIO_TYPES:
        if head.startswith(magic):
            return media_type
    return "application/octet-stream"


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
    asks for when it seeks). The bearer token, or a link from ``playback``."""
    for track in playback(settings.db, meeting_id, user.owner):
        if track.participant == participant:
            path = Path(track.location)
            if not path.is_file():
                raise NotFoundError(f"the audio of {participant!r} is no longer kept")
            return FileResponse(path, media_type=audio_type(path),
                                headers={"Cache-Control": "private, max-age=3600"})  # fmt: skip
    raise NotFoundError(f"meeting {meeting_id} has no track of {participant!r}")


def progress_of(
    settings: ServerSettings, runs: Runs, meeting_id: uuid.UUID, owner: str
) -> ProgressOut:
    """How far the meeting's transcription has come: each track's fraction (this process's
    runs report within a track; tracks on workers count when they are done), the whole,
    and whether it is finished."""
    stands = jobs.view(settings.db, meeting_id, owner)
    tracks = []
    for t in stands.tracks:
        if t.status in (TrackStatus.DONE, TrackStatus.FAILED):
            fraction = 1.0
        elif t.status is TrackStatus.TRANSCRIBING:
            fraction = runs.progress.fraction(t.id) or 0.0
        else:
            fraction = 0.0
        tracks.append(TrackProgressOut(participant=t.participant, status=jobs.track_label(t),
                                       fraction=round(fraction, 3),
                                       error=_without_paths(t.last_error, t.location)))  # fmt: skip
    finished = stands.meeting.status is not MeetingStatus.PENDING
    whole = sum(t.fraction for t in tracks) / max(1, len(tracks))
    return ProgressOut(
        status=stands.status,
        fraction=1.0 if finished else round(min(whole, 0.99), 3),
        finished=finished,
        phrases=stands.meeting.phrases,
        tracks=tracks,
    )


PROGRESS_EVERY_S = 0.5
KEEPALIVE_S = 15.0


@router.get(
    "/{meeting_id}/events",
    response_class=StreamingResponse,
    responses={
        **NOT_FOUND,
        200: {
            "description": "Server-sent events: ``progress`` (JSON: status, fraction 0-1, "
            "finished, phrases, tracks) whenever it changes, until the meeting is finished.",
            "content": {"text/event-stream": {"schema": {"type": "string"}}},
        },
    },
)
async def events(
    meeting_id: uuid.UUID, user: Caller, settings: Settings, request: Request
) -> StreamingResponse:
    """The meeting's progress as it is transcribed, as server-sent events."""
    runs: Runs = request.app.state.runs
    first = await asyncio.to_thread(progress_of, settings, runs, meeting_id, user.owner)

    async def stream() -> AsyncIterator[str]:
        state, last, quiet = first, None, 0.0
        while True:
            if state != last:
                yield f"event: progress\ndata: {state.model_dump_json()}\n\n"
                last, quiet = state, 0.0
            elif quiet >= KEEPALIVE_S:
                yield ": still here\n\n"
                quiet = 0.0
            if state.finished or settings.stopping.is_set() or await request.is_disconnected():
                return
            await asyncio.sleep(PROGRESS_EVERY_S)
            quiet += PROGRESS_EVERY_S
            try:
                state = await asyncio.to_thread(progress_of, settings, runs, meeting_id, user.owner)
            except NotFoundError:  # deleted meanwhile
                yield 'event: gone\ndata: {"detail": "the meeting was deleted"}\n\n'
                return

    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    return StreamingResponse(stream(), media_type="text/event-stream", headers=headers)
