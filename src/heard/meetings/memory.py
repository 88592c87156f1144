"""The bridge from meetings to memory: a built meeting's phrases are its owner's evidence,
so a recall or a search across meetings finds them.

Each phrase is remembered under its meeting's conversation (``meeting:<id>``) with an id that
names the meeting, the phrase's position and a digest of who said what: a memory holding an
older build of the meeting sees that it changed.
"""

from __future__ import annotations

import hashlib
import uuid

from heard.store.database import Database
from heard.store.evidence import replace_conversation
from heard.store.views import meeting_owner_and_phrases, unremembered_meetings
from heard.utterance import Evidence

__all__ = [
    "MEETING_CONVERSATION",
    "forget_meeting",
    "phrase_of_evidence",
    "remember_meeting",
    "remember_missing",
]

MEETING_CONVERSATION = "meeting:"
"""The conversation a meeting's phrases are remembered under: this and the meeting's id."""


def remember_meeting(db: Database, meeting_id: uuid.UUID) -> int:
    """Keep the meeting's phrases as its owner's memory evidence, in place of what was kept
    of it before (none when it has none: a deleted meeting is forgotten). How many were
    kept."""
    conversation = f"{MEETING_CONVERSATION}{meeting_id}"
    found = meeting_owner_and_phrases(db, meeting_id)
    if found is None:
        return 0
    owner, said = found
    items = []
    for position, p in enumerate(said):
        digest = hashlib.sha256(f"{p.participant}\n{p.text}".encode()).hexdigest()[:10]
        items.append(
            Evidence(
                id=f"{meeting_id}:{position}:{digest}",
                speaker=p.participant,
                text=p.text,
                conversation=conversation,
                t=p.start_at,
                language=p.language or "",
            )
        )
    return replace_conversation(db, items, conversation=conversation, owner=owner)


def forget_meeting(db: Database, meeting_id: uuid.UUID, owner: str) -> None:
    """Drop the evidence a deleted meeting left in its owner's memory."""
    replace_conversation(db, [], conversation=f"{MEETING_CONVERSATION}{meeting_id}", owner=owner)


def phrase_of_evidence(evidence_id: str) -> tuple[uuid.UUID, int] | None:
    """The meeting and phrase position a remembered phrase's id names (None: not one)."""
    parts = evidence_id.split(":")
    if len(parts) != 3 or not parts[1].isdigit():
        return None
    try:
        return uuid.UUID(parts[0]), int(parts[1])
    except ValueError:
        return None


def remember_missing(db: Database, owner: str) -> int:
    """Remember the built meetings of ``owner``'s that memory has nothing of (built before
    meetings were remembered, or while the store failed); how many."""
    missing = unremembered_meetings(db, owner, MEETING_CONVERSATION)
    for meeting_id in missing:
        remember_meeting(db, meeting_id)
    return len(missing)
