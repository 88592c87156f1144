"""Who holds a claim on a track: this process, named so that its death can be seen at once.

A claim records ``host:pid:start`` of the process that made it (``start`` is the process's
start time in clock ticks since boot, from /proc, so a reused pid is not mistaken for the
holder). On the holder's own host, a claim whose process is gone is abandoned now, not after
the stuck timeout; a claim from another host can only be judged by that timeout.
"""

from __future__ import annotations

import os
import socket
from functools import cache
from pathlib import Path

__all__ = ["LOCAL", "Holders", "holder_is_gone", "this_holder"]


def _start_ticks(pid: int) -> str | None:
    """The start time of process ``pid`` (clock ticks since boot), or None where /proc is not."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name (field 2) may hold spaces and parentheses: split after its last ')'
    return stat.rsplit(")", 1)[1].split()[19]


@cache
def this_holder() -> str:
    """This process, as recorded on the claims it makes."""
    return f"{socket.gethostname()}:{os.getpid()}:{_start_ticks(os.getpid()) or '-'}"


def holder_is_gone(holder: str | None) -> bool:
    """True when ``holder`` is a process of this host that no longer runs.

    False when it runs, when it is another host's (nothing can be told from here), or when
    the claim names no holder (made before holders were recorded).
    """
    if not holder:
        return False
    host, _, rest = holder.partition(":")
    pid_text, _, start = rest.partition(":")
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # it runs, as another user
    return start not in ("", "-") and _start_ticks(pid) not in (None, start)


class Holders:
    """What an observer knows of the holders of claims and runs. This one knows only what
    this host shows: a process of its own that no longer runs is gone; of any other it knows
    nothing (a claim's age decides). ``heard.store.leases`` knows the leases too."""

    def gone(self, holder: str | None) -> bool:
        """Whether ``holder`` no longer runs: its claims and runs may be taken over."""
        return holder_is_gone(holder)

    def renewing(self, holder: str | None) -> bool:
        """Whether ``holder`` is known to run: its claims do not grow stale with age."""
        return False


LOCAL = Holders()
