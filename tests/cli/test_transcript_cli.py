from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from heard.cli import app
from tests.cli.run import heard, heard_process

runner = CliRunner()


@pytest.mark.parametrize("command", [[], ["replay"], ["demo"]])
def test_every_command_has_help(command: list[str]) -> None:
    result = runner.invoke(app, [*command, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage" in result.output


def test_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.startswith("heard ")


@pytest.mark.parametrize("log", ["jfk_log", "runon_log"])
def test_replay_prints_each_event_then_a_summary(log: str, request: pytest.FixtureRequest) -> None:
    path: Path = request.getfixturevalue(log)
    result = runner.invoke(app, ["replay", str(path)])
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    n_events = len(path.read_text().splitlines())
    assert len(lines) == 1 + n_events + 1  # header, events, summary
    assert "speaker#1" in lines[1]
    assert lines[-1].startswith("turns 1 · revisions ")
    assert "fire_final" in lines[-2]


def test_replay_json(jfk_log: Path) -> None:
    result = runner.invoke(app, ["replay", str(jfk_log), "--json"])
    assert result.exit_code == 0
    doc = json.loads(result.output)
    assert doc["summary"]["turns"] == 1
    assert doc["summary"]["revisions"] == len(doc["steps"]) == 22
    last = doc["steps"][-1]
    assert last["type"] == "final"
    assert last["stable"].startswith("And so my fellow Americans")
    assert last["unstable"] == ""


def test_replay_exact_word_match_stabilizes_later(jfk_log: Path) -> None:
    normal = json.loads(runner.invoke(app, ["replay", str(jfk_log), "--json"]).output)
    exact = json.loads(
        runner.invoke(app, ["replay", str(jfk_log), "--json", "--word-match", "exact"]).output
    )
    stable_normal = sum(len(s["stable"].split()) for s in normal["steps"][:-1])
    stable_exact = sum(len(s["stable"].split()) for s in exact["steps"][:-1])
    assert stable_normal > stable_exact


def test_replay_with_an_entity_marks_the_signal(tmp_path: Path) -> None:
    p = tmp_path / "e.jsonl"
    p.write_text(
        '{"t_ms": 0, "type": "partial", "text": "ask Kushal about"}\n'
        '{"t_ms": 10, "type": "partial", "text": "ask Kushal about it"}\n'
    )
    result = runner.invoke(app, ["replay", str(p), "--entity", "Kushal"])
    assert "fire_signal" in result.output
    assert "(Kushal)" in result.output


@pytest.mark.asr
def test_demo_transcribes_the_sample_meeting_and_replays_partials() -> None:
    result = runner.invoke(app, ["demo"])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if line.startswith("[00:")]
    assert [line.split("] ")[1].split(":")[0] for line in lines] == [
        "alice",
        "carol",
        "bob",
        "alice",
    ]
    assert len(lines[1].split(": ", 1)[1].split()) <= 3, "Carol's interjection, 'uh-huh'"
    recalled = result.output.split("== Memory:")[1].splitlines()[1]
    # the first thing recalled is what Alice said last ("Let's meet again on Friday."), as the
    # timeline reads it on this machine
    assert recalled.split("alice: ", 1)[1] in lines[3]
    assert "jfk_partials.jsonl" in result.output
    assert "runon_partials.jsonl" in result.output
    assert "ask what you can do for your country" in result.output.lower()


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "no such file"),
        ("", "no events"),
        ('{"t_ms": 1, "type": "partial", "text": "a"}\n{oops\n', ":2: malformed JSON"),
        ('{"t_ms": 1, "type": "shout", "text": "a"}\n', ":1: unknown event type 'shout'"),
        (
            '{"t_ms": 9, "type": "partial", "text": "a"}\n'
            '{"t_ms": 3, "type": "final", "text": "a"}',
            ":2: t_ms decreased",
        ),
    ],
)
def test_bad_input_is_one_line_exit_2_no_traceback(
    tmp_path: Path, content: str | None, expected: str
) -> None:
    p = tmp_path / "events.jsonl"
    if content is not None:
        p.write_text(content)
    result = heard("replay", str(p))
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"heard: error: {p}")
    assert expected in lines[0]
    assert "Traceback" not in result.stderr


def test_unknown_word_match_is_a_clean_error(jfk_log: Path) -> None:
    result = heard("replay", str(jfk_log), "--word-match", "fuzzy")
    assert result.returncode == 2
    assert "choose one of: exact, normalized" in result.stderr
    assert "Traceback" not in result.stderr


def test_the_real_entry_point_runs_and_reports_bad_input_in_one_line(
    tmp_path: Path, jfk_log: Path
) -> None:
    ok = heard_process("replay", str(jfk_log))
    assert ok.returncode == 0, ok.stderr
    assert "fire_final" in ok.stdout
    missing = tmp_path / "missing.jsonl"
    bad = heard_process("replay", str(missing))
    assert (bad.returncode, bad.stdout) == (2, "")
    assert bad.stderr == f"heard: error: {missing}: no such file\n"


def _commands(command: Any, path: list[str]) -> Iterator[tuple[list[str], Any]]:
    """Every command under ``command`` (typer's own click types: duck-typed)."""
    yield path, command
    for name, sub in getattr(command, "commands", {}).items():
        yield from _commands(sub, [*path, name])


def test_help_shows_the_extras_it_names() -> None:
    """Help is rich markup, where "[dense]" is a tag and vanishes: "pip install heard[dense]"
    read "pip install heard" until each extra was escaped."""
    named = 0
    for path, command in _commands(typer.main.get_command(app), []):
        texts = [command.help or "", *(getattr(p, "help", None) or "" for p in command.params)]
        extras = {m for text in texts for m in re.findall(r"heard\\?\[(\w+)\]", text)}
        if not extras:
            continue
        result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
        shown = " ".join(result.output.replace("│", " ").split())
        for extra in extras:
            named += 1
            assert f"heard[{extra}]" in shown, (path, extra, shown)
    assert named >= 3  # memory recall's --dense, models, and every --model option
