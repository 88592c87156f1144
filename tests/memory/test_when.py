from __future__ import annotations

from collections.abc import Callable
from datetime import date

import pytest
from hypothesis import given
from hypothesis import strategies as st

from heard.memory.when import MONTHS, NamedDate, named_dates


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("What did Tim say on 16 November, 2023?", [NamedDate(2023, 11, 16)]),
        ("the book he finished on 8th December, 2023", [NamedDate(2023, 12, 8)]),
        ("the forest picture shared on December 1,2023", [NamedDate(2023, 12, 1)]),
        ("a setback in October 2023", [NamedDate(2023, 10)]),
        ("When did Melanie go camping in June?", [NamedDate(None, 6)]),
        ("plans for mid-June", [NamedDate(None, 6)]),
        ("What did we agree on March 3?", [NamedDate(None, 3, 3)]),
        ("the 3rd of March", [NamedDate(None, 3, 3)]),
        ("How often did she swim in 2023?", [NamedDate(2023)]),
        ("the call on 2023-10-13 at 10:00", [NamedDate(2023, 10, 13)]),
        # both ends of a stretch are read, each a day
        ("between August 11 and August 15 2023", [NamedDate(2023, 8, 15), NamedDate(None, 8, 11)]),
        # "may" alone is a verb; a number alone is not a year; a time is not a day
        ("What may Caroline bring to the party?", []),
        ("She ran 2023 meters", []),
        ("See you May 3:30", []),
        ("What did they talk about?", []),
    ],
)
def test_dates_a_question_names(text: str, named: list[NamedDate]) -> None:
    assert named_dates(text) == named


FORMATS = [
    "{day} {month}, {year}",
    "{day}th of {month} {year}",
    "{month} {day}, {year}",
    "{month} {day},{year}",
    "{iso}",
]


@given(
    day=st.dates(min_value=date(1900, 1, 1), max_value=date(2999, 12, 31)),
    form=st.sampled_from(FORMATS),
    cased=st.sampled_from([str.lower, str.title, str.upper]),
)
def test_a_written_day_is_read_back_as_that_day(
    day: date, form: str, cased: Callable[[str], str]
) -> None:
    month = MONTHS[day.month - 1]
    written = form.format(day=day.day, month=cased(month), year=day.year, iso=day.isoformat())
    (named,) = named_dates(f"What happened on {written}?")
    assert named.days([]) == [(day.toordinal(), day.toordinal())]


@given(month=st.integers(1, 12), years=st.lists(st.integers(1900, 2999), max_size=4, unique=True))
def test_a_month_covers_each_of_its_days_in_each_year(month: int, years: list[int]) -> None:
    ranges = NamedDate(None, month).days(years)
    assert len(ranges) == len(years)
    for year, (first, last) in zip(years, ranges, strict=True):
        days = [date.fromordinal(d) for d in range(first, last + 1)]
        assert {(d.year, d.month) for d in days} == {(year, month)}
        assert days[0].day == 1
        assert date.fromordinal(last + 1).month != month


def test_a_day_that_does_not_exist_covers_none() -> None:
    assert NamedDate(2023, 2, 29).days([]) == []
    assert NamedDate(None, 2, 29).days([2023, 2024]) == [(date(2024, 2, 29).toordinal(),) * 2]
