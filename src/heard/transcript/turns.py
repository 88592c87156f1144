"""Turn identity, assigned locally from speech-start and turn-complete events.

Recognizers do not number turns, and their events for different speakers
interleave, so heard numbers each speaker's turns itself: ``alice#1``,
``alice#2``, ``bob#1``.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["TurnId", "TurnTracker"]


@dataclass(frozen=True, slots=True, order=True)
class TurnId:
    """The ``index``-th turn (from 1) of ``speaker``."""

    speaker: str
    index: int

    def __str__(self) -> str:
        return f"{self.speaker}#{self.index}"


class TurnTracker:
    """Open and close turns per speaker.

    ``speech_started`` opens a turn if the speaker has none open (and returns the
    open one otherwise, so repeated VAD starts are harmless); ``turn_completed``
    closes it.
    """

    def __init__(self) -> None:
        self._count: dict[str, int] = {}
        self._open: dict[str, TurnId] = {}

    def speech_started(self, speaker: str) -> TurnId:
        turn = self._open.get(speaker)
        if turn is None:
            index = self._count.get(speaker, 0) + 1
            self._count[speaker] = index
            turn = self._open[speaker] = TurnId(speaker, index)
        return turn

    def turn_completed(self, speaker: str) -> TurnId | None:
        """Close the speaker's open turn and return it (``None`` if none was open)."""
        return self._open.pop(speaker, None)

    def current(self, speaker: str) -> TurnId | None:
        return self._open.get(speaker)

    @property
    def turns_started(self) -> int:
        return sum(self._count.values())
