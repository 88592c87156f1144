"""Every failure a user can cause is one line on stderr, exit code 2, and nothing stored."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer

from heard.cli import app
from heard.samples import sample_meeting, sample_path
from heard.store.database import Database
from heard.store.views import list_meetings
from tests.cli.run import Ran, heard

UNREACHABLE = "postgresql+psycopg://nobody@127.0.0.1:1/x"
UNOPENABLE = "sqlite:////proc/nope/x.db"
CAROL = str(next(path for who, path, _ in sample_meeting().tracks if who == "carol"))
EVENTS = str(sample_path("jfk_partials.jsonl"))

# The least each command that takes --db needs before it opens the database.
DB_COMMANDS: dict[tuple[str, ...], list[str]] = {
    ("transcribe",): [f"carol={CAROL}"],
    ("export",): ["0123abcd"],
    ("meetings",): [],
    ("status",): ["0123abcd"],
    ("memory", "ingest"): ["{utterances}"],
    ("memory", "recall"): ["anything"],
    ("memory", "simulate"): ["anything"],
    ("live",): [EVENTS, "--speed", "0"],
    ("users", "add"): ["ana"],
    ("users", "token"): ["ana"],
    ("users", "revoke"): ["ana"],
    ("serve",): [],  # the store is checked before the port is taken
    ("demo",): [],
}


def one_line_error(result: Ran) -> str:
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("heard: error: ")
    return lines[0]


def commands_taking(option: str) -> set[tuple[str, ...]]:
    """Every command of the CLI with ``option``, as the words that call it."""
    found: set[tuple[str, ...]] = set()

    def walk(command: Any, path: tuple[str, ...]) -> None:
        # Typer ships its own click: a group is known by its subcommands, not by its class
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, (*path, name))
        if any(option in p.opts for p in command.params):
            found.add(path)

    walk(typer.main.get_command(app), ())
    return found


def test_the_table_holds_every_command_that_takes_db() -> None:
    assert commands_taking("--db") == set(DB_COMMANDS)


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        (UNREACHABLE, "cannot reach the database at postgresql+psycopg://nobody@127.0.0.1:1/x"),
        (UNOPENABLE, "cannot open the SQLite database /proc/nope/x.db"),
    ],
    ids=["unreachable-postgresql", "unopenable-sqlite"],
)
@pytest.mark.parametrize("command", sorted(DB_COMMANDS), ids=" ".join)
def test_a_database_that_cannot_be_had_is_one_line(
    tmp_path: Path, command: tuple[str, ...], url: str, problem: str
) -> None:
    utterances = tmp_path / "u.jsonl"
    utterances.write_text('{"id": "a", "speaker": "A", "text": "hi", "session": "s"}\n')
    args = [a.format(utterances=utterances) for a in DB_COMMANDS[command]]
    assert problem in one_line_error(heard(*command, *args, "--db", url, cwd=tmp_path))


@pytest.fixture
def bad_page_workspace(tmp_path: Path) -> Path:
    pages = tmp_path / "ws" / "pages"
    pages.mkdir(parents=True)
    (pages / "fine.md").write_text("---\nsummary: fine\n---\nbody\n")
    (pages / "latin1.md").write_bytes("---\nsummary: caf\xe9\n---\n".encode("latin-1"))
    return tmp_path / "ws"


@pytest.mark.parametrize(
    "command",
    [["memory", "recall", "anything", "--memory", "{ws}"],
     ["memory", "simulate", "anything", "--memory", "{ws}"],
     ["live", EVENTS, "--speed", "0", "--memory", "{ws}"]],
    ids=["recall", "simulate", "live"],
)  # fmt: skip
def test_a_page_that_is_not_utf8_is_skipped_with_one_line_naming_it(
    tmp_path: Path, bad_page_workspace: Path, command: list[str]
) -> None:
    # the rest of the memory still answers: one bad file must not take it down
    args = [a.format(ws=bad_page_workspace) for a in command]
    result = heard(*args, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    bad = bad_page_workspace / "pages" / "latin1.md"
    assert result.stderr.splitlines() == [
        f"heard: warning: {bad}: not UTF-8 text (bad byte at 16) (skipped)"
    ]


def test_memory_check_reports_a_page_that_is_not_utf8(
    tmp_path: Path, bad_page_workspace: Path
) -> None:
    result = heard("memory", "check", str(bad_page_workspace), cwd=tmp_path)
    assert result.returncode == 1
    assert f"{bad_page_workspace / 'pages' / 'latin1.md'}: not UTF-8 text" in result.stdout
    assert "1 pages" in result.stdout


def stored_meetings(db_file: Path) -> int:
    if not db_file.exists():
        return 0
    db = Database(f"sqlite:///{db_file}")
    return len(list_meetings(db)) if db.has_schema() else 0


@pytest.mark.parametrize(
    ("output", "problem"),
    [("/nonexistent-dir/out.txt", "folder /nonexistent-dir does not exist"),
     ("/proc/version", "cannot write in /proc"),
     ("{tmp}", "is a folder")],
    ids=["missing-folder", "unwritable-folder", "a-folder"],
)  # fmt: skip
@pytest.mark.parametrize("command", ["transcribe", "stream"])
def test_a_bad_output_is_refused_before_any_audio_is_read(
    tmp_path: Path, command: str, output: str, problem: str
) -> None:
    not_audio = tmp_path / "notes.txt"
    not_audio.write_text("not audio\n" * 100)  # decoding it would fail differently
    track = f"a={not_audio}" if command == "transcribe" else str(not_audio)
    out = output.format(tmp=tmp_path)
    assert problem in one_line_error(heard(command, track, "-o", out, cwd=tmp_path))
    assert stored_meetings(tmp_path / "m.db") == 0


def test_export_to_a_bad_output_or_a_full_device_is_one_line(tmp_path: Path) -> None:
    stored = heard("transcribe", f"carol={CAROL}", "-o", str(tmp_path / "t.txt"), cwd=tmp_path)
    assert stored.returncode == 0, stored.stderr
    meeting = stored.stderr.split("meeting ")[1].split()[0]
    line = one_line_error(heard("export", meeting, "-o", "/nonexistent/t.txt", cwd=tmp_path))
    assert "folder /nonexistent does not exist" in line
    assert "No space left on device" in one_line_error(
        heard("export", meeting, "-o", "/dev/full", cwd=tmp_path)
    )
    assert stored_meetings(tmp_path / "m.db") == 1


def test_standard_output_on_a_full_device_is_one_line(tmp_path: Path) -> None:
    # The real entry point: only a process of its own has a standard output that can fill up.
    with open("/dev/full", "w") as full:
        result = subprocess.run(
            [sys.executable, "-m", "heard", "replay", EVENTS],
            stdout=full, stderr=subprocess.PIPE, text=True, check=False, timeout=60,
        )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr == "heard: error: cannot write the output (No space left on device)\n"


@pytest.mark.parametrize("name", ["a\x01b", "tab\there", "zero\u200bwidth", "nul\x00"])
def test_a_user_name_with_control_characters_is_refused(tmp_path: Path, name: str) -> None:
    assert "control or invisible characters" in one_line_error(
        heard("users", "add", name, cwd=tmp_path)
    )
    assert heard("users", "token", name.replace("\x00", ""), cwd=tmp_path).returncode == 2


NESTED = "[" * 100_000
"""A file of nested brackets: Python's JSON parser gives up on it with a RecursionError."""


