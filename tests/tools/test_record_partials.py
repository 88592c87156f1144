"""The recorder that made the bundled logs, run for real on fresh espeak-ng speech."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tests.reading import assert_hears

from heard.transcript.events import EventKind, read_events
from heard.transcript.stabilizer import TranscriptStabilizer

REPO = Path(__file__).resolve().parents[2]
TOOL = REPO / "tools" / "record_partials.py"

pytestmark = [pytest.mark.asr, pytest.mark.system]


def speak(text: str, out: Path) -> Path:
    if shutil.which("espeak-ng") is None:
        pytest.fail("espeak-ng is missing: run the tests through tools/test.sh, which installs it")
    subprocess.run(["espeak-ng", "-s", "140", "-w", str(out), text], check=True)
    return out


def test_records_a_replayable_log_from_real_speech(tmp_path: Path) -> None:
    wav = speak("the weather is nice today and we are going to the market", tmp_path / "s.wav")
    log = tmp_path / "events.jsonl"
    subprocess.run(
        [sys.executable, str(TOOL), str(wav), "-o", str(log), "--chunk-ms", "1000",
         "--speaker", "alice", "--beam-size", "1"],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    events = read_events(log)
    assert events[-1].kind is EventKind.FINAL
    assert all(e.kind is EventKind.PARTIAL for e in events[:-1])
    assert len(events) >= 3
    assert {e.speaker for e in events} == {"alice"}
    # tiny.en on espeak-ng speech: most words survive ("weather" may not, and CPUs differ)
    assert_hears(events[-1].text, "the weather is nice today and we are going to the market")
    session = TranscriptStabilizer()
    steps = list(session.replay(events))
    assert steps[-1].hypothesis.final
    assert session.summary.turns == 1


def test_a_missing_or_corrupt_file_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "noise.wav"
    bad.write_bytes(b"RIFF....not audio at all")
    for path in (tmp_path / "missing.wav", bad):
        result = subprocess.run(
            [sys.executable, str(TOOL), str(path), "-o", str(tmp_path / "out.jsonl")],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert result.returncode == 2
        assert str(path) in result.stderr
        assert not (tmp_path / "out.jsonl").exists()
