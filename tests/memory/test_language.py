"""Recall reads each utterance in its own language (issue 26): stopwords and stemmer per
language, the language told or read from the text; English as before."""

from __future__ import annotations

from heard.memory.bm25 import BM25Index
from heard.memory.evidence import Evidence, EvidenceIndex
from heard.memory.language import analyze, guess


def test_spanish_and_russian_stem_in_their_own_language() -> None:
    assert analyze("Empecé a trabajar en una panadería", "es") == ["empec", "trabaj", "panad"]
    assert analyze("trabaja en las panaderías", "es") == ["trabaj", "panad"]
    assert analyze("Где работает Ольга?", "ru") == ["работа", "ольг"]
    assert analyze("Ольга работала в библиотеке", "ru")[1] == "работа"
    # function words go: Spanish "en", "una", Russian "где", "в"
    assert "en" not in analyze("Trabajo en una panadería", "es")


def test_english_is_read_as_before() -> None:
    old = BM25Index(stem=True)  # heard's English analysis before languages counted
    text = "Caroline: I went to the LGBTQ support group yesterday, it was so powerful."
    assert analyze(text, "en") == old.tokens(text)
    assert analyze(text, "") == old.tokens(text)  # unknown: as English
    assert analyze(text, "ja") == old.tokens(text)  # no stemmer: as English


def test_guess_reads_script_and_function_words() -> None:
    assert guess("Yo sigo en el hospital, pero ahora estoy en urgencias.") == "es"
    assert guess("Мы с детьми ездили в Суздаль") == "ru"
    assert guess("I went to the support group and it was great") == "en"
    assert guess("Ich habe gestern einen Hund gekauft und bin sehr froh") == "de"
    assert guess("Ok!") == ""
    assert guess("1234") == ""


def _spanish_index() -> EvidenceIndex:
    index = EvidenceIndex()
    index.extend(
        [
            Evidence(
                id="a",
                speaker="Mateo",
                text="Empecé a trabajar en una panadería del barrio.",
                conversation="c",
            ),
            Evidence(
                id="b",
                speaker="Lucía",
                text="Yo sigo en el hospital, en urgencias.",
                conversation="c",
            ),
            Evidence(
                id="c",
                speaker="Mateo",
                text="Me encanta el olor del pan recién horneado.",
                conversation="c",
            ),
            Evidence(
                id="d", speaker="Lucía", text="Sí.", conversation="c"
            ),  # too short to tell: the conversation's
        ]
    )
    return index


def test_a_spanish_question_finds_the_inflected_answer() -> None:
    index = _spanish_index()
    assert (
        index.language_of(Evidence(id="x", speaker="Lucía", text="Sí.", conversation="c")) == "es"
    )
    # "trabaja" and "trabajar" meet only when both are stemmed as Spanish
    assert index.recall("¿Dónde trabaja?", k=1)[0].id == "a"
    english = EvidenceIndex()
    english.extend(
        Evidence(
            id=e.id, speaker=e.speaker, text=e.text, conversation=e.conversation, language="en"
        )
        for e in (
            Evidence(
                id="a",
                speaker="Mateo",
                text="Empecé a trabajar en una panadería del barrio.",
                conversation="c",
            ),
        )
    )
    assert english.recall("¿Dónde trabaja?", k=1) == []


def test_a_told_language_wins_over_the_text() -> None:
    index = EvidenceIndex()
    told = Evidence(id="a", speaker="Ana", text="no", conversation="c", language="ES")
    assert index.language_of(told) == "es"


def test_a_short_question_finds_its_turn_in_a_memory_of_several_languages() -> None:
    """The query is read in every language the memory holds (each item matched by the reading
    in its own): "¿Dónde trabaja?" has no function word to guess from."""
    index = _spanish_index()
    index.extend(
        [
            Evidence(
                id=f"en{i}",
                speaker="Ben",
                text=f"I went to the {w} on Sunday with my friends.",
                conversation="e",
            )
            for i, w in enumerate(["park", "beach", "cinema", "museum", "market", "gym"])
        ]
        + [
            Evidence(
                id="ru", speaker="Оля", text="Я работаю в районной библиотеке.", conversation="r"
            )
        ]
    )
    assert (
        index.language_of(Evidence(id="x", speaker="Ben", text="Ok!", conversation="new")) == "en"
    )  # the memory's
    assert index.recall("¿Dónde trabaja?", k=1)[0].id == "a"
    assert index.recall("Где она работает?", k=1)[0].id == "ru"
    assert index.recall("Who went to the museum?", k=1)[0].id == "en3"


def test_what_heard_was_told_reaches_the_evidence() -> None:
    from heard.memory.language import primary

    assert primary("en-US") == "en"
    assert primary("ES") == "es"
    assert primary(None) == ""
