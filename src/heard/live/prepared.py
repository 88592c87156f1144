"""What a live conversation retrieves from, and the memory it prepares for a reply."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from heard.memory.evidence import Evidence, Recalled

__all__ = ["LiveStats", "PreparedContext", "Retrieved", "Retriever", "Source"]

Source = Literal["speculative", "final", "none"]


@dataclass(frozen=True, slots=True)
class Retrieved:
    """What one retrieval found."""

    pages: tuple[str, ...] = ()
    evidence: tuple[Recalled, ...] = ()


class Retriever(Protocol):
    """Where a conversation recalls from and what it remembers into."""

    async def retrieve(self, query: str, sticky: tuple[str, ...]) -> Retrieved: ...

    async def remember(self, evidence: Evidence) -> None: ...


@dataclass(frozen=True, slots=True)
class PreparedContext:
    """Memory ready for the reply to one turn, and where it came from."""

    turn: str
    speaker: str
    query: str
    """The text retrieved for: the speculated stable prefix, or the final."""
    final: str
    source: Source
    """"speculative" (reused), "final" (retrieved on the final), "none" (failed)."""
    pages: tuple[str, ...]
    evidence: tuple[Recalled, ...]
    ready_after_final_ms: float
    """Milliseconds from the final's arrival to this context being ready."""
    retrievals: int
    """Retrievals this turn started, speculative and final."""
    wasted: int
    """Of those, the ones whose result was not used."""
    error: str | None = None

    def to_dict(self) -> dict[str, object]:
        return {
            "turn": self.turn,
            "speaker": self.speaker,
            "query": self.query,
            "final": self.final,
            "source": self.source,
            "pages": list(self.pages),
            "evidence": [
                {"id": r.id, "score": r.score, "speaker": r.speaker, "text": r.text}
                for r in self.evidence
            ],
            "ready_after_final_ms": round(self.ready_after_final_ms, 3),
            "retrievals": self.retrievals,
            "wasted": self.wasted,
            "error": self.error,
        }


@dataclass(slots=True)
class LiveStats:
    turns: int = 0
    speculations: int = 0
    pause_speculations: int = 0
    """Of the speculations, those a pause started (a partial the recognizer repeated unchanged)
    where the gate would not have: on the repeated partial, outside the debounce window."""
    reused: int = 0
    fresh: int = 0
    wasted: int = 0
    stale_dropped: int = 0
    failed: int = 0
    cancelled: int = 0
