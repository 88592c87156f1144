"""``heard stream``: an audio file replayed as a live stream, out as transcript events."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from heard.cli.app import app, check_output, reports_errors, write_output
from heard.cli.models import (
    ComputeTypeOption,
    DeviceOption,
    LanguageOption,
    ModelOption,
    whisper_options,
)


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
    captions: Annotated[
        str | None,
        typer.Option(
            help="Write the caption units released at this cadence (relaxed or balanced) "
            "instead of the transcript events.",
        ),
    ] = None,
    model: ModelOption = None,
    language: LanguageOption = None,
    device: DeviceOption = None,
    compute_type: ComputeTypeOption = None,
) -> None:
    """Transcribe AUDIO as a live stream would: partials every CHUNK_MS, a final per utterance."""
    from heard.asr.audio import load_audio, probe_audio
    from heard.asr.streaming import STREAM_CLOCKS, StreamOptions, stream_events
    from heard.release.tracker import SELECTABLE_MODES

    STREAM_CLOCKS[clock]  # unknown names are refused with the known ones, before any work
    mode = SELECTABLE_MODES[captions] if captions is not None else None
    check_output(output)
    whisper = whisper_options(model, language, device, compute_type)
    probe_audio(audio)
    options = StreamOptions(chunk_ms=chunk_ms, strip_punctuation=strip_punctuation, clock=clock)  # type: ignore[arg-type]
    samples = load_audio(audio)
    events = list(stream_events(samples, options=options, whisper=whisper, speaker=speaker))
    if mode is None:
        lines = [e.to_json() + "\n" for e in events]
    else:
        from heard.release.cadence import caption_run

        units = caption_run(events, mode).units
        lines = [json.dumps(u.to_dict(), ensure_ascii=False) + "\n" for u in units]
    write_output("".join(lines), output)
