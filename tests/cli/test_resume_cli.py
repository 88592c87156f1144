"""A ``heard transcribe`` killed mid-run is seen as interrupted and finished by ``--resume``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import wave
from pathlib import Path

import numpy as np
import pytest

from heard.asr.audio import load_audio
from heard.errors import StoreError
from heard.store.database import Database
from heard.store.holder import holder_is_gone, this_holder
from heard.store.models import TrackStatus
from heard.store.views import list_meetings, meeting_phrases, track_states
from tests.cli.run import heard
from tests.conftest import AUDIO


def long_speech(path: Path, repeats: int) -> Path:
    """JFK ``repeats`` times over: long enough for a run to be killed in the middle."""
    samples = np.tile(load_audio(AUDIO / "jfk.flac"), repeats)
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16_000)
        w.writeframes((samples * 32767).astype(np.int16).tobytes())
    return path


def wait_for(condition: object, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_a_holder_is_gone_only_when_its_process_on_this_host_is() -> None:
    assert not holder_is_gone(this_holder())
    assert not holder_is_gone(None)
    assert not holder_is_gone("another-host:1:1")  # cannot be told from here: the timeout decides
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    host = this_holder().split(":")[0]
    assert holder_is_gone(f"{host}:{child.pid}:-")
    # a live pid whose start time differs is a reused pid, not the holder
    assert holder_is_gone(f"{host}:{os.getpid()}:1")


@pytest.mark.asr
def test_kill_9_mid_transcription_then_resume_finishes_the_same_meeting(tmp_path: Path) -> None:
    db_file = tmp_path / "m.db"
    url = f"sqlite:///{db_file}"
    short = AUDIO / "jfk.flac"
    long = long_speech(tmp_path / "long.wav", 8)
    env = {**os.environ, "HEARD_DATABASE_URL": url}
    child = subprocess.Popen(
        [sys.executable, "-m", "heard", "transcribe", f"a={short}", f"b={long}"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    db = Database(url)

    def long_track_claimed() -> bool:
        if child.poll() is not None:
            raise AssertionError("heard transcribe ended before it could be killed")
        try:
            if not db_file.exists() or not db.has_schema() or not list_meetings(db):
                return False
            states = {t.participant: t.status for t in track_states(db, list_meetings(db)[0].id)}
        except StoreError:  # the child is still creating the schema
            return False
        return states.get("b") is TrackStatus.TRANSCRIBING

    try:
        wait_for(long_track_claimed, 120, "the long track to be claimed")
    finally:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
    [meeting] = list_meetings(db)
    mid = str(meeting.id)

    status = heard("status", mid[:8], "--db", url)
    assert status.returncode == 0, status.stderr
    assert status.stdout.splitlines()[0].split()[1] == "interrupted"
    assert "is gone" in status.stdout
    assert f"heard transcribe --resume {mid[:8]}" in status.stdout

    unfinished = heard("export", mid[:8], "--db", url)
    assert unfinished.returncode == 2
    assert "is not finished" in unfinished.stderr
    assert "b interrupted" in unfinished.stderr

    resumed = heard("transcribe", "--resume", mid[:8], "--db", url, "-f", "json")
    assert resumed.returncode == 0, resumed.stderr
    assert [m.id for m in list_meetings(db)] == [meeting.id]  # no second meeting
    states = track_states(db, mid)
    assert {t.status for t in states} == {TrackStatus.DONE}
    assert {t.participant: t.attempts for t in states}["b"] == 2  # the killed run counted
    phrases = meeting_phrases(db, mid)
    assert {p.participant for p in phrases} == {"a", "b"}
    keys = [(p.participant, p.start_s, p.text) for p in phrases]
    assert len(keys) == len(set(keys))  # no phrase twice
    assert heard("export", mid[:8], "--db", url).returncode == 0
    again = heard("transcribe", "--resume", mid[:8], "--db", url)  # finished: nothing to redo
    assert again.returncode == 0, again.stderr
    assert len(meeting_phrases(db, mid)) == len(phrases)
