"""A real ``heard serve`` process for the benchmarks that measure one (bench/serve.py,
bench/abuse.py): on a throwaway SQLite store, from this checkout or another one's ``src/``."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of process ``pid`` so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def serving(
    users: list[str],
    src: Path | None = None,
    *,
    dense: bool = False,
    settings: dict[str, str] | None = None,
) -> Iterator[tuple[str, dict[str, str], int]]:
    """A ``heard serve`` process on SQLite (from the checkout ``src`` when given), with
    ``users`` added, lexical memory unless ``dense``, and any other ``settings`` (environment
    variables such as ``HEARD_SPARE_CPU``); its ``host:port``, each user's token and its pid.
    Stopped when the block ends."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "HEARD_DATABASE_URL": f"sqlite:///{tmp}/serve.db",
               "HEARD_DENSE": "1" if dense else "0", **(settings or {})}  # fmt: skip
        if src is not None:
            env["PYTHONPATH"] = str(src)
        heard = [sys.executable, "-m", "heard"]
        tokens = {}
        for name in users:
            added = subprocess.run([*heard, "users", "add", name], env=env, capture_output=True,
                                   text=True, check=True)  # fmt: skip
            tokens[name] = added.stdout.strip()
        port = free_port()
        server = subprocess.Popen(
            [*heard, "serve", "--port", str(port), "--uploads", tmp],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), 0.2).close()
                    break
                except OSError:
                    time.sleep(0.1)
            yield f"127.0.0.1:{port}", tokens, server.pid
        finally:
            server.terminate()
            server.wait(30)
