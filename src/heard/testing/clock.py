"""A clock for tests: the time of day moves only when the test says so."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

__all__ = ["FakeClock"]


class FakeClock:
    """The pipeline's clock (``() -> datetime``, UTC) that moves only when told."""

    def __init__(self, now: datetime | None = None) -> None:
        self.now = now or datetime(2026, 1, 1, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> datetime:
        self.now += timedelta(seconds=seconds)
        return self.now
