from __future__ import annotations

from pathlib import Path

import pytest

from heard.errors import EventLogError
from heard.transcript.events import MAX_LINE_CHARS, EventKind, TranscriptEvent, read_events


def write(tmp_path: Path, text: str | bytes) -> Path:
    p = tmp_path / "events.jsonl"
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        p.write_text(text, encoding="utf-8")
    return p


def test_reads_the_wire_format(tmp_path: Path) -> None:
    p = write(
        tmp_path,
        '{"t_ms": 1200, "type": "partial", "text": "what should we", "speaker": "alice"}\n'
        "\n"
        '{"t_ms": 2400, "type": "final", "text": "What should we eat?", "extra": 1}\n',
    )
    assert read_events(p) == [
        TranscriptEvent(1200, EventKind.PARTIAL, "what should we", "alice"),
        TranscriptEvent(2400, EventKind.FINAL, "What should we eat?", "speaker"),
    ]


def test_events_round_trip_through_json(tmp_path: Path) -> None:
    event = TranscriptEvent(5, EventKind.FINAL, "naïve café", "bob")
    assert read_events(write(tmp_path, event.to_json() + "\n")) == [event]


GOOD = '{"t_ms": 0, "type": "partial", "text": "hi"}'


@pytest.mark.parametrize(
    ("content", "line", "problem"),
    [
        ("", None, "no events"),
        ("\n  \n", None, "no events"),
        ("{not json\n", 1, "malformed JSON"),
        (GOOD + "\n[1, 2]\n", 2, "expected a JSON object, got list"),
        ('{"t_ms": 0, "type": "interim", "text": "x"}\n', 1, "unknown event type 'interim'"),
        ('{"t_ms": 0, "text": "x"}\n', 1, "missing field 'type'"),
        ('{"t_ms": "10", "type": "final", "text": "x"}\n', 1, "field 't_ms'"),
        ('{"t_ms": true, "type": "final", "text": "x"}\n', 1, "field 't_ms'"),
        ('{"t_ms": -5, "type": "final", "text": "x"}\n', 1, "greater than or equal to 0"),
        ('{"t_ms": 1, "type": "final", "text": 3}\n', 1, "field 'text'"),
        ('{"t_ms": 1, "type": "final", "text": "x", "speaker": ""}\n', 1, "field 'speaker'"),
        # a final is an utterance: no longer than evidence takes (heard.utterance)
        ('{"t_ms": 1, "type": "final", "text": "' + "x" * 20_001 + '"}\n', 1, "field 'text'"),
        ('{"t_ms": 1, "type": "final", "text": "x", "speaker": "a\\nb"}\n', 1, "field 'speaker'"),
        ("[" * 100_000 + "\n", 1, "nested too deeply"),
        # the last of two keys must not win silently (issue 28)
        (
            '{"t_ms": 1, "type": "final", "text": "pay 10", "text": "pay 1000"}\n',
            1,
            "the event names 'text' twice in one object",
        ),
        (
            '{"t_ms": 500, "type": "partial", "text": "a"}\n'
            '{"t_ms": 400, "type": "partial", "text": "a b"}\n',
            2,
            "t_ms decreased from 500 to 400",
        ),
    ],
)
def test_bad_logs_name_the_file_line_and_problem(
    tmp_path: Path, content: str, line: int | None, problem: str
) -> None:
    p = write(tmp_path, content)
    with pytest.raises(EventLogError) as info:
        read_events(p)
    err = info.value
    assert err.path == str(p)
    assert err.line == line
    assert problem in err.problem
    assert str(err).startswith(f"{p}:{line}: " if line else f"{p}: ")


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(EventLogError, match="no such file"):
        read_events(tmp_path / "nope.jsonl")
    with pytest.raises(EventLogError, match="not a regular file"):
        read_events(tmp_path)


def test_invalid_utf8_names_the_line(tmp_path: Path) -> None:
    p = write(tmp_path, GOOD.encode() + b"\n" + b'{"t_ms": 1, "type": "final", "text": "\xff"}\n')
    with pytest.raises(EventLogError, match=r":2: not UTF-8"):
        read_events(p)


def test_an_oversized_line_is_refused_without_parsing(tmp_path: Path) -> None:
    huge = '{"t_ms": 1, "type": "final", "text": "' + "a" * (MAX_LINE_CHARS * 4) + '"}\n'
    p = write(tmp_path, GOOD + "\n" + huge)
    with pytest.raises(EventLogError, match=r":2: line longer than"):
        read_events(p)
