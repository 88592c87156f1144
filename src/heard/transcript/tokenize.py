"""The tokenizer shared by the speculation gate, strong signals and the memory's BM25.

Text is NFKC-normalized and case-folded; runs of letters and digits become tokens,
except Han, Hiragana and Katakana characters, which are one token each (those
scripts do not put spaces between words). Punctuation, symbols and underscores
separate tokens and are dropped.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection

__all__ = ["ENGLISH_STOPWORDS", "content_tokens", "tokenize"]

_CJK = (
    "\u3040-\u30ff"  # Hiragana, Katakana
    "\u3400-\u4dbf"  # CJK Extension A
    "\u4e00-\u9fff"  # CJK Unified Ideographs
    "\uf900-\ufaff"  # CJK Compatibility Ideographs
    "\U00020000-\U0002fa1f"  # CJK Extensions B-F and supplements
)
_TOKEN = re.compile(rf"[{_CJK}]|[^\W_{_CJK}]+")

_STOPWORD_TEXT = """
    a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for
    from further had has have having he her here hers herself him himself his how i if
    in into is it its itself just let me more most my myself no nor not now of off on
    once only or other our ours ourselves out over own same shall she should so some
    such than that the their theirs them themselves then there these they this those
    through to too under until up us very was we were what when where which while who
    whom why will with would you your yours yourself yourselves s t d ll m re ve y um uh
    oh okay ok yeah
"""
ENGLISH_STOPWORDS: frozenset[str] = frozenset(_STOPWORD_TEXT.split())


def tokenize(text: str, *, stopwords: Collection[str] | None = None) -> list[str]:
    """Split ``text`` into lowercase tokens, dropping any in ``stopwords``.

    >>> tokenize("Book a table for Rhea, 7 p.m.!")
    ['book', 'a', 'table', 'for', 'rhea', '7', 'p', 'm']
    >>> tokenize("Привет, мир")
    ['привет', 'мир']
    >>> tokenize("東京に行く")
    ['東', '京', 'に', '行', 'く']
    """
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text)
    tokens = _TOKEN.findall(text.casefold())
    if stopwords:
        return [t for t in tokens if t not in stopwords]
    return tokens


def content_tokens(text: str) -> list[str]:
    """Tokens of ``text`` without English stopwords: what a retrieval query keys on."""
    return tokenize(text, stopwords=ENGLISH_STOPWORDS)
