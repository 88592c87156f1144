"""How two recognizer words are compared when deciding whether revisions agree.

Whisper re-decodes flip case and trailing punctuation between revisions
("planned." / "planned" / "Planned"), so comparing surface forms exactly delays
stabilization for no gain. The default rule, ``normalized``, compares words
case-folded with leading and trailing punctuation removed; the surface form the
recognizer produced is still what the transcript shows. ``exact`` is
whisper_streaming's LocalAgreement comparison, kept for measurement
(``bench/agreement.py``; figures in BENCHMARKS.md).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

from heard.registry import Registry

__all__ = ["WORD_MATCHERS", "WordKey", "exact_key", "normalized_key"]

WordKey = Callable[[str], str]

_EDGE_NON_WORD = re.compile(r"^\W+|\W+$")


@lru_cache(maxsize=1 << 16)
def normalized_key(word: str) -> str:
    """Case-folded ``word`` without leading or trailing punctuation or symbols.

    A word made only of punctuation (a dash, an ellipsis) keys as itself.
    """
    key = _EDGE_NON_WORD.sub("", word).casefold()
    return key or word


def exact_key(word: str) -> str:
    """The word as the recognizer wrote it."""
    return word


WORD_MATCHERS: Registry[WordKey] = Registry(
    "word match rule", {"normalized": normalized_key, "exact": exact_key}
)
