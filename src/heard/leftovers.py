"""Files a process keeps only while it works (an upload being received, a request's audio
spooled to disk), and how a process starting later tells which of them were left behind.

Such a file's name begins with its maker's host and process number (``maker_prefix``). A
process killed mid-write (kill -9, a crash, a stop that could not wait) cannot remove its
file, and each may be as large as the upload limit; a server starting removes those whose
maker is gone (``remove_left_behind``), and never the file of a process still running beside
it on the same volume (a second server on the same uploads folder). A process is taken for
the maker only if it started before the file was last written: a dead process's number may
be given to a new one. Another machine's files are taken for left behind once a day old,
since nothing here can tell whether their maker still runs.
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
from collections.abc import Iterable
from pathlib import Path

__all__ = ["FOREIGN_AGE_S", "maker_is_gone", "maker_prefix", "remove_left_behind"]

FOREIGN_AGE_S = 24 * 3600.0
"""A file another machine made is taken for left behind when this old: none of its uploads or
requests lasts so long."""


def _host() -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in socket.gethostname())[:64]


def maker_prefix() -> str:
    """What this process puts first in the name of a file it keeps while it works:
    ``host.pid.`` (after the dot of a hidden file)."""
    return f"{_host()}.{os.getpid()}."


def maker_is_gone(path: Path) -> bool:
    """Whether the process that made ``path`` (named by ``maker_prefix``) is gone, as a process
    starting up judges it. A name that names no maker (an older heard's) has none to wait for;
    one naming this very process is an earlier one's that had the same number (a restarted
    container's), since this one, starting, has made nothing yet."""
    fields = path.name.removeprefix(".").split(".")
    if len(fields) < 3 or not fields[1].isdigit():
        return True
    try:
        written = path.stat().st_mtime
    except OSError:  # removed meanwhile: nothing to keep
        return True
    host, pid = fields[0], int(fields[1])
    if host != _host():
        return time.time() - written >= FOREIGN_AGE_S
    return pid == os.getpid() or not _maker_alive(pid, written)


def remove_left_behind(paths: Iterable[Path]) -> int:
    """Remove those of ``paths`` whose maker is gone (``maker_is_gone``); how many were."""
    removed = 0
    for path in paths:
        if path.is_file() and maker_is_gone(path):
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
