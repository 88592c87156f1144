"""``heard wyoming``: speech to text for Home Assistant's Assist, over the Wyoming protocol."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Annotated

import typer

from heard.cli.app import app, reports_errors
from heard.cli.models import (
    ComputeTypeOption,
    DeviceOption,
    LanguageOption,
    ModelOption,
    chosen_settings,
)

DEFAULT_PORT = 10300
"""wyoming-faster-whisper's, which Home Assistant's docs use."""


@app.command()
@reports_errors
def wyoming(
    host: Annotated[
        str,
        typer.Option(help="Address to bind (0.0.0.0 for Home Assistant on another machine)."),
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="TCP port.")] = DEFAULT_PORT,
    anyone: Annotated[
        bool,
        typer.Option(
            "--anyone",
            help="Take connections from any address, not only loopback and private networks "
            "(Wyoming has no credentials: only behind your own firewall or VPN).",
        ),
    ] = False,
    model: ModelOption = None,
    language: LanguageOption = None,
    device: DeviceOption = None,
    compute_type: ComputeTypeOption = None,
) -> None:
    """Serve Home Assistant's Wyoming protocol (speech to text) with heard's recognizer: add
    the Wyoming Protocol integration in Home Assistant with this machine's address and port
    (10300), then pick "heard" as the speech-to-text engine of an Assist pipeline."""
    from heard.asr.models import check_model_name
    from heard.asr.transcribers import load_transcriber
    from heard.asr.whisper import WhisperOptions, load_model
    from heard.server.protocols.wyoming import WyomingServer

    chosen = chosen_settings(model, language, device, compute_type)
    whisper = WhisperOptions.from_settings(chosen)
    check_model_name(whisper.model_name)
    loaded = load_model(whisper)
    languages = [whisper.language] if whisper.language else (
        _all_languages() if loaded.multilingual else ["en"])  # fmt: skip
    server = WyomingServer(
        load_transcriber(chosen.transcriber, whisper), model=whisper.model_name,
        languages=languages, anyone=anyone,
    )  # fmt: skip

    async def main() -> None:
        listening = await server.serve(host, port)
        who = "any address" if anyone else "loopback and private networks"
        typer.echo(f"heard: Wyoming speech to text on tcp://{host}:{port} (model "
                   f"{whisper.model_name}; taking {who}); Ctrl-C stops", err=True)  # fmt: skip
        async with listening:
            await listening.serve_forever()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main())


def _all_languages() -> list[str]:
    from faster_whisper.tokenizer import _LANGUAGE_CODES

    return sorted(_LANGUAGE_CODES)
