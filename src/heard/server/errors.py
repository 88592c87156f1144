"""How the server answers errors: the HTTP status of each of heard's errors (one table, read
by one handler), the 422 body, and the handlers every request goes through.

Every error is ``{"detail": ...}``, except on the OpenAI-compatible routes (``/v1/audio/``,
``/v1/models``),
whose clients (the OpenAI SDKs) read OpenAI's shape: ``{"error": {"message", "type",
"param", "code"}}``, and a request that does not validate is a 400 there, as OpenAI answers it.
"""

from __future__ import annotations

import logging
import math
import re
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from heard.errors import (
    BusyError,
    ConflictError,
    HeardError,
    InputError,
    MissingDependencyError,
    NoRoomError,
    NotFoundError,
    ServiceError,
    SlowBodyError,
    StoreError,
    TooLargeError,
    UnknownNameError,
)
from heard.server.schemas import ErrorOut, InvalidOut

__all__ = [
    "BAD",
    "DEEPGRAM_PATH",
    "EXCERPT_CHARS",
    "NOT_FOUND",
    "OPENAI_PREFIX",
    "STATUS_OF",
    "STORE_TROUBLE",
    "deepgram_error",
    "error_reply",
    "install_error_handlers",
    "invalid_detail",
    "status_of",
    "without_paths",
]

log = logging.getLogger("heard.server")

STATUS_OF: dict[type[HeardError], int] = {
    NotFoundError: 404,
    ConflictError: 409,
    TooLargeError: 413,
    SlowBodyError: 408,
    BusyError: 429,
    InputError: 422,
    UnknownNameError: 422,
    ServiceError: 503,
    NoRoomError: 507,
    MissingDependencyError: 503,
}
"""Each error class and its status; a subclass takes its nearest ancestor's row."""


def status_of(error: HeardError) -> int:
    """The status of ``error``'s nearest class in the table; 500 for one not in it (a bug)."""
    for cls in type(error).__mro__:
        if cls in STATUS_OF:
            return STATUS_OF[cls]
    return 500


STORE_TROUBLE = "the server's database cannot be reached or written just now; try again later"

EXCERPT_CHARS = 80
"""A reply quotes at most this much of what it refuses: never the whole (maybe huge) input."""


def excerpt(value: object) -> str:
    """A short, always-encodable quote of an input value."""
    text = value if isinstance(value, str) else repr(value)
    if len(text) > EXCERPT_CHARS:
        text = f"{text[:EXCERPT_CHARS]}... ({len(text)} characters)"
    return text.encode("utf-8", "backslashreplace").decode("utf-8")  # lone surrogates too


def invalid_detail(errors: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A request validation's errors as the 422 lists them: where, what and a short excerpt."""
    return [
        {
            "loc": [part if isinstance(part, int) else excerpt(part) for part in e["loc"]],
            "msg": excerpt(e["msg"]) if len(str(e["msg"])) > 2 * EXCERPT_CHARS else e["msg"],
            "type": e["type"],
            "input": excerpt(e.get("input")),
        }
        for e in errors
    ]


OPENAI_PREFIX = ("/v1/audio/", "/v1/models", "/v1/realtime")
"""The routes that speak OpenAI's protocol, errors included."""
_OPENAI_TYPES = {401: "invalid_request_error", 429: "rate_limit_exceeded"}
_OPENAI_CODES = {401: "invalid_api_key", 413: "file_too_large", 429: "rate_limit_exceeded"}


DEEPGRAM_PATH = "/v1/listen"
"""Deepgram's pre-recorded route: its errors in Deepgram's shape."""
_DEEPGRAM_CODES = {400: "Bad Request", 401: "INVALID_AUTH", 413: "PAYLOAD_TOO_LARGE",
                   429: "TOO_MANY_REQUESTS"}  # fmt: skip


def deepgram_error(status: int, message: str) -> dict[str, str]:
    """Deepgram's error body: ``{"err_code", "err_msg", "request_id"}``."""
    code = _DEEPGRAM_CODES.get(status, "ERROR")
    return {"err_code": code, "err_msg": message, "request_id": str(uuid.uuid4())}


def error_reply(path: str, status: int, detail: Any) -> tuple[int, dict[str, Any]]:
    """The status and body of an error on ``path``: heard's shape, or OpenAI's on its routes
    (``detail`` may then be a dict with ``message``, ``param`` and ``code``; a validation's
    list of errors becomes one message, naming the first field)."""
    if path == DEEPGRAM_PATH:
        return status, deepgram_error(status, str(detail))
    if not path.startswith(OPENAI_PREFIX):
        return status, {"detail": detail}
    param = code = None
    if isinstance(detail, dict):
        message, param, code = detail["message"], detail.get("param"), detail.get("code")
    elif isinstance(detail, list):  # a validation: 400, as OpenAI answers a bad request
        status = 400
        fields = [str(e["loc"][min(1, len(e["loc"]) - 1)]) for e in detail if e.get("loc")]
        message = "; ".join(f"{'.'.join(map(str, e['loc'][1:]))}: {e['msg']}" for e in detail)
        param = fields[0] if fields else None
    else:
        message = str(detail)
    kind = _OPENAI_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    error = {"message": message, "type": kind, "param": param,
             "code": code or _OPENAI_CODES.get(status)}  # fmt: skip
    return status, {"error": error}


def _reply(
    request: Request, status: int, detail: Any, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    status, body = error_reply(request.url.path, status, detail)
    return JSONResponse(body, status_code=status, headers=dict(headers or {}) or None)


NOT_FOUND: dict[int | str, dict[str, Any]] = {404: {"model": ErrorOut}}
BAD: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorOut, "description": "The body is not JSON."},
    413: {"model": ErrorOut, "description": "The body is over its size limit (1 MiB of JSON)."},
    422: {"model": InvalidOut},
}
"""The error replies a route documents in the OpenAPI schema."""


def install_error_handlers(app: FastAPI) -> None:
    """Every error a request meets, answered in one shape (``{"detail": ...}``)."""

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
        return _reply(request, exc.status_code, exc.detail, headers)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        return _reply(request, 422, invalid_detail(exc.errors()))

    @app.exception_handler(Exception)
    async def _bug(request: Request, exc: Exception) -> JSONResponse:
        # (logged with its traceback by the server as well): the client gets one line, in the
        # route's shape
        log.error("unexpected %s on %s", type(exc).__name__, request.url.path)
        return _reply(request, 500, "internal error")

    @app.exception_handler(HeardError)
    async def _heard_error(request: Request, exc: HeardError) -> JSONResponse:
        status = status_of(exc)
        if status == 500:
            log.error("unexpected %s", type(exc).__name__, exc_info=exc)
            return _reply(request, 500, "internal error")
        if isinstance(exc, BusyError):
            headers = {"Retry-After": str(max(1, math.ceil(exc.retry_after_s)))}
            return _reply(request, status, str(exc), headers)
        if isinstance(exc, StoreError):
            # the operator's log names the database and what it said; a client learns neither
            log.error("store: %s", exc)
            return _reply(request, status, STORE_TROUBLE)
        return _reply(request, status, str(exc))


_PATH = re.compile(r"(?<![^\s(\['\"])/(?:[^/:,()'\"]+/)+[^:,()'\"]*")
"""An absolute path of the server's, as an error message may quote it."""


def without_paths(error: str | None, location: str) -> str | None:
    """A track's error as a client may read it: no path of the server's is said."""
    if error is None:
        return error
    if location:
        error = error.replace(location, "the upload")
    return _PATH.sub("<server path>", error)
