from __future__ import annotations

import asyncio
import random
import threading

import pytest

from heard.transcript.guard import GenerationGuard, run_guarded


def test_stale_generations_are_rejected() -> None:
    guard = GenerationGuard()
    started = guard.current
    assert guard.is_current(started)
    newer = guard.advance()
    assert newer == started + 1
    assert not guard.is_current(started)
    assert guard.is_current(newer)


def test_publish_if_current_runs_only_for_the_current_generation() -> None:
    guard = GenerationGuard()
    out: list[str] = []
    gen = guard.current
    assert guard.publish_if_current(gen, lambda: out.append("fresh"))
    guard.advance()
    assert not guard.publish_if_current(gen, lambda: out.append("stale"))
    assert out == ["fresh"]


async def test_a_slow_job_for_an_old_turn_never_overwrites_the_new_one() -> None:
    guard = GenerationGuard()
    published: list[str] = []
    release_slow = asyncio.Event()

    async def slow(generation: int) -> str:
        await release_slow.wait()
        return f"turn 4 (gen {generation})"

    async def fast(generation: int) -> str:
        return f"turn 5 (gen {generation})"

    slow_task = asyncio.create_task(run_guarded(guard, slow, published.append))
    await asyncio.sleep(0)
    guard.advance()  # turn 5 begins
    fast_result = await run_guarded(guard, fast, published.append)
    release_slow.set()
    slow_result = await slow_task
    assert fast_result.published
    assert not slow_result.published
    assert published == ["turn 5 (gen 1)"]


async def test_many_racing_jobs_only_the_newest_generation_publishes() -> None:
    guard = GenerationGuard()
    rng = random.Random(7)
    published: list[int] = []

    async def job(generation: int) -> int:
        await asyncio.sleep(rng.uniform(0, 0.01))
        return generation

    tasks = []
    for _ in range(200):
        if rng.random() < 0.5:
            guard.advance()  # a new turn began while earlier jobs are in flight
        tasks.append(asyncio.create_task(run_guarded(guard, job, published.append)))
        await asyncio.sleep(0)
    results = await asyncio.gather(*tasks)
    final_generation = guard.current
    assert published, "the newest generation's jobs must publish"
    assert set(published) == {final_generation}
    assert all(r.published == (r.generation == final_generation) for r in results)
    assert sum(r.published for r in results) == len(published)


async def test_job_errors_propagate_and_publish_nothing() -> None:
    guard = GenerationGuard()
    published: list[object] = []

    async def boom(generation: int) -> None:
        raise RuntimeError("retrieval failed")

    with pytest.raises(RuntimeError, match="retrieval failed"):
        await run_guarded(guard, boom, published.append)
    assert published == []


def test_advance_is_atomic_across_threads() -> None:
    guard = GenerationGuard()

    def bump() -> None:
        for _ in range(2000):
            guard.advance()

    threads = [threading.Thread(target=bump) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert guard.current == 16_000
