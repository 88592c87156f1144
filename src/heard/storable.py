"""Text every store keeps as given: what a request, an event or an utterance may carry.

PostgreSQL refuses NUL characters; a lone surrogate (a ``\\ud800`` JSON escape with no pair)
is not UTF-8, so no database, file or socket can hold it. Both are refused where text comes
in, naming the field, rather than failing later where it is stored or sent. Times are kept
in UTC: one that has no UTC date (1 January of year 1 at +10:00) is refused the same way.
A JSON object that names a key twice is refused too (``unique_keys``): a parser keeps the last,
a proxy or a log may read the first.
"""

from __future__ import annotations

import unicodedata
from datetime import UTC, datetime
from typing import Any

from heard.errors import RepeatedKeyError

__all__ = [
    "BIDI_CONTROLS",
    "MAX_NAME_CHARS",
    "RepeatedKeyError",
    "name_key",
    "name_problem",
    "participant_problem",
    "readable",
    "storable",
    "storable_time",
    "unique_keys",
]

MAX_NAME_CHARS = 200
"""A speaker's or participant's name, an id, a session: the store's column width."""


def storable(value: str) -> str:
    """``value``, if a store can keep it; ``ValueError`` saying why not."""
    if "\x00" in value:
        raise ValueError("NUL characters are not allowed")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("lone surrogates are not text (an unpaired \\u escape)") from None
    return value


BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
"""Embeddings, overrides and isolates: they reorder what is shown after them."""


def name_problem(value: str) -> str | None:
    """What keeps ``value`` from being a name or a title that is shown and written out as it
    reads: a control character (a line break, ESC...), a line or paragraph separator, a bidi
    override, a private or unassigned code point. None when there is none. Joiners (ZWJ,
    ZWNJ), which names in some scripts need, are kept."""
    for c in value:
        if c in BIDI_CONTROLS or unicodedata.category(c) in ("Cc", "Zl", "Zp", "Co", "Cn", "Cs"):
            return f"control or invisible characters are not allowed (U+{ord(c):04X})"
    return None


JOINERS = frozenset("\u200c\u200d")
"""Zero-width non-joiner and joiner: names in Persian, Hindi and other scripts need them."""
_LOOK_ALIKE = str.maketrans(
    "АВЕКМНОРСТХаеорсухіјѕԁԛԝΑΒΕΖΗΙΚΜΝΟΡΤΥΧοικνρτυχɑɡɩᴀʙᴄᴅᴇɢʜɪᴊᴋʟᴍɴᴏᴘʀꜱᴛᴜᴠᴡʏᴢ",
    "ABEKMHOPCTXaeopcyxijsdqwABEZHIKMNOPTYXoikvptuxagiabcdeghijklmnoprstuvwyz",
)
"""Cyrillic and Greek letters drawn like Latin ones, and the Latin letter each looks like; and
Latin letters of phonetic alphabets drawn like plain ones (alpha, script g, small capitals),
which NFKC leaves as they are."""
_SCRIPTS = ("LATIN", "CYRILLIC", "GREEK")


def participant_problem(value: str) -> str | None:
    """What keeps ``value`` from being a participant's name, besides ``name_problem``: it
    names its track's route (no '/', and not '.' or '..', which a path resolves away); it holds
    no invisible character (a zero-width space, a word joiner; the joiners names need are
    kept); no word mixes Latin with Cyrillic or Greek letters (what look-alike names are made
    of). None when there is none."""
    if problem := name_problem(value):
        return problem
    if "/" in value:
        return "'/' is not allowed (the name is part of its track's address)"
    if value.strip() in (".", ".."):
        return "'.' and '..' are not names (an address resolves them away)"
    for c in value:
        if unicodedata.category(c) == "Cf" and c not in JOINERS:
            return f"invisible characters are not allowed (U+{ord(c):04X})"
    for word in value.split():
        scripts = {s for c in word if c.isalpha() and (s := _script(c)) is not None}
        if len(scripts) > 1:
            return f"{word!r} mixes {' and '.join(sorted(s.title() for s in scripts))} letters"
    return None


def _script(c: str) -> str | None:
    name = unicodedata.name(c, "")
    return next((s for s in _SCRIPTS if name.startswith(s + " ")), None)


def name_key(value: str) -> str:
    """The form in which two names are the same name: compatibility-normalized (NFKC: an é
    typed as e and a combining accent is é), case-folded, without joiners, and each Cyrillic
    or Greek letter that is drawn like a Latin one read as that letter."""
    normal = unicodedata.normalize("NFKC", value.strip())
    return "".join(c for c in normal if c not in JOINERS).translate(_LOOK_ALIKE).casefold()


def readable(value: str) -> str:
    """``value``, if it is a name or a title that shows as it reads; ``ValueError`` saying why
    not (``name_problem``)."""
    problem = name_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return storable(value)


def storable_time(value: datetime) -> datetime:
    """``value`` (aware) in UTC, as the store keeps it; ``ValueError`` if UTC has no such date."""
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise ValueError("out of range once in UTC (years 1 to 9999)") from None


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json.loads``'s ``object_pairs_hook``: the object, or ``RepeatedKeyError`` naming the
    key it names twice."""
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            shown = key if len(key) <= 40 else f"{key[:40]}..."
            raise RepeatedKeyError(f"names {shown!r} twice in one object")
        found[key] = value
    return found
