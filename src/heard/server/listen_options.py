"""``/v1/listen``'s query parameters: Deepgram's names, and what heard does with each.

``parse_options`` reads a connection's parameters into ``ListenOptions``, or raises an
``InputError`` naming the first one heard cannot honour (the handshake is then refused with a
400, as Deepgram refuses it). ``heard.server.listen`` serves the protocol.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from heard.asr.audio import SAMPLE_RATE
from heard.errors import InputError

if TYPE_CHECKING:
    from heard.asr.whisper import WhisperOptions

__all__ = ["MIN_ENDPOINTING_MS", "NO_EFFECT", "OFF_ONLY", "ListenOptions", "parse_options"]

NO_EFFECT = frozenset({"smart_format", "numerals", "filler_words", "version", "mip_opt_out",
                       "no_delay", "keyterm", "keywords", "tag", "extra"})  # fmt: skip
"""Taken and not used: formatting heard's text already has, hints and labels."""
OFF_ONLY = frozenset({"detect_entities", "diarize", "dictation", "multichannel",
                      "profanity_filter", "redact", "detect_language", "search",
                      "replace"})  # fmt: skip
"""Features heard does not have: taken when the client turns them off (Pipecat sends them all
as false), refused when it asks for them."""
MIN_ENDPOINTING_MS = 300
"""The shortest silence that ends an utterance here (the recognizer's VAD needs some): a
shorter ``endpointing`` is taken as this."""


@dataclass(frozen=True, slots=True)
class ListenOptions:
    language: str | None
    model: str
    interim: bool
    punctuate: bool
    endpointing_ms: int
    utterance_end_ms: int | None
    vad_events: bool


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
    known = {"encoding", "sample_rate", "channels", "language", "model", "interim_results",
             "punctuate", "endpointing", "utterance_end_ms", "vad_events", "token"}  # fmt: skip
    asked = sorted(k for k in set(params) & OFF_ONLY if params[k].lower() not in ("false", ""))
    unknown = sorted(set(params) - known - NO_EFFECT - OFF_ONLY) + asked
    if unknown:
        raise InputError(f"not supported here: {', '.join(u[:40] for u in unknown[:5])}")
    if params.get("encoding", "linear16") != "linear16":
        raise InputError("encoding: linear16 only (PCM16, little-endian)")
    if params.get("sample_rate", str(SAMPLE_RATE)) != str(SAMPLE_RATE):
        raise InputError(f"sample_rate: {SAMPLE_RATE} only (resample on the client)")
    if params.get("channels", "1") != "1":
        raise InputError("channels: 1 only")
    language = params.get("language", "").split("-")[0].lower() or whisper.language
    endpointing = params.get("endpointing", "800")
    never = endpointing == "false"
    end_ms = 10**9 if never else max(MIN_ENDPOINTING_MS, _ms(endpointing, "endpointing", 1))
    utterance_end = params.get("utterance_end_ms")
    return ListenOptions(
        language=language,
        model=params.get("model", whisper.model_name)[:80],
        interim=_flag(params, "interim_results", False),
        punctuate=_flag(params, "punctuate", False),
        endpointing_ms=end_ms,
        utterance_end_ms=_ms(utterance_end, "utterance_end_ms", 1000) if utterance_end else None,
        vad_events=_flag(params, "vad_events", False),
    )
