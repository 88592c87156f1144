"""Search what was said across a user's meetings: memory recall over the phrases every
finished meeting adds to its owner's evidence (``heard.meetings.memory``), each hit read back
as the stored phrase it came from."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from heard.errors import NotFoundError
from heard.meetings.memory import phrase_of_evidence, remember_missing
from heard.memory.language import analyze
from heard.memory.users import Memories
from heard.store.database import Database
from heard.store.views import MeetingSummary, get_meeting, meeting_phrases
from heard.timeline.formats import TimedPhrase
from heard.transcript.tokenize import tokenize

__all__ = ["Found", "search_meetings"]


@dataclass(frozen=True, slots=True)
class Found:
    """One phrase that says what was asked: its meeting, its index among the meeting's
    phrases, and how well it matched."""

    meeting: MeetingSummary
    position: int
    phrase: TimedPhrase
    score: float


def search_meetings(
    db: Database, memories: Memories, owner: str, query: str, k: int = 10
) -> list[Found]:
    """The phrases of ``owner``'s meetings that say ``query``, best first (at most ``k``)."""
    if not tokenize(query):
        return []
    remember_missing(db, owner)
    memory = memories.current(owner)
    with memory.lock:
        hits = memory.index.recall(query, k=4 * k)  # some may be of conversations, not meetings
    if memory.index.embedder is None:  # lexical: a phrase that says none of it only came
        # along with its neighbours (context for an assistant, not a match for a search)
        asked = set(analyze(query, ""))
        hits = [h for h in hits if asked & set(analyze(f"{h.speaker} {h.text}", ""))]
    found: list[Found] = []
    said: dict[uuid.UUID, tuple[MeetingSummary, list[TimedPhrase]] | None] = {}
    for hit in hits:
        where = phrase_of_evidence(hit.id)
        if where is None:
            continue
        meeting_id, position = where
        if meeting_id not in said:
            try:
                said[meeting_id] = (
                    get_meeting(db, meeting_id, owner),
                    meeting_phrases(db, meeting_id, owner),
                )
            except NotFoundError:  # deleted since
                said[meeting_id] = None
        if (stored := said[meeting_id]) is None:
            continue
        m, phrases = stored
        if position >= len(phrases) or phrases[position].text != hit.text:
            continue  # rebuilt since: the memory catches up at its next recall
        found.append(Found(m, position, phrases[position], hit.score))
        if len(found) == k:
            break
    return found
