"""heard.release.outlet: every released unit is kept and heard; those with words are translated."""

from __future__ import annotations

import asyncio

from heard.release.outlet import Outlet
from heard.release.tracker import ReleaseReason, ReleaseUnit
from heard.release.translation import IdentityTranslator, TranslationQueue


def test_units_are_kept_in_order_and_every_one_with_words_is_translated() -> None:
    one = ReleaseUnit("Hello", ReleaseReason.DWELL, 100, "ana", 0, 0, 1)
    two = ReleaseUnit("there friend", ReleaseReason.BOUNDARY, 200, "ana", 0, 1, 2)
    dropped = ReleaseUnit("", ReleaseReason.CORRECTION, 300, "ana", 0, 1, 0, replaces=2)

    async def run() -> tuple[Outlet, list[ReleaseUnit], list[str]]:
        heard: list[ReleaseUnit] = []
        queue = TranslationQueue(IdentityTranslator(), target="de")
        outlet = Outlet(queue, heard.append)
        assert outlet.put([one]) == [one]
        outlet.put([two, dropped])
        archive = await queue.close()
        return outlet, heard, [t.unit.text for t in archive]

    outlet, heard, translated = asyncio.run(run())
    assert outlet.units == [one, two, dropped]
    assert heard == [one, two, dropped]
    assert translated == ["Hello", "there friend"]  # a one-word unit too; no empty correction
