"""Dates a question names ("on 13 October, 2023", "in June", "in 2023"), as ranges of days.

Recall favours what was said in the days a question names (evidence.py). Only dates written
out are read: a month by its full name, with a day, a year or both, or after a word such as
"in" or "during" when alone ("may" alone is a verb); ISO days (2023-10-13); a year after such a
word. Relative dates ("last week") need a "now" the question does not carry and are not read.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date

__all__ = ["NamedDate", "named_dates"]

MONTHS = (
    "january february march april may june july august september october november december"
).split()
_MONTH = "(" + "|".join(MONTHS) + ")"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"((?:1[89]|2\d)\d\d)"
_LEAD = r"(?:in|during|since|by|until|till|before|after|of|early|late|mid-?|last|this|next|around)"


@dataclass(frozen=True, slots=True)
class NamedDate:
    """A date as far as a question names it: a day, a month or a year (None where not said)."""

    year: int | None
    month: int | None = None
    day: int | None = None

    def days(self, years: Iterable[int]) -> list[tuple[int, int]]:
        """The first and last day (proleptic ordinals) it covers: in its own year, or in each
        of ``years`` when it names none. A day that does not exist (30 February) covers none."""
        ranges = []
        for year in (self.year,) if self.year is not None else years:
            try:
                if self.month is None:
                    first, last = date(year, 1, 1), date(year, 12, 31)
                elif self.day is None:
                    first = date(year, self.month, 1)
                    following = (
                        date(year + 1, 1, 1)
                        if self.month == 12
                        else first.replace(month=self.month + 1)
                    )
                    last = date.fromordinal(following.toordinal() - 1)
                else:
                    first = last = date(year, self.month, self.day)
            except ValueError:
                continue
            ranges.append((first.toordinal(), last.toordinal()))
        return ranges


def _month(name: str) -> int:
    return MONTHS.index(name.casefold()) + 1


# Tried in this order; a later pattern never reads words an earlier one took.
_PATTERNS: list[tuple[re.Pattern[str], Callable[[re.Match[str]], NamedDate]]] = [
    (
        re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b"),
        lambda m: NamedDate(int(m[1]), int(m[2]), int(m[3])),
    ),
    (
        re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s*{_YEAR}\b", re.IGNORECASE),
        lambda m: NamedDate(int(m[3]), _month(m[2]), int(m[1])),
    ),
    (
        re.compile(rf"\b{_MONTH}\s+{_DAY},?\s*{_YEAR}\b", re.IGNORECASE),
        lambda m: NamedDate(int(m[3]), _month(m[1]), int(m[2])),
    ),
    (
        re.compile(rf"\b{_MONTH},?\s+{_YEAR}\b", re.IGNORECASE),
        lambda m: NamedDate(int(m[2]), _month(m[1])),
    ),
    (
        re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH}\b", re.IGNORECASE),
        lambda m: NamedDate(None, _month(m[2]), int(m[1])),
    ),
    (
        re.compile(rf"\b{_MONTH}\s+{_DAY}\b(?![:.,]?\d)", re.IGNORECASE),
        lambda m: NamedDate(None, _month(m[1]), int(m[2])),
    ),
    (
        re.compile(rf"\b{_LEAD}\s*{_MONTH}\b", re.IGNORECASE),
        lambda m: NamedDate(None, _month(m[1])),
    ),
    (
        re.compile(rf"\b{_LEAD}\s+{_YEAR}\b", re.IGNORECASE),
        lambda m: NamedDate(int(m[1])),
    ),
]


def named_dates(text: str) -> list[NamedDate]:
    """Every date ``text`` names, in the order of the patterns above (not of the text)."""
    found: list[NamedDate] = []
    taken: list[tuple[int, int]] = []
    for pattern, make in _PATTERNS:
        for m in pattern.finditer(text):
            if any(start < m.end() and m.start() < end for start, end in taken):
                continue
            taken.append(m.span())
            found.append(make(m))
    return found
