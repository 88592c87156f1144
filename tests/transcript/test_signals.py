from __future__ import annotations

import pytest

from heard.transcript.signals import SignalExtractor, Signals


@pytest.fixture
def extractor() -> SignalExtractor:
    return SignalExtractor({"Rhea": ["Rhea Sharma", "R. Sharma"], "Lake Como": ["Como"]})


@pytest.mark.parametrize(
    ("text", "entities", "phrases"),
    [
        ("book a table for Rhea", ("Rhea",), ()),
        ("RHEA SHARMA called", ("Rhea",), ()),
        ("r sharma called", ("Rhea",), ()),
        ("we went to lake como", ("Lake Como",), ()),
        ("Do you remember Como?", ("Lake Como",), ("do you remember",)),
        ("you remember the boat", (), ("you remember",)),
        ("what did I tell you about the boat", (), ("what did i tell you",)),
        ("Last time we met", (), ("last time we",)),
        ("rhe a table", (), ()),
        ("rheas cafe", (), ()),  # whole tokens only
        ("", (), ()),
    ],
)
def test_extract(
    extractor: SignalExtractor, text: str, entities: tuple[str, ...], phrases: tuple[str, ...]
) -> None:
    found = extractor.extract(text)
    assert found.entities == entities
    assert found.recall_phrases == phrases
    assert bool(found) == bool(entities or phrases)


def test_entities_can_be_added_later_and_listed_plainly() -> None:
    ex = SignalExtractor(["Kushal"], recall_phrases=())
    assert ex.extract("ask Kushal").entities == ("Kushal",)
    assert ex.extract("do you remember").recall_phrases == ()
    ex.add_entity("Tokyo office", ["HQ"])
    assert ex.extract("the hq and kushal").entities == ("Tokyo office", "Kushal")
    assert ex.entity_count == 2


def test_signal_keys_distinguish_kinds() -> None:
    s = Signals(entities=("remember",), recall_phrases=("remember",))
    assert s.keys == {"entity:remember", "recall:remember"}
