"""``/v1/listen``'s query parameters: Deepgram's names, and what heard does with each.

``parse_options`` reads a connection's parameters into ``ListenOptions``, or raises an
``InputError`` naming the first one heard cannot honour (the handshake is then refused with a
400, as Deepgram refuses it). ``heard.server.listen`` serves the protocol.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from heard.asr.audio import SAMPLE_RATE
from heard.asr.streaming import StreamOptions
from heard.errors import InputError

if TYPE_CHECKING:
    from heard.asr.whisper import WhisperOptions

__all__ = [
    "CONTAINERS",
    "DECODE_SILENCE_MS",
    "NO_EFFECT",
    "OFF_ONLY",
    "ListenOptions",
    "parse_options",
]

NO_EFFECT = frozenset({"smart_format", "numerals", "filler_words", "version", "mip_opt_out",
                       "no_delay", "keyterm", "keywords", "tag", "extra"})  # fmt: skip
"""Taken and not used: formatting heard's text already has, hints and labels."""
OFF_ONLY = frozenset({"detect_entities", "diarize", "dictation", "profanity_filter", "redact",
                      "detect_language", "search", "replace"})  # fmt: skip
"""Features heard does not have live: taken when the client turns them off (Pipecat sends them
all as false), refused when it asks for them."""
DECODE_SILENCE_MS = StreamOptions().end_silence_ms
"""The silence that ends an utterance for the recognizer, whatever ``endpointing`` says: cut
after less, tiny.en decodes the pieces into other words ("ask" became "and and and" at 300 ms).
A shorter ``endpointing`` changes nothing; a longer one waits longer before ``speech_final``."""
CONTAINERS = frozenset({"opus", "ogg-opus", "flac", "webm", "ogg", "wav", "mp3", "container"})
"""Encodings that come in a container FFmpeg demuxes (Deepgram: omit ``encoding`` for one)."""
ENCODINGS = frozenset({"linear16", "mulaw", "alaw"}) | CONTAINERS


@dataclass(frozen=True, slots=True)
class ListenOptions:
    language: str | None
    model: str
    interim: bool
    punctuate: bool
    endpointing_ms: int
    """Silence that ends an utterance for the recognizer (never under DECODE_SILENCE_MS)."""
    utterance_end_ms: int | None
    vad_events: bool
    encoding: str = "linear16"
    """``linear16``, ``mulaw``, ``alaw``, ``container`` or ``sniff`` (none given: a container
    if the first bytes are one, else linear16)."""
    sample_rate: int = SAMPLE_RATE
    channels: int = 1


def _flag(params: dict[str, str], name: str, default: bool) -> bool:
    value = params.get(name)
    if value is None:
        return default
    if value.lower() not in ("true", "false"):
        raise InputError(f"{name}={value[:40]!r}: true or false")
    return value.lower() == "true"


def _ms(value: str, name: str, least: int) -> int:
    if not value.isdigit() or int(value) < least:
        raise InputError(f"{name}={value[:40]!r}: a whole number of milliseconds, at least {least}")
    return int(value)


def parse_options(params: dict[str, str], whisper: WhisperOptions) -> ListenOptions:
    """The connection's options from Deepgram's query parameters (``InputError`` naming the
    first that heard cannot honour)."""
    known = {"encoding", "sample_rate", "channels", "multichannel", "language", "model",
             "interim_results", "punctuate", "endpointing", "utterance_end_ms", "vad_events",
             "token"}  # fmt: skip
    asked = sorted(k for k in set(params) & OFF_ONLY if params[k].lower() not in ("false", ""))
    unknown = sorted(set(params) - known - NO_EFFECT - OFF_ONLY) + asked
    if unknown:
        raise InputError(f"not supported here: {', '.join(u[:40] for u in unknown[:5])}")
    given = params.get("encoding", "").lower()
    if given and given not in ENCODINGS:
        raise InputError(f"encoding {given[:40]!r}: linear16, mulaw, alaw, or a container "
                         "(opus, ogg-opus, webm, flac, wav, mp3)")  # fmt: skip
    encoding = "container" if given in CONTAINERS else given or "sniff"
    rate = params.get("sample_rate", str(SAMPLE_RATE))
    if not rate.isdigit() or not 8000 <= int(rate) <= 192_000:
        raise InputError(f"sample_rate={rate[:40]!r}: 8000 to 192000 Hz")
    channels = params.get("channels", "1")
    if not channels.isdigit() or not 1 <= int(channels) <= 8:
        raise InputError(f"channels={channels[:40]!r}: 1 to 8")
    _flag(params, "multichannel", False)  # each channel is its own stream either way
    language = params.get("language", "").split("-")[0].lower() or whisper.language
    endpointing = params.get("endpointing", "800")
    never = endpointing == "false"
    end_ms = 10**9 if never else max(DECODE_SILENCE_MS, _ms(endpointing, "endpointing", 0))
    utterance_end = params.get("utterance_end_ms")
    return ListenOptions(
        language=language,
        model=params.get("model", whisper.model_name)[:80],
        interim=_flag(params, "interim_results", False),
        punctuate=_flag(params, "punctuate", False),
        endpointing_ms=end_ms,
        utterance_end_ms=_ms(utterance_end, "utterance_end_ms", 1000) if utterance_end else None,
        vad_events=_flag(params, "vad_events", False),
        encoding=encoding,
        sample_rate=int(rate),
        channels=int(channels),
    )
