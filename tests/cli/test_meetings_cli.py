from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from heard.cli import app
from heard.cli.app import write_output
from heard.cli.meetings import parse_track
from heard.errors import InputError
from heard.store.database import Database
from heard.store.views import list_meetings
from tests.cli.run import heard
from tests.conftest import AUDIO

runner = CliRunner()
SPEC_EXAMPLE = {
    "participants": {
        "A": {"offset_s": 0.0, "segments": [{"start": 0, "end": 20, "text": "I'll start"},
                                            {"start": 30, "end": 40, "text": "so"}]},
        "B": {"offset_s": 5.0, "segments": [{"start": 5, "end": 15, "text": "I'm here"}]},
    }
}  # fmt: skip


@pytest.mark.parametrize(
    "command", ["transcribe", "phrases", "export", "meetings", "status", "worker", "models"]
)
def test_help(command: str) -> None:
    result = runner.invoke(app, [command, "--help"])
    assert result.exit_code == 0
    assert "Usage" in result.output


@pytest.mark.parametrize(
    ("arg", "participant", "suffix", "offset", "channel"),
    [
        ("alice=a.wav", "alice", "a.wav", 0.0, None),
        ("bob=b.wav@30", "bob", "b.wav", 30.0, None),
        ("bob=b.wav@12.5", "bob", "b.wav", 12.5, None),
        ("bob=b.wav@1:30", "bob", "b.wav", 90.0, None),
        ("left=s.wav#left@2", "left", "s.wav", 2.0, 0),
        ("right=s.wav#R", "right", "s.wav", 0.0, 1),
        (" Carol Ann =dir/c d.flac", "Carol Ann", "dir/c d.flac", 0.0, None),
    ],
)
def test_parse_track(
    arg: str, participant: str, suffix: str, offset: float, channel: int | None
) -> None:
    spec = parse_track(arg)
    assert (spec.participant, spec.offset_s, spec.channel) == (participant, offset, channel)
    assert spec.location.endswith(suffix)
    assert Path(spec.location).is_absolute()


@pytest.mark.parametrize(
    ("arg", "problem"),
    [
        ("=a.wav", "expected NAME=FILE"),
        ("alice=", "expected NAME=FILE"),
        ("alice=a.wav@soon", "bad offset 'soon'"),
        ("alice=a.wav@-3", "bad offset '-3'"),
        ("alice=a.wav#middle", "bad channel 'middle'"),
        ("alice=@3", "no file"),
    ],
)
def test_parse_track_rejects(arg: str, problem: str) -> None:
    with pytest.raises(InputError, match=problem):
        parse_track(arg)


def test_a_plain_file_is_a_recording_of_several_people_to_diarize() -> None:
    spec = parse_track("calls/call.wav#right@1:05")
    assert (spec.participant, spec.channel, spec.offset_s) == ("call", 1, 65.0)
    assert spec.speakers == "auto"
    assert spec.location.endswith("calls/call.wav")
    assert parse_track("bob=call.wav").speakers is None  # one participant's own track


def test_phrases_from_a_file_and_from_stdin(tmp_path: Path) -> None:
    path = tmp_path / "segments.json"
    path.write_text(json.dumps(SPEC_EXAMPLE))
    expected = [
        {"participant": "A", "start": 0.0, "end": 20.0, "text": "I'll start"},
        {"participant": "B", "start": 10.0, "end": 20.0, "text": "I'm here"},
        {"participant": "A", "start": 30.0, "end": 40.0, "text": "so"},
    ]
    from_file = heard("phrases", str(path))
    assert from_file.returncode == 0, from_file.stderr
    assert json.loads(from_file.stdout) == expected
    from_stdin = heard("phrases", "-", stdin=json.dumps(SPEC_EXAMPLE))
    assert json.loads(from_stdin.stdout) == expected


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("{oops", "malformed JSON"),
        ("[]", "not segment JSON"),
        (
            '{"participants": {"A": {"segments": [{"start": 5, "end": 1, "text": "x"}]}}}',
            "before start",
        ),
        (
            '{"participants": {"A": {"segments": [{"start": "0", "end": 1, "text": "x"}]}}}',
            "participants/A/segments/0/start",
        ),
        ('{"participants": {"A": {"offset_s": -1, "segments": []}}}', "offset_s"),
    ],
)
def test_phrases_rejects_bad_segment_json(tmp_path: Path, content: str, problem: str) -> None:
    path = tmp_path / "segments.json"
    path.write_text(content)
    result = heard("phrases", str(path))
    assert result.returncode == 2
    assert result.stderr.startswith(f"heard: error: {path}: ")
    assert problem in result.stderr
    assert "Traceback" not in result.stderr
    missing = heard("phrases", str(tmp_path / "none.json"))
    assert missing.returncode == 2
    assert "no such file" in missing.stderr


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    import os

    return {**os.environ, "HEARD_DATABASE_URL": f"sqlite:///{tmp_path / 'cli.db'}"}


