"""Run ``heard`` for a test: in this process through Typer's CliRunner (fast, the default), or
as the real entry point in a process of its own (the few smoke tests that need one)."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from typer.testing import CliRunner

from heard.cli import app


@dataclass(frozen=True, slots=True)
class Ran:
    returncode: int
    stdout: str
    stderr: str


def _overrides(cwd: Path | None, env: Mapping[str, str | None] | None) -> dict[str, str | None]:
    """No LLM provider; with ``cwd``, a SQLite store of its own in it; then ``env``."""
    values: dict[str, str | None] = {"HEARD_LLM_PROVIDER": None}
    if cwd is not None:
        values["HEARD_DATABASE_URL"] = f"sqlite:///{cwd / 'm.db'}"
    values.update(env or {})
    return values


def heard(
    *args: str,
    cwd: Path | None = None,
    stdin: str | None = None,
    env: Mapping[str, str | None] | None = None,
) -> Ran:
    """``heard ARGS`` in this process. An exception heard did not mean (a bug) is raised here
    rather than turned into an exit code, so a test cannot mistake it for a clean failure."""
    with contextlib.chdir(cwd) if cwd is not None else contextlib.nullcontext():
        result = CliRunner().invoke(
            app, list(args), input=stdin, env=_overrides(cwd, env), catch_exceptions=False
        )
    return Ran(result.exit_code, result.stdout, result.stderr)


def heard_process(
    *args: str,
    cwd: Path | None = None,
    stdin: str | None = None,
    env: Mapping[str, str | None] | None = None,
    timeout: float = 300,
) -> subprocess.CompletedProcess[str]:
    """``python -m heard ARGS`` in a process of its own: the real entry point."""
    merged = dict(os.environ)
    for key, value in _overrides(cwd, env).items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return subprocess.run(
        [sys.executable, "-m", "heard", *args],
        capture_output=True, text=True, input=stdin, env=merged, cwd=cwd, check=False,
        timeout=timeout,
    )  # fmt: skip


@contextlib.contextmanager
def held_port() -> Iterator[int]:
    """A loopback port some other program is listening on, as a user's own ``heard serve``
    holds 8000: a ``heard serve`` test that must fail before it binds names this one, so it
    neither depends on a port being free nor takes one."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        yield held.getsockname()[1]
