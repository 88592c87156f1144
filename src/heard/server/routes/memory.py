"""A user's memory: evidence in, recall out, and the pages of their workspace."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from fastapi import APIRouter
from fastapi import Path as FastAPIPath

from heard.errors import NotFoundError
from heard.memory.workspace import Page, write_page
from heard.server.bodies import StrictJSONRoute
from heard.server.deps import Caller, Settings, UserMemories
from heard.server.errors import BAD, NOT_FOUND
from heard.server.schemas import (
    SLUG,
    ErrorOut,
    EvidenceIn,
    PageIn,
    PageOut,
    RecalledOut,
    RecallIn,
    StoredOut,
)
from heard.transcript.tokenize import tokenize

__all__ = ["router"]

router = APIRouter(prefix="/v1/memory", route_class=StrictJSONRoute)

Slug = Annotated[str, FastAPIPath(pattern=SLUG)]


@router.post(
    "/evidence",
    status_code=201,
    response_model=StoredOut,
    responses={
        **BAD,
        409: {"model": ErrorOut, "description": "An id is taken."},
        429: {"model": ErrorOut, "description": "One store at a time, 15 MiB a minute."},
    },
)
def ingest(body: EvidenceIn, user: Caller, memories: UserMemories) -> StoredOut:
    """Store final utterances as evidence: all of them, or none."""
    items = [u.evidence() for u in body.utterances]
    return StoredOut(stored=memories.store(user.owner, items))


@router.post("/recall", response_model=list[RecalledOut], responses=BAD)
def recall(body: RecallIn, user: Caller, memories: UserMemories) -> list[RecalledOut]:
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


def _pages_dir(settings: Settings, owner: str) -> Path:
    return settings.workspace(owner) / "pages"


def _pages(memories: UserMemories, owner: str) -> dict[str, Page]:
    workspace = memories.current(owner).recall.workspace
    return workspace.pages.by_slug if workspace is not None else {}


def _page_out(page: Page) -> PageOut:
    return PageOut(
        slug=page.slug,
        summary=page.summary,
        aliases=list(page.aliases),
        edges=list(page.edges),
        body=page.body,
    )


@router.get("/pages", response_model=list[PageOut])
def pages(user: Caller, memories: UserMemories) -> list[PageOut]:
    return [_page_out(p) for p in _pages(memories, user.owner).values()]


@router.get("/pages/{slug}", response_model=PageOut, responses=NOT_FOUND)
def page(slug: Slug, user: Caller, memories: UserMemories) -> PageOut:
    found = _pages(memories, user.owner).get(slug)
    if found is None:
        raise NotFoundError(f"no page {slug!r}")
    return _page_out(found)


@router.put("/pages/{slug}", response_model=PageOut, responses=BAD)
def put_page(
    slug: Slug, body: PageIn, user: Caller, settings: Settings, memories: UserMemories
) -> PageOut:
    """Create or replace a page (YAML frontmatter + markdown body, as `heard memory` reads)."""
    written = write_page(_pages_dir(settings, user.owner), slug, summary=body.summary,
                         aliases=body.aliases, edges=body.edges, body=body.body)  # fmt: skip
    memories.pages_changed(user.owner)
    return _page_out(written)


@router.delete("/pages/{slug}", status_code=204, responses=NOT_FOUND)
def delete_page(slug: Slug, user: Caller, settings: Settings, memories: UserMemories) -> None:
    path = _pages_dir(settings, user.owner) / f"{slug}.md"
    if not path.is_file():
        raise NotFoundError(f"no page {slug!r}")
    path.unlink()
    memories.pages_changed(user.owner)
