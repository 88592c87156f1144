"""Generations that make stale asynchronous work harmless.

Every speculative job records the generation it started at; when it finishes it
publishes only if no newer generation began meanwhile. Without this a slow
retrieval for turn 4 could overwrite the context prepared for turn 5.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["GenerationGuard", "GuardedResult", "run_guarded"]

T = TypeVar("T")


class GenerationGuard:
    """A thread-safe generation counter; usable from threads and asyncio alike."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._current = 0

    @property
    def current(self) -> int:
        with self._lock:
            return self._current

    def advance(self) -> int:
        """Invalidate outstanding work; return the new generation."""
        with self._lock:
            self._current += 1
            return self._current

    def is_current(self, generation: int) -> bool:
        with self._lock:
            return self._current == generation

    def publish_if_current(self, generation: int, publish: Callable[[], None]) -> bool:
        """Run ``publish`` only if ``generation`` is still current, atomically.

        The lock is held while ``publish`` runs, so no ``advance`` can slip in
        between the check and the write; keep ``publish`` short.
        """
        with self._lock:
            if self._current != generation:
                return False
            publish()
            return True


@dataclass(frozen=True, slots=True)
class GuardedResult(Generic[T]):
    """What a guarded job produced and whether it was published."""

    generation: int
    value: T
    published: bool


async def run_guarded(
    guard: GenerationGuard,
    job: Callable[[int], Awaitable[T]],
    publish: Callable[[T], None],
) -> GuardedResult[T]:
    """Run ``job(generation)`` and publish its value unless the world moved on.

    The generation is read before the job starts; a result whose generation is
    no longer current when the job ends is dropped (``published=False``).
    Exceptions from the job propagate; cancellation propagates as usual.
    """
    generation = guard.current
    value = await job(generation)
    published = guard.publish_if_current(generation, lambda: publish(value))
    return GuardedResult(generation, value, published)
