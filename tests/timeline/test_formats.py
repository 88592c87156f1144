from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from heard.errors import UnknownNameError
from heard.timeline.formats import TimedPhrase, TranscriptDoc, render

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
