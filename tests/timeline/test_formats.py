from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from heard.errors import UnknownNameError
from heard.timeline.formats import SpokenLanguage, TimedPhrase, TranscriptDoc, render

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
DOC = TranscriptDoc(
    [
        TimedPhrase("alice", 0.0, 12.5, "So the plan is <ship> & test."),
        TimedPhrase("bob", 5.0, 5.6, "uh-huh"),
        TimedPhrase("bob", 3725.25, 3730.0, "Later."),
    ],
    title="Sync",
    started_at=T0,
)


def test_srt() -> None:
    assert render(DOC, "srt") == (
        "1\n00:00:00,000 --> 00:00:12,500\nalice: So the plan is <ship> & test.\n\n"
        "2\n00:00:05,000 --> 00:00:05,600\nbob: uh-huh\n\n"
        "3\n01:02:05,250 --> 01:02:10,000\nbob: Later.\n"
    )


def test_vtt_names_the_voice_and_escapes_markup() -> None:
    vtt = render(DOC, "vtt")
    assert vtt.startswith("WEBVTT - Sync\n\n")
    assert (
        "00:00:00.000 --> 00:00:12.500\n<v alice>So the plan is &lt;ship&gt; &amp; test.\n" in vtt
    )
    assert "<v bob>uh-huh" in vtt


def test_md_and_txt() -> None:
    md = render(DOC, "md")
    assert md.startswith("# Sync\n\n*2026-03-01T09:00:00+00:00*\n")
    assert "**bob** `01:02:05` Later." in md
    assert render(DOC, "txt").splitlines() == [
        "[00:00:00] alice: So the plan is <ship> & test.",
        "[00:00:05] bob: uh-huh",
        "[01:02:05] bob: Later.",
    ]


def test_json_round_trips() -> None:
    data = json.loads(render(DOC, "json"))
    assert data[1] == {"participant": "bob", "start": 5.0, "end": 5.6, "text": "uh-huh"}


def test_unknown_format_lists_the_valid_ones() -> None:
    with pytest.raises(UnknownNameError, match="json, md, srt, txt, vtt"):
        render(DOC, "docx")


def _with_languages(**languages: SpokenLanguage) -> TranscriptDoc:
    phrases = [replace(p, language=languages[p.participant].code) for p in DOC.phrases]
    return replace(DOC, phrases=phrases, languages=languages)


def test_one_language_is_the_files_own() -> None:
    doc = _with_languages(alice=SpokenLanguage("es", 0.97), bob=SpokenLanguage("es"))
    vtt = render(doc, "vtt")
    assert vtt.startswith("WEBVTT - Sync\nLanguage: es\n\n")
    assert "NOTE Languages: alice es (detected, 0.97); bob es (given)\n" in vtt
    assert "<lang" not in vtt  # the header says it once
    assert render(doc, "srt") == render(DOC, "srt")  # SubRip has no header: the file name says it
    assert [p["language"] for p in json.loads(render(doc, "json"))] == ["es", "es", "es"]
    assert "*Languages: alice es (detected, 0.97); bob es (given)*" in render(doc, "md")


def test_several_languages_are_on_every_cue() -> None:
    doc = _with_languages(alice=SpokenLanguage("en"), bob=SpokenLanguage("es", 0.9))
    vtt = render(doc, "vtt")
    assert "Language:" not in vtt
    assert "<v alice><lang en>So the plan is &lt;ship&gt; &amp; test.</lang>\n" in vtt
    assert "<v bob><lang es>uh-huh</lang>\n" in vtt
    srt = render(doc, "srt")
    assert "alice [en]: So the plan" in srt
    assert "bob [es]: uh-huh" in srt
    assert [p["language"] for p in json.loads(render(doc, "json"))] == ["en", "es", "es"]


def test_unknown_languages_leave_every_format_as_it_was() -> None:
    assert "language" not in render(DOC, "json")
    assert "Language" not in render(DOC, "vtt") + render(DOC, "md")


# Issue 28: names, titles and phrases a hostile user chose (every edge refuses control
# characters now, but a meeting stored before, or a phrase a recognizer wrote, reaches here)
CUE = "x\n\n99\n00:00:00,000 ---> 09:59:59,000\nINJECTED CUE"  # more dashes: still an arrow
FORGED = TranscriptDoc(
    [
        TimedPhrase(CUE, 0.0, 1.0, "hello --> there\r\nNOTE injected"),
        TimedPhrase("y\n\nNOTE evil\n\n# Heading **bold** [link](x)", 2.0, 3.0, "fine\x1b[31m red"),
    ],
    title="t\n00:00:00.000 --> 10:00:00.000\nfake\u2028line",
)


def timing_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if "-->" in line]


def test_srt_cues_cannot_be_forged_by_names_or_text() -> None:
    srt = render(FORGED, "srt")
    assert len(timing_lines(srt)) == 2
    assert srt.split("\n\n")[0].splitlines() == [
        "1",
        "00:00:00,000 --> 00:00:01,000",
        "x 99 00:00:00,000 -> 09:59:59,000 INJECTED CUE: hello -> there NOTE injected",
    ]


def test_vtt_cues_and_notes_cannot_be_forged_by_names_titles_or_text() -> None:
    vtt = render(FORGED, "vtt")
    assert len(timing_lines(vtt)) == 2
    assert vtt.splitlines()[0] == "WEBVTT - t 00:00:00.000 --&gt; 10:00:00.000 fake line"
    assert not [line for line in vtt.splitlines() if line.startswith("NOTE")]
    assert "\x1b" not in vtt


def test_markdown_and_text_keep_each_phrase_on_its_own_line() -> None:
    md = render(FORGED, "md").splitlines()
    assert md[0] == "# t 00:00:00.000 --\\> 10:00:00.000 fake line"
    assert [line for line in md if line.startswith("#")] == [md[0]]
    assert md[-1].startswith("**y NOTE evil # Heading \\*\\*bold\\*\\* \\[link\\](x)** `00:00:02`")
    txt = render(FORGED, "txt")
    assert len(txt.splitlines()) == 2
    assert "\x1b" not in txt + "".join(md)
    # JSON keeps what was stored, escaped as JSON escapes it
    assert json.loads(render(FORGED, "json"))[0]["participant"] == CUE


def test_json_carries_each_phrases_words_with_times_and_speaker() -> None:
    from heard.speech import Word

    words = (Word(1.0, 1.4, " Hi", 0.9), Word(1.4, 2.0, " there.", 0.81234))
    said = TimedPhrase("ana", 1.0, 2.0, "Hi there.", words=words)
    out = json.loads(render(TranscriptDoc([said, TimedPhrase("bob", 3.0, 4.0, "Yes.")]), "json"))
    assert out[0]["words"] == [
        {"word": "Hi", "start": 1.0, "end": 1.4, "probability": 0.9, "speaker": "ana"},
        {"word": "there.", "start": 1.4, "end": 2.0, "probability": 0.8123, "speaker": "ana"},
    ]
    assert "words" not in out[1]  # a phrase without timed words has none


def test_a_tracks_warnings_are_in_webvtt_and_markdown() -> None:
    said = {"ana": ["this speech may not be English --> use base"]}
    doc = TranscriptDoc([TimedPhrase("ana", 0.0, 1.0, "Hallo.")], "call", warnings=said)
    vtt = render(doc, "vtt")
    assert "NOTE Warning, ana: this speech may not be English --&gt; use base" in vtt
    assert "> Warning, ana: this speech may not be English" in render(doc, "md")
    assert "Warning" not in render(replace(doc, warnings={}), "vtt")