@pytest.mark.parametrize(
    "command",
    [("replay",), ("cadence",), ("live", "--speed", "0"), ("memory", "ingest"), ("phrases",)],
    ids=" ".join,
)
def test_deeply_nested_input_is_one_line(tmp_path: Path, command: tuple[str, ...]) -> None:
    nested = tmp_path / "nested.jsonl"
    nested.write_text(NESTED + "\n")
    words, options = command[:2] if command[0] == "memory" else command[:1], command[2:]
    if command[0] == "live":
        options = command[1:]
    result = heard(
        *words, str(nested), *options, env={"HEARD_DATABASE_URL": f"sqlite:///{tmp_path / 'h.db'}"}
    )
    assert "nested too deeply" in one_line_error(result)


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ('{"id": "a", "speaker": "ana", "text": "' + "x" * (1 << 20) + '"}', "line longer than"),
        ('{"id": "a", "speaker": "ana", "text": "nul \\u0000"}', "NUL characters"),
        (
            '{"id": "a", "speaker": "ana", "text": "pay 10", "text": "pay 1000"}',
            "the utterance names 'text' twice in one object",
        ),
    ],
    ids=["oversize line", "NUL", "a key twice"],
)
def test_memory_ingest_refuses_what_no_store_keeps_in_one_line(
    tmp_path: Path, line: str, problem: str
) -> None:
    utterances = tmp_path / "u.jsonl"
    utterances.write_text(line + "\n")
    db = tmp_path / "h.db"
    result = heard(
        "memory", "ingest", str(utterances), env={"HEARD_DATABASE_URL": f"sqlite:///{db}"}
    )
    assert problem in one_line_error(result)


@pytest.mark.skipif(not Path("/proc/self/mem").exists(), reason="Linux's /proc")
def test_memory_ingest_of_a_file_that_cannot_be_read_is_one_line(tmp_path: Path) -> None:
    """/proc/self/mem is a regular file that no read() of its start can take (issue 28)."""
    db = tmp_path / "h.db"
    result = heard(
        "memory", "ingest", "/proc/self/mem", env={"HEARD_DATABASE_URL": f"sqlite:///{db}"}
    )
    assert "/proc/self/mem: cannot read" in one_line_error(result)


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (["replay", "--debounce-ms", "-1", EVENTS], "Invalid value for '--debounce-ms'"),
        (["replay"], "Missing argument 'events'"),
        (["--nope"], "No such option: --nope"),
        (["memory", "recall"], "Missing argument"),
        (["nonsense"], "No such command 'nonsense'"),
    ],
    ids=["bad value", "missing argument", "unknown option", "subcommand", "unknown command"],
)
def test_a_usage_error_is_one_line_saying_where_the_help_is(args: list[str], problem: str) -> None:
    """Issue 28: Typer's usage box is not heard's error format."""
    line = one_line_error(heard(*args))
    assert problem in line
    assert line.endswith("--help`)")
