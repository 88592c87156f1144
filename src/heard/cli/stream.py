"""``heard stream``: an audio file replayed as a live stream, out as transcript events."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from heard.cli.app import app, check_output, reports_errors, write_output


@app.command()
@reports_errors
def stream(
    audio: Annotated[Path, typer.Argument(help="Audio file (any format FFmpeg decodes).")],
    chunk_ms: Annotated[int, typer.Option(min=100, help="Audio between two re-decodes.")] = 1000,
    strip_punctuation: Annotated[
        bool, typer.Option(help="Emulate a recognizer that never punctuates.")
    ] = False,
    clock: Annotated[
        str,
        typer.Option(help="simulated: audio time; compute: audio time plus real decoding time."),
    ] = "simulated",
    speaker: Annotated[str, typer.Option(help="Speaker name on every event.")] = "speaker",
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write JSONL here (default: stdout).")
    ] = None,
) -> None:
    """Transcribe AUDIO as a live stream would: partials every CHUNK_MS, a final per utterance."""
    from heard.asr.audio import load_audio, probe_audio
    from heard.asr.streaming import STREAM_CLOCKS, StreamOptions, stream_events

    STREAM_CLOCKS[clock]  # an unknown clock is refused with the known ones, before any work
    check_output(output)
    probe_audio(audio)
    options = StreamOptions(chunk_ms=chunk_ms, strip_punctuation=strip_punctuation, clock=clock)  # type: ignore[arg-type]
    lines = [
        e.to_json() + "\n"
        for e in stream_events(load_audio(audio), options=options, speaker=speaker)
    ]
    write_output("".join(lines), output)
