"""Where released caption units go: the log of every unit, a listener, the translations.

``Captions`` decides nothing here: it hands each batch of units its trackers released to
an ``Outlet``, which keeps them in order, tells ``on_unit``, and sends every unit with words
for translation (``TranslationQueue.submit``: inside the event loop).
"""

from __future__ import annotations

from collections.abc import Callable

from heard.release.tracker import ReleaseUnit
from heard.release.translation import TranslationQueue

__all__ = ["Outlet"]


class Outlet:
    """The units released so far (``units``), and who else hears of them."""

    def __init__(
        self,
        translations: TranslationQueue | None = None,
        on_unit: Callable[[ReleaseUnit], None] | None = None,
    ) -> None:
        self.translations = translations
        self.on_unit = on_unit
        self.units: list[ReleaseUnit] = []
        """Every unit released, in order."""

    def put(self, units: list[ReleaseUnit]) -> list[ReleaseUnit]:
        """Send ``units`` on, in order; returns them."""
        for unit in units:
            self.units.append(unit)
            if self.on_unit is not None:
                self.on_unit(unit)
            if self.translations is not None and unit.words:
                self.translations.submit(unit)
        return units
