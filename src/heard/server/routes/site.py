"""The browser pages, the health check and who the caller is."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse

from heard.server.bodies import StrictJSONRoute
from heard.server.deps import Caller
from heard.server.schemas import UserOut

__all__ = ["PAGE_HEADERS", "STATIC", "router"]

STATIC = Path(__file__).resolve().parents[1] / "static"
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

router = APIRouter(route_class=StrictJSONRoute)


@router.get("/", include_in_schema=False)
def index() -> FileResponse:
    return FileResponse(STATIC / "index.html", headers=PAGE_HEADERS)


@router.get("/meetings", include_in_schema=False)
def meetings_page() -> FileResponse:
    return FileResponse(STATIC / "meetings.html", headers=PAGE_HEADERS)


@router.get("/healthz", include_in_schema=False)
def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/v1/me", response_model=UserOut)
def me(user: Caller) -> UserOut:
    return UserOut(id=user.id, name=user.name)
