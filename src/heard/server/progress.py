"""A meeting's progress as server-sent events (``GET /v1/meetings/{id}/events``): a
``progress`` event whenever it changes, until the meeting is finished; a ``caption`` event
(``participant``, ``text``, ``start``, ``end`` in seconds of the call) for each final a
live call's participant says (``heard.server.protocols.twilio``); ``gone`` once the
meeting is deleted or the token revoked; ``idle`` once nothing has moved a meeting that
nothing transcribes for ``STILL_S``.

Each stream reads the meeting every ``PROGRESS_EVERY_S`` on its user's share of the server's
threads (``ServerState.work``), and a user follows at most ``USER_STREAMS`` meetings at once:
one user's hundreds of streams cannot take the others' threads or CPU.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator

from fastapi import Request

from heard.errors import BusyError, NotFoundError
from heard.meetings.runner import MeetingProgress
from heard.server.errors import without_paths
from heard.server.guard import bearer_token
from heard.server.schemas import ProgressOut, TrackProgressOut
from heard.server.state import ServerState

__all__ = ["USER_STREAMS", "progress_events", "progress_out"]

PROGRESS_EVERY_S = 0.5
KEEPALIVE_S = 15.0
TOKEN_CHECK_S = 2.0
"""How often a stream checks that the token it was opened with still holds: a revoked one
ends it within this."""
STILL_S = 600.0
"""A stream of a meeting that nothing transcribes and that has not moved for this long ends
(``idle``): a meeting never run would hold it open for good."""
USER_STREAMS = 32
"""The event streams one user may hold open at once (a page follows each meeting being
transcribed on one): more are a 429."""


def progress_out(p: MeetingProgress) -> ProgressOut:
    tracks = [TrackProgressOut(participant=t.participant, status=t.status, fraction=t.fraction,
                               error=without_paths(t.error, t.location))
              for t in p.tracks]  # fmt: skip
    return ProgressOut(status=p.status, fraction=p.fraction, finished=p.finished,
                       phrases=p.phrases, tracks=tracks)  # fmt: skip


async def progress_events(
    state: ServerState, meeting_id: uuid.UUID, owner: str, request: Request
) -> AsyncIterator[str]:
    """The stream of ``owner``'s meeting, counted among the user's streams until it ends
    (``NotFoundError``: no such meeting; ``BusyError``: too many open)."""
    open_now = state.event_streams
    if open_now.get(owner, 0) >= USER_STREAMS:
        raise BusyError(f"this user follows {USER_STREAMS} meetings already; close one first",
                        retry_after_s=KEEPALIVE_S)  # fmt: skip
    open_now[owner] = open_now.get(owner, 0) + 1  # taken at once: streams opened together count
    try:
        first = await state.work.run(owner, state.runs.progress_of, meeting_id, owner)
    except BaseException:
        _give_back(open_now, owner)
        raise
    events = _stream(state, meeting_id, owner, request, first)  # it gives the place back
    head = await anext(events)  # (started, its end is sure: closed, or collected unfinished)
    return _chained(head, events)


def _give_back(open_now: dict[str, int], owner: str) -> None:
    open_now[owner] -= 1
    if not open_now[owner]:
        del open_now[owner]


async def _chained(head: str, rest: AsyncIterator[str]) -> AsyncIterator[str]:
    yield head
    async for event in rest:
        yield event


async def _stream(
    state: ServerState,
    meeting_id: uuid.UUID,
    owner: str,
    request: Request,
    progress: MeetingProgress,
) -> AsyncIterator[str]:
    runs, stopping, work, tokens = state.runs, state.settings.stopping, state.work, state.tokens
    token = bearer_token(request.headers)
    try:
        last, quiet, still, checked, said = None, 0.0, 0.0, 0.0, 0
        while True:
            if progress != last:
                yield f"event: progress\ndata: {progress_out(progress).model_dump_json()}\n\n"
                last, quiet, still = progress, 0.0, 0.0
            captions, said = state.captions.since(meeting_id, said)
            for caption in captions:  # a live call's, as its participants speak
                yield f"event: caption\ndata: {json.dumps(caption)}\n\n"
                quiet, still = 0.0, 0.0
            if quiet >= KEEPALIVE_S and not captions:
                yield ": still here\n\n"
                quiet = 0.0
            if progress.finished or stopping.is_set() or await request.is_disconnected():
                return
            if still >= STILL_S and not any(t.status == "transcribing" for t in progress.tracks):
                yield 'event: idle\ndata: {"detail": "nothing has moved it for ten minutes"}\n\n'
                return
            await asyncio.sleep(PROGRESS_EVERY_S)
            quiet, still, checked = (x + PROGRESS_EVERY_S for x in (quiet, still, checked))
            if token and checked >= TOKEN_CHECK_S:
                checked = 0.0
                if await tokens.principal(token) is None:
                    yield 'event: gone\ndata: {"detail": "the token was revoked"}\n\n'
                    return
            try:
                progress = await work.run(owner, runs.progress_of, meeting_id, owner)
            except NotFoundError:  # deleted meanwhile
                yield 'event: gone\ndata: {"detail": "the meeting was deleted"}\n\n'
                return
    finally:
        _give_back(state.event_streams, owner)
