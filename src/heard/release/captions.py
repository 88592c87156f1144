"""The captions stage: every speaker's release tracker on one clock, and the translations.

``Captions`` takes the stabilizer's steps (``on_step``), lets time pass (``tick``: the live
path calls it every ``TICK_MS`` from a timer, ``heard cadence`` between events), and ends
(``finish``). The live conversation, ``heard stream --captions``, the server and
``heard cadence`` all drive this same object, so the cadence table measures what ships.
With a ``TranslationQueue`` every unit with words is also sent for translation, in order
(``on_step`` and ``tick`` must then run inside the event loop); ``heard.release.outlet``
sends them on.
"""

from __future__ import annotations

from collections.abc import Callable

from heard.release.outlet import Outlet
from heard.release.tracker import ReleaseConfig, ReleaseMode, ReleaseTracker, ReleaseUnit
from heard.release.translation import TranslationQueue
from heard.transcript.stabilizer import TranscriptStep

__all__ = ["TICK_MS", "Captions"]

TICK_MS = 100
"""How often time is let pass (dwell and pause timers); a tenth of a re-decode chunk."""


class Captions:
    """Caption units for every speaker of one conversation."""

    def __init__(
        self,
        mode: ReleaseMode | str = ReleaseMode.BALANCED,
        config: ReleaseConfig | None = None,
        *,
        translations: TranslationQueue | None = None,
        on_unit: Callable[[ReleaseUnit], None] | None = None,
    ) -> None:
        self.mode = mode
        self.config = config
        self.translations = translations
        self.outlet = Outlet(translations, on_unit)
        self.trackers: dict[str, ReleaseTracker] = {}
        self.now_ms = 0
        """The latest time seen (a step's, or a tick's)."""

    def tracker(self, speaker: str) -> ReleaseTracker:
        tracker = self.trackers.get(speaker)
        if tracker is None:
            tracker = self.trackers[speaker] = ReleaseTracker(
                self.mode, self.config, speaker=speaker
            )
        return tracker

    def on_step(self, step: TranscriptStep) -> list[ReleaseUnit]:
        """A speaker's transcript moved: a revised partial, or a final."""
        self.now_ms = max(self.now_ms, step.t_ms)
        units = self.tracker(step.speaker).on_hypothesis(step.hypothesis, step.t_ms)
        return self.outlet.put(units)

    def tick(self, t_ms: int) -> list[ReleaseUnit]:
        """Time is ``t_ms`` (the stream's time) and nothing new was heard."""
        if t_ms <= self.now_ms:
            return []
        self.now_ms = t_ms
        return self.outlet.put(
            [u for tracker in self.trackers.values() for u in tracker.poll(t_ms)]
        )

    def finish(self, t_ms: int | None = None) -> list[ReleaseUnit]:
        """The stream ended: released words no final confirmed are taken back."""
        t = self.now_ms if t_ms is None else max(self.now_ms, t_ms)
        return self.outlet.put([u for tracker in self.trackers.values() for u in tracker.finish(t)])

    @property
    def units(self) -> list[ReleaseUnit]:
        """Every unit released, in order."""
        return self.outlet.units

    @property
    def escalated(self) -> bool:
        return any(t.escalated for t in self.trackers.values())
