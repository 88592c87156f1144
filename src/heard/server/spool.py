"""Files an upload is kept in while one request transcribes it (OpenAI's and Deepgram's
routes): in the uploads volume's ``.transcriptions`` folder, never ``$TMPDIR``, and removed
when the request ends.

A process killed mid-request (kill -9, a crash, a stop that could not wait) cannot remove its
file, and each may be as large as the upload limit. The names say which machine and process
made them, so a server starting removes the leftovers of processes that are gone, and never
the file of one still running beside it on the same volume. Files another machine left are
removed once a day old.
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
            if pid != os.getpid() and _alive(pid):
                continue
        elif len(made_by) >= 3 and made_by[1].isdigit():  # another machine's
            with contextlib.suppress(OSError):
                if time.time() - path.stat().st_mtime < FOREIGN_AGE_S:
                    continue
        with contextlib.suppress(OSError):
            path.unlink()
            removed += 1
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True
