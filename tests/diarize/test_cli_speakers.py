"""``heard transcribe FILE --speakers auto|N --names``: bad values get one line, and a real
two-voice recording becomes two participants."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from heard.cli import app

runner = CliRunner()
AUDIO = Path(__file__).resolve().parents[1] / "data" / "audio"


@pytest.mark.parametrize("value", ["0", "17", "-1", "two", "1.5", "", "\u00b2"])
def test_bad_speaker_counts_get_one_line(value: str, tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'm.db'}"
    result = runner.invoke(app, ["transcribe", str(AUDIO / "jfk.flac"), "--speakers", value,
                                 "--db", db])  # fmt: skip
    assert result.exit_code != 0
    lines = result.output.strip().splitlines()
    assert len(lines) == 1
    assert "--speakers" in lines[0]
    assert "from 1 to 16" in lines[0]
    assert not (tmp_path / "m.db").exists() or "meeting" not in result.output


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (["jfk=JFK", "--speakers", "2"], "without NAME="),
        (["jfk=JFK", "--names", "ana"], "without NAME="),
        (["JFK", "--names", "ana,,bob"], "no empty one"),
        (["JFK", "--speakers", "1", "--names", "ana,bob"], "2 names for 1 speakers"),
        (["JFK", "--names", "ana,Ana"], "named twice"),
    ],
)
def test_speaker_options_that_cannot_apply(args: list[str], problem: str, tmp_path: Path) -> None:
    jfk = str(AUDIO / "jfk.flac")
    argv = ["transcribe", *(a.replace("JFK", jfk) for a in args), "--db",
            f"sqlite:///{tmp_path / 'm.db'}"]  # fmt: skip
    result = runner.invoke(app, argv)
    assert result.exit_code != 0
    assert problem in result.output
    assert len(result.output.strip().splitlines()) == 1


@pytest.mark.asr
@pytest.mark.system
def test_a_two_voice_call_becomes_two_named_participants(tmp_path: Path) -> None:
    if shutil.which("espeak-ng") is None or shutil.which("sox") is None:
        pytest.fail("espeak-ng and sox are missing: run the tests through tools/test.sh")
    import random

    import soundfile as sf

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from conversations import espeak_speakers, make_conversation

    people = espeak_speakers(tmp_path, count=4)
    call = make_conversation("call", [people[3], people[2]], random.Random(7), turns=6)
    sf.write(tmp_path / "call.wav", call.samples, 16000)
    db = f"sqlite:///{tmp_path / 'm.db'}"
    result = runner.invoke(app, ["transcribe", str(tmp_path / "call.wav"), "--names", "ana,bob",
                                 "--db", db, "-f", "json"])  # fmt: skip
    assert result.exit_code == 0, result.output
    import json

    doc = json.loads(result.stdout)
    speakers = {p["participant"] for p in doc}
    assert speakers == {"ana", "bob"}
