"""Live decoding ahead of bulk work (issue 71): the threads that transcribe whole files run at
a lower priority than the live decoders, the model's own threads included."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import pytest

from heard.work import BULK_NICE, lower_priority

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread nice")


def nice_of(tid: int) -> int:
    return os.getpriority(os.PRIO_PROCESS, tid)


def test_a_thread_that_does_bulk_work_lowers_only_its_own_priority() -> None:
    seen: dict[str, int] = {}

    def worker() -> None:
        lower_priority()
        seen["worker"] = nice_of(threading.get_native_id())
        lower_priority()  # once is enough; again changes nothing
        seen["again"] = nice_of(threading.get_native_id())

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    assert seen == {"worker": BULK_NICE, "again": BULK_NICE}
    assert nice_of(threading.get_native_id()) < BULK_NICE  # this thread is not lowered


THREADS = """
import json, os, sys, threading
from heard.asr.whisper import FasterWhisperTranscriber, WhisperOptions
from heard.work import lower_priority
import faster_whisper  # what importing it starts is not the model's

def threads():
    return {int(t) for t in os.listdir(f"/proc/{os.getpid()}/task")}

before = threads()
transcriber = FasterWhisperTranscriber(WhisperOptions(bulk=sys.argv[2] == "bulk"))
transcriber.prepare()  # loaded on this ordinary thread, as heard serve loads it at start
def run():
    lower_priority()  # as the server's runner threads and file routes do
    transcriber.transcribe(sys.argv[1])
worker = threading.Thread(target=run)
worker.start()
worker.join()  # the model's threads, and OpenMP's that its first decode started, remain
made = threads() - before
def nice(t):
    try:
        return os.getpriority(os.PRIO_PROCESS, t)
    except ProcessLookupError:  # a short-lived thread (the VAD's) that ended meanwhile
        return None
print(json.dumps({t: n for t in made if (n := nice(t)) is not None}))
"""


@pytest.mark.asr
@pytest.mark.parametrize("kind", ["bulk", "live"])
def test_every_thread_of_a_bulk_model_runs_at_bulk_priority(kind: str) -> None:
    """Seeded: a bulk model loaded on an ordinary thread leaves its compute threads at the
    live decoders' priority (the "live" case shows it)."""
    from tests.conftest import AUDIO

    out = subprocess.run([sys.executable, "-c", THREADS, str(AUDIO / "jfk.flac"), kind],
                         capture_output=True, text=True, timeout=300, check=True)  # fmt: skip
    made = json.loads(out.stdout.strip().splitlines()[-1])
    assert len(made) >= 2, made  # the model's worker, and its decode threads
    if kind == "bulk":
        assert set(made.values()) == {BULK_NICE}, made
    else:
        assert 0 in made.values(), made
