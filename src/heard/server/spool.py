"""Files an upload is kept in while one request transcribes it (OpenAI's and Deepgram's
routes): in the uploads volume's ``.transcriptions`` folder, never ``$TMPDIR``, and removed
when the request ends.

A process killed mid-request (kill -9, a crash, a stop that could not wait) cannot remove its
file, and each may be as large as the upload limit. The names say which machine and process
made them, so a server starting removes the leftovers of processes that are gone, and never
the file of one still running beside it on the same volume. Files another machine left are
removed once a day old. A process is taken for the maker of a file only if it started before
the file was last written (a dead process's number may be given to a new one).
"""

from __future__ import annotations

import contextlib
import os
import socket
import tempfile
import time
from pathlib import Path

__all__ = ["FOLDER", "clear_leftovers", "spool_file"]

FOLDER = ".transcriptions"
FOREIGN_AGE_S = 24 * 3600.0
"""A leftover from another machine is removed when this old: none of its requests lasts so
long."""


def _host() -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in socket.gethostname())[:64]


def spool_file(uploads: Path) -> tuple[int, Path]:
    """A new, empty file for one request's upload: its descriptor and path."""
    folder = uploads / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(dir=folder, prefix=f"{_host()}.{os.getpid()}.", suffix=".audio")
    return handle, Path(name)


def clear_leftovers(uploads: Path) -> int:
    """Remove the upload files of processes that are gone; how many were removed."""
    folder = uploads / FOLDER
    if not folder.is_dir():
        return 0
    host, removed = _host(), 0
    for path in folder.iterdir():
        if not path.is_file():
            continue
        made_by = path.name.split(".")
        if len(made_by) >= 3 and made_by[0] == host and made_by[1].isdigit():
            pid = int(made_by[1])
            with contextlib.suppress(OSError):
                if pid != os.getpid() and _maker_alive(pid, path.stat().st_mtime):
                    continue
        elif len(made_by) >= 3 and made_by[1].isdigit():  # another machine's
            with contextlib.suppress(OSError):
                if time.time() - path.stat().st_mtime < FOREIGN_AGE_S:
                    continue
        with contextlib.suppress(OSError):
            path.unlink()
            removed += 1
    return removed


def _maker_alive(pid: int, written: float) -> bool:
    """Whether process ``pid`` runs and may have written a file last at ``written``: a process
    that started after that is another one, given a dead one's number."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        pass
    started = _start_time(pid)
    return started is None or started <= written + 1.0


def _start_time(pid: int) -> float | None:
    """When process ``pid`` started (seconds since the epoch), where ``/proc`` says."""
    try:
        ticks = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
        boot = next(float(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines()
                    if line.startswith("btime "))  # fmt: skip
    except (OSError, ValueError, IndexError, StopIteration):
        return None
    return boot + ticks / os.sysconf("SC_CLK_TCK")
