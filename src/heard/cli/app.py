"""The ``heard`` Typer app and what every command shares: error reporting, options."""

from __future__ import annotations

import errno
import os
import sys
import tempfile
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import Annotated, Any, ParamSpec, TypeVar

import typer
from typer.core import TyperGroup

from heard import __version__
from heard.errors import HeardError, InputError
from heard.scopes import closed_at_end

EXIT_BAD_INPUT = 2

# Typer carries its own copy of click; its usage error is the base of the BadParameter it exports
_UsageError: type[Exception] = typer.BadParameter.__mro__[1]


class _OneLineErrors(TyperGroup):
    """A usage error (a bad option value, a missing argument, an unknown option) is one
    ``heard: error:`` line like every other error, saying where the help is, not a box."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        if not kwargs.get("standalone_mode", True):
            return super().main(*args, **kwargs)
        try:
            code = super().main(*args, **{**kwargs, "standalone_mode": False})
        except _UsageError as e:
            if type(e).__name__ == "NoArgsIsHelpError":  # the help was shown
                sys.exit(EXIT_BAD_INPUT)
            context = getattr(e, "ctx", None)
            where = f" (see `{context.command_path} --help`)" if context is not None else ""
            typer.echo(f"heard: error: {e.format_message()}{where}", err=True)  # type: ignore[attr-defined]
            sys.exit(EXIT_BAD_INPUT)
        except typer.Abort:
            typer.echo("heard: aborted", err=True)
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)


app = typer.Typer(
    cls=_OneLineErrors,
    name="heard",
    help="Conversation audio into stable transcripts, timelines, captions and memory.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

P = ParamSpec("P")
R = TypeVar("R")

EXIT_BROKEN_PIPE = 128 + 13  # as if killed by SIGPIPE, the way `git log | head` ends


def _fail(message: str) -> typer.Exit:
    typer.echo(f"heard: error: {message}", err=True)
    return typer.Exit(EXIT_BAD_INPUT)


def _silence_stdout() -> None:
    """Send standard output nowhere, so what is still buffered does not fail again at exit."""
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, sys.stdout.fileno())
    os.close(null)


def reports_errors(command: Callable[P, R]) -> Callable[P, R]:
    """Turn ``HeardError`` into one line on stderr and exit code 2.

    So is an output that fails for want of room or a reader (a full device, a closed pipe):
    heard wraps every other write failure of its own files in a ``HeardError``.
    """

    @wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            with closed_at_end():  # the stores the command opened close with it
                result = command(*args, **kwargs)
            sys.stdout.flush()
            return result
        except HeardError as e:
            raise _fail(str(e)) from None
        except OSError as e:
            if e.errno not in (errno.ENOSPC, errno.EPIPE):
                raise
            _silence_stdout()
            if e.errno == errno.EPIPE:  # the reader has all it wants (`| head`): no message
                raise typer.Exit(EXIT_BROKEN_PIPE) from None
            raise _fail(f"cannot write the output ({e.strerror})") from None

    return wrapper


OutputOption = Annotated[
    Path | None, typer.Option("--output", "-o", help="Write here instead of standard output.")
]


def check_output(output: Path | None) -> None:
    """Refuse an output path that cannot be written, before any work is done.

    The folder must exist and take a new file (tried for real: permissions alone do not tell
    about /proc or a read-only mount) and its device must have room; a device or a pipe must
    be writable.
    """
    if output is None:
        return
    if output.is_dir():
        raise InputError(f"{output}: is a folder, not a file to write")
    if output.exists() and not output.is_file():
        if not os.access(output, os.W_OK):
            raise InputError(f"{output}: cannot write (permission denied)")
        return
    folder = output.resolve().parent
    if not folder.is_dir():
        raise InputError(f"{output}: folder {folder} does not exist")
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
        room = os.statvfs(folder)
    except OSError as e:
        raise InputError(f"{output}: cannot write in {folder} ({e.strerror})") from None
    if room.f_bavail == 0:
        raise InputError(f"{output}: no space left on the device of {folder}")


def write_output(text: str, output: Path | None) -> None:
    """Write ``text`` to ``output`` atomically (temp file + rename), or to standard output."""
    if output is None:
        sys.stdout.write(text)
        return
    check_output(output)
    try:
        if not output.is_file() and output.exists():
            # A device or a pipe (/dev/null, a FIFO): renaming over it would replace it.
            with output.open("w", encoding="utf-8") as f:
                f.write(text)
            return
        fd, tmp = tempfile.mkstemp(dir=output.resolve().parent, prefix=f".{output.name}.")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(tmp, output)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as e:
        raise InputError(f"{output}: cannot write ({e.strerror})") from None


def _version(value: bool) -> None:
    if value:
        typer.echo(f"heard {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    """heard turns live or recorded speech into stable transcripts, meeting timelines,
    captions released at a chosen cadence, and memory an assistant can recall from."""
