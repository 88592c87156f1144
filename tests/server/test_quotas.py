"""The live socket's quotas, on a clock the test moves (issue 27: every time injected)."""

from __future__ import annotations

from heard.limits import Bucket
from heard.server.quotas import (
    BARRED_S,
    EVENT_BURST,
    EVENTS_PER_S,
    Quota,
    limit_text,
)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_bucket_spends_its_burst_then_refills_at_its_rate() -> None:
    clock = Clock()
    bucket = Bucket(10, 30, clock)
    assert bucket.take(30)
    assert not bucket.take(1)  # the burst is spent, and no time passed
    clock.now += 0.5  # five tokens back
    assert bucket.take(5)
    assert not bucket.take(1)
    clock.now += 1000  # never more than the burst saved up
    assert bucket.take(30)
    assert not bucket.take(1)


def test_a_quota_bars_new_connections_for_a_while() -> None:
    clock = Clock()
    quota = Quota(clock)
    assert quota.barred_for() <= 0
    for _ in range(EVENT_BURST):
        assert quota.events.take(1)
    assert not quota.events.take(1)
    quota.bar()
    assert quota.barred_for() == BARRED_S
    clock.now += BARRED_S
    assert quota.barred_for() <= 0
    assert quota.events.take(EVENTS_PER_S * 1)  # a second's worth came back meanwhile
    assert "events/s" in limit_text("events")
    assert "channels of audio at real time" in limit_text("audio")
