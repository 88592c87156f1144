from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from heard.errors import MissingDependencyError, ProviderError
from heard.release.tracker import ReleaseReason, ReleaseUnit
from heard.release.translation import (
    ArgosTranslator,
    IdentityTranslator,
    LLMTranslator,
    TranslatedUnit,
    TranslationQueue,
    Translator,
)
from heard.testing import ScriptedProvider, ScriptedTranslator


def unit(i: int) -> ReleaseUnit:
    return ReleaseUnit(f"unit {i}", ReleaseReason.BOUNDARY, i * 100, "ana", 0, i * 2, 2)


def flaky(delays: list[float], failures: list[int]) -> ScriptedTranslator:
    """Fails ``failures[i]`` times on unit i, and takes ``delays[i]`` seconds each call."""
    return ScriptedTranslator(
        delays={f"unit {i}": d for i, d in enumerate(delays)},
        failures={f"unit {i}": f for i, f in enumerate(failures)},
    )


async def no_sleep(_: float) -> None:
    await asyncio.sleep(0)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.floats(0, 0.004), st.integers(0, 5)), min_size=1, max_size=12),
    st.integers(1, 4),
)
def test_order_is_kept_under_random_delays_and_failures(
    script: list[tuple[float, int]], in_flight: int
) -> None:
    delays = [d for d, _ in script]
    failures = [f for _, f in script]
    published: list[TranslatedUnit] = []

    async def run() -> list[TranslatedUnit]:
        queue = TranslationQueue(flaky(delays, failures), target="de", max_attempts=4,
                                 max_in_flight=in_flight, on_translated=published.append,
                                 sleep=no_sleep)  # fmt: skip
        for i in range(len(script)):
            queue.submit(unit(i))
            await asyncio.sleep(0)
        return await queue.close()

    archive = asyncio.run(run())
    assert [t.unit for t in archive] == [unit(i) for i in range(len(script))]
    assert published == archive
    for i, t in enumerate(archive):
        if failures[i] < 4:
            assert t.translation == f"[de] unit {i}"
            assert t.attempts == failures[i] + 1
            assert t.error is None
        else:
            assert t.translation is None
            assert t.attempts == 4
            assert t.error == f"TimeoutError: translation of 'unit {i}' timed out"


def test_a_slow_first_unit_does_not_reorder_the_ones_after_it() -> None:
    async def run() -> list[str]:
        queue = TranslationQueue(flaky([0.05, 0.0, 0.0], [0, 0, 0]), target="fr")
        for i in range(3):
            queue.submit(unit(i))
        return [t.unit.text for t in await queue.close()]

    assert asyncio.run(run()) == ["unit 0", "unit 1", "unit 2"]


def test_backoff_doubles_between_attempts() -> None:
    waits: list[float] = []

    async def record(s: float) -> None:
        waits.append(s)

    async def run() -> None:
        queue = TranslationQueue(flaky([0.0], [3]), target="es", backoff_s=0.1, sleep=record)
        queue.submit(unit(0))
        await queue.close()

    asyncio.run(run())
    assert waits == [0.1, 0.2, 0.4]


def test_identity_translator_says_what_it_is() -> None:
    t = IdentityTranslator()
    assert isinstance(t, Translator)
    assert t.is_identity
    assert "no translator" in t.name
    assert asyncio.run(t.translate("hello", "en", "de")) == "hello"


def test_argos_without_its_package_or_pair_is_a_clear_error() -> None:
    with pytest.raises(MissingDependencyError, match="argostranslate"):
        ArgosTranslator("en", "xx")


def test_a_closed_queue_refuses_units() -> None:
    async def run() -> None:
        queue = TranslationQueue(IdentityTranslator(), target="de")
        await queue.close()
        with pytest.raises(RuntimeError, match="closed"):
            queue.submit(unit(0))

    asyncio.run(run())


def test_llm_translator_through_a_provider() -> None:
    provider = ScriptedProvider({"translation": "Wir liefern am Freitag."}, {"wrong": 1})
    translator = LLMTranslator(provider)
    assert isinstance(translator, Translator)
    out = asyncio.run(translator.translate("We ship on Friday.", "en", "de"))
    assert out == "Wir liefern am Freitag."
    assert provider.calls[0].tool == "emit_translation"
    assert "en to de" in provider.calls[0].system
    with pytest.raises(ProviderError, match="without a translation"):
        asyncio.run(translator.translate("again", "en", "de"))
