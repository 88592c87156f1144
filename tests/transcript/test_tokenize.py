from __future__ import annotations

import pytest

from heard.transcript.tokenize import ENGLISH_STOPWORDS, content_tokens, tokenize


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("", []),
        ("   ", []),
        ("Hello, World!", ["hello", "world"]),
        ("planned. Planned planned", ["planned", "planned", "planned"]),
        ("snake_case and-dash", ["snake", "case", "and", "dash"]),
        ("It's 7:30 p.m.", ["it", "s", "7", "30", "p", "m"]),
        ("Привет, Мир!", ["привет", "мир"]),
        ("Straße", ["strasse"]),
        ("\uff21\uff22\uff23\uff11\uff12\uff13", ["abc123"]),  # full-width ABC123: NFKC folds
        ("Café", ["café"]),
        ("Cafe\u0301", ["café"]),  # combining accent composes under NFKC
        ("東京に行きます", ["東", "京", "に", "行", "き", "ま", "す"]),
        ("我爱Python和Rust", ["我", "爱", "python", "和", "rust"]),
        ("카페 가자", ["카페", "가자"]),
        ("emoji 🎉 party", ["emoji", "party"]),
    ],
)
def test_tokenize(text: str, tokens: list[str]) -> None:
    assert tokenize(text) == tokens


def test_stopwords_are_optional() -> None:
    text = "What did I tell you about the boat?"
    assert tokenize(text) == ["what", "did", "i", "tell", "you", "about", "the", "boat"]
    assert tokenize(text, stopwords=ENGLISH_STOPWORDS) == ["tell", "boat"]
    assert content_tokens(text) == ["tell", "boat"]
    assert tokenize(text, stopwords={"boat"}) == ["what", "did", "i", "tell", "you", "about", "the"]