def stored_meetings(env: dict[str, str]) -> int:
    db = Database(env["HEARD_DATABASE_URL"])
    return len(list_meetings(db)) if db.has_schema() else 0


@pytest.mark.parametrize(
    ("make", "args", "problem"),
    [
        (None, ["alice={missing}"], "no such file"),
        ("empty", ["alice={file}"], "empty file, expected audio"),
        ("text", ["alice={file}"], "cannot read as audio"),
        ("text", ["alice={jfk}", "Alice={jfk}"], "named twice"),
        (None, ["alice={jfk}@ten"], "bad offset 'ten'"),
        (None, ["alice={jfk}", "--format", "docx"], "unknown format 'docx'"),
    ],
)
def test_transcribe_rejects_bad_input_and_stores_nothing(
    tmp_path: Path, env: dict[str, str], make: str | None, args: list[str], problem: str
) -> None:
    file = tmp_path / "input.wav"
    if make == "empty":
        file.write_bytes(b"")
    elif make == "text":
        file.write_text("this is not audio\n" * 50)
    jfk = AUDIO / "jfk.flac"
    filled = [a.format(missing=tmp_path / "missing.wav", file=file, jfk=jfk) for a in args]
    result = heard("transcribe", *filled, env=env)
    assert result.returncode == 2, result.stderr
    assert problem in result.stderr
    assert "Traceback" not in result.stderr
    assert stored_meetings(env) == 0
    if problem in ("no such file", "empty file, expected audio", "cannot read as audio"):
        # the files are checked before anything is written: not even the schema
        assert not Database(env["HEARD_DATABASE_URL"]).has_schema()


def test_export_and_status_of_an_unknown_meeting(env: dict[str, str]) -> None:
    for command in ("export", "status"):
        result = heard(command, "0123456789", env=env)
        assert result.returncode == 2
        assert "no meeting '0123456789'" in result.stderr


def test_meetings_on_an_empty_database(env: dict[str, str]) -> None:
    result = heard("meetings", env=env)
    assert result.returncode == 0
    assert "no meetings" in result.stdout
    assert json.loads(heard("meetings", "--json", env=env).stdout) == []


def test_output_to_a_device_or_pipe_writes_into_it_and_leaves_it_in_place(tmp_path: Path) -> None:
    # `-o /dev/null` once replaced /dev/null with a regular file (write, then rename over it).
    # A FIFO stands in for the device so that the bug, seeded again, harms nothing.
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received: list[str] = []
    reader = threading.Thread(
        target=lambda: received.append(fifo.read_text(encoding="utf-8")), daemon=True
    )
    reader.start()
    write_output("alice: hello\n", fifo)
    reader.join(timeout=10)
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert received == ["alice: hello\n"]


def test_transcribe_refuses_a_track_over_the_limit_before_decoding_it(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """Issue 28: hours of low-bitrate audio fit in a small file; the limit is read from the
    file's header, and nothing is decoded or stored."""
    result = heard(
        "transcribe", f"alice={AUDIO / 'jfk.flac'}", env={**env, "HEARD_MAX_TRACK_S": "5"}
    )
    assert result.returncode == 2
    assert result.stderr.strip().endswith(
        "jfk.flac: 11 s of audio; a track may hold at most 5 s ($HEARD_MAX_TRACK_S)"
    )
    assert not Database(env["HEARD_DATABASE_URL"]).has_schema()


def test_a_recording_whose_name_holds_track_syntax_is_taken_whole(tmp_path: Path) -> None:
    for name in ("take=2.wav", "rec@home.wav", "call#1.wav"):
        (tmp_path / name).write_bytes(b"")
        spec = parse_track(str(tmp_path / name))
        assert spec.location == str(tmp_path / name)
        assert (spec.speakers, spec.offset_s, spec.channel) == ("auto", 0.0, None)
    with pytest.raises(InputError, match=r"track 'missing\.wav@soon': bad offset 'soon'"):
        parse_track("missing.wav@soon")
