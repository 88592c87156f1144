"""The ``heard`` Typer app and what every command shares: error reporting, options."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Annotated, ParamSpec, TypeVar

import typer

from heard import __version__
from heard.errors import HeardError

app = typer.Typer(
    name="heard",
    help="Conversation audio into stable transcripts, timelines, captions and memory.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

P = ParamSpec("P")
R = TypeVar("R")

EXIT_BAD_INPUT = 2


def _fail(message: str) -> typer.Exit:
    typer.echo(f"heard: error: {message}", err=True)
    return typer.Exit(EXIT_BAD_INPUT)


def reports_errors(command: Callable[P, R]) -> Callable[P, R]:
    """Turn ``HeardError`` into one line on stderr and exit code 2."""

    @wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except HeardError as e:
            raise _fail(str(e)) from None

    return wrapper


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
