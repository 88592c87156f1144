"""Speech for the escalation tests: words said at a pace, each partial the turn so far (a
recognizer that finalizes late), read by the stabilizer and Balanced, probed as time passes."""

from __future__ import annotations

from dataclasses import dataclass, field

from heard.release import Captions, ModeChange, ReleaseConfig, ReleaseUnit
from heard.transcript.events import EventKind, TranscriptEvent
from heard.transcript.stabilizer import TranscriptStabilizer

PROBE_MS = 500


def clause(n: int, end: str = ".", prefix: str = "p") -> list[str]:
    """``n`` words, the last ending with ``end`` ("" for none)."""
    words = [f"{prefix}{i}" for i in range(n)]
    words[-1] += end
    return words


@dataclass
class Turn:
    """One speaker's turn, spoken word by word into a Balanced captions stage."""

    config: ReleaseConfig | None = None
    every_ms: int = 400
    t_ms: int = 0
    words: list[str] = field(default_factory=list)
    units: list[ReleaseUnit] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.stabilizer = TranscriptStabilizer()
        self.captions = Captions("balanced", self.config)

    @property
    def transitions(self) -> list[ModeChange]:
        return self.captions.tracker("speaker").transitions

    @property
    def escalated(self) -> bool:
        return self.captions.tracker("speaker").escalated

    def _step(self, kind: EventKind, text: str) -> None:
        event = TranscriptEvent(self.t_ms, kind, text)
        self.units += self.captions.on_step(self.stabilizer.on_event(event))

    def say(self, words: list[str]) -> None:
        """Each word one partial later, probing every ``PROBE_MS`` in between."""
        for word in words:
            self.words.append(word)
            self._step(EventKind.PARTIAL, " ".join(self.words))
            end = self.t_ms + self.every_ms
            probe = (self.t_ms // PROBE_MS + 1) * PROBE_MS
            while probe < end:
                self.units += self.captions.tick(probe)
                probe += PROBE_MS
            self.t_ms = end

    def final(self) -> None:
        self._step(EventKind.FINAL, " ".join(self.words))
        self.words = []
