"""What a route is given: the caller (from the bearer token) and the server's state, both
read from the running app."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from heard.memory.users import Memories
from heard.server.state import ServerSettings, ServerState, state_of
from heard.store.users import Principal

__all__ = ["Caller", "Settings", "State", "UserMemories"]

_bearer = HTTPBearer(auto_error=False)


def _state(request: Request) -> ServerState:
    return state_of(request.app)


def _settings(request: Request) -> ServerSettings:
    return state_of(request.app).settings


def _memories(request: Request) -> Memories:
    return state_of(request.app).memories


def _caller(
    request: Request,
    _: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],  # in the API's schema
) -> Principal:
    """The user the guard (``heard.server.guard``, the one place a token is checked) found
    before the body was read."""
    user: Principal | None = getattr(request.state, "principal", None)
    if user is None:
        raise HTTPException(
            401, "a valid bearer token is required", headers={"WWW-Authenticate": "Bearer"}
        )
    return user


Caller = Annotated[Principal, Depends(_caller)]
"""The user whose bearer token came with the request (401 without a valid one)."""
Settings = Annotated[ServerSettings, Depends(_settings)]
State = Annotated[ServerState, Depends(_state)]
"""The parts every request shares (``heard.server.state.ServerState``)."""
UserMemories = Annotated[Memories, Depends(_memories)]
"""Each user's memory (``heard.memory.users.Memories``)."""
