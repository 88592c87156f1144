"""Home Assistant's Wyoming protocol, speech to text: ``heard wyoming`` serves it on TCP.

Wyoming is JSON lines over a socket: each event is a header line ``{"type", "data",
"data_length", "payload_length", "version"}`` followed by ``data_length`` bytes of JSON
(merged into ``data``) and ``payload_length`` bytes of payload (audio). heard answers what
wyoming-faster-whisper answers Home Assistant's Assist:

* ``describe`` -> ``info``: one ASR program, ``heard``, with the recognizer's model and the
  languages it knows; ``supports_transcript_streaming`` is true;
* ``transcribe`` (optional; its ``language`` holds for that utterance; one the model does not
  know is an ``error`` event, then an empty ``transcript``) ->
  ``audio-start`` (``rate``, ``width``, ``channels``) -> ``audio-chunk``... -> ``audio-stop``
  -> ``transcript-start``, a ``transcript-chunk`` per segment as it is decoded, then
  ``transcript`` (the whole text, what every client reads) and ``transcript-stop``.
  Clients from before streaming read the ``transcript`` and skip the rest.

Audio is 16-bit PCM (``width`` 2) at 8 kHz or more, any channel count up to 8 (mixed to one); an
utterance holds at most ``MAX_UTTERANCE_S`` seconds. What cannot be read (a header that is not
JSON, a line or data past its limit, audio of another width or rate) is answered with an
``error`` event naming it; the connection is then closed, as the stream can no longer be
trusted. A chunk without an ``audio-start`` is read in the format it says itself. An utterance
past its length is refused with an ``error`` event and its audio dropped, and its
``audio-stop`` answered with an empty ``transcript`` (what a client waits for); the connection
goes on. A client that leaves stops its decode. Wyoming has no credentials: the server takes
connections from loopback and private networks only (``local_peer``) unless told to take
anyone's.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import logging
import os
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from heard import __version__
from heard.asr.incoming import IncomingAudio
from heard.asr.transcriber import Transcriber, transcribe_each
from heard.errors import AudioError, HeardError, InputError, StoppingError, TooLargeError
from heard.speech import Transcription

if TYPE_CHECKING:
    from heard.speech import Segment

__all__ = ["MAX_UTTERANCE_S", "WyomingServer", "local_peer", "read_event", "write_event"]

log = logging.getLogger("heard.wyoming")

MAX_LINE_BYTES = 64 * 1024
"""Of an event's header line."""
MAX_DATA_BYTES = 1024 * 1024
"""Of an event's JSON data."""
MAX_PAYLOAD_BYTES = 4 * 1024 * 1024
"""Of one event's payload (an audio chunk is a few KiB)."""
MAX_UTTERANCE_S = 300.0
"""Audio of one utterance, from ``audio-start`` to ``audio-stop``: a voice command is seconds
long; heard's REST routes take long recordings."""


@dataclass(slots=True)
class Event:
    type: str
    data: dict[str, Any] = field(default_factory=dict)
    payload: bytes = b""


async def read_event(reader: asyncio.StreamReader) -> Event | None:
    """The next event; None at the end of the stream. A malformed one is an ``InputError``
    (what a client sent that the protocol cannot take; its text is the error event's)."""
    try:
        line = await reader.readuntil(b"\n")
    except asyncio.IncompleteReadError as e:
        if not e.partial.strip():
            return None
        raise InputError("the connection ended inside an event's header") from None
    except asyncio.LimitOverrunError:
        raise InputError(f"an event's header is over {MAX_LINE_BYTES} bytes") from None
    try:
        header = json.loads(line)
    except ValueError:
        raise InputError(f"an event's header is not JSON: {line[:80]!r}") from None
    if not isinstance(header, dict) or not isinstance(header.get("type"), str):
        raise InputError("an event's header is a JSON object with a 'type'")
    data = header.get("data") or {}
    data_length, payload_length = header.get("data_length") or 0, header.get("payload_length") or 0
    if (
        not isinstance(data, dict)
        or not isinstance(data_length, int)
        or not isinstance(payload_length, int)
    ):
        raise InputError(f"{header['type']!r}: data is an object, its lengths whole numbers")
    if not 0 <= data_length <= MAX_DATA_BYTES or not 0 <= payload_length <= MAX_PAYLOAD_BYTES:
        raise InputError(
            f"{header['type']!r}: data up to {MAX_DATA_BYTES} bytes and a payload up to "
            f"{MAX_PAYLOAD_BYTES}, not {data_length} and {payload_length}"
        )
    try:
        if data_length:
            more = json.loads(await reader.readexactly(data_length))
            if not isinstance(more, dict):
                raise InputError(f"{header['type']!r}: its data is not a JSON object")
            data = {**data, **more}
        payload = await reader.readexactly(payload_length) if payload_length else b""
    except asyncio.IncompleteReadError:
        raise InputError(f"the connection ended inside {header['type']!r}") from None
    except ValueError:
        raise InputError(f"{header['type']!r}: its data is not JSON") from None
    return Event(header["type"], data, payload)


async def write_event(writer: asyncio.StreamWriter, event: Event) -> None:
    header: dict[str, Any] = {"type": event.type, "version": WYOMING_VERSION}
    body = json.dumps(event.data, ensure_ascii=False).encode() if event.data else b""
    if body:
        header["data_length"] = len(body)
    if event.payload:
        header["payload_length"] = len(event.payload)
    writer.write(json.dumps(header).encode() + b"\n" + body + event.payload)
    await writer.drain()


WYOMING_VERSION = "1.8.0"
"""The protocol version heard's events say they follow (streaming transcripts came in 1.7)."""


def local_peer(address: str) -> bool:
    """Whether a peer at ``address`` is on this machine or a private network (RFC 1918,
    unique local, link-local), as Home Assistant on a home network is."""
    try:
        ip = ipaddress.ip_address(address.split("%")[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback or ip.is_private or ip.is_link_local


class WyomingServer:
    """Wyoming's speech to text over ``transcriber``; ``model`` and ``languages`` are what
    ``info`` tells clients. At most ``at_once`` utterances are decoded at a time (default:
    one per core but one); ``anyone`` takes connections from any address."""

    def __init__(
        self,
        transcriber: Transcriber,
        *,
        model: str,
        languages: list[str],
        at_once: int | None = None,
        anyone: bool = False,
    ) -> None:
        self.transcriber = transcriber
        self.model, self.languages, self.anyone = model, languages, anyone
        self._decoding = asyncio.Semaphore(at_once or max(1, (os.cpu_count() or 2) - 1))

    def info(self) -> dict[str, Any]:
        attribution = {"name": "heard", "url": ""}
        model = {
            "name": self.model, "description": f"faster-whisper {self.model}",
            "attribution": attribution, "installed": True, "version": __version__,
            "languages": self.languages,
        }  # fmt: skip
        program = {
            "name": "heard", "description": "heard's speech recognition",
            "attribution": attribution, "installed": True, "version": __version__,
            "models": [model], "supports_transcript_streaming": True,
        }  # fmt: skip
        return {"asr": [program], "tts": [], "handle": [], "intent": [], "wake": [],
                "mic": [], "snd": []}  # fmt: skip

    async def serve(self, host: str, port: int) -> asyncio.Server:
        """Listening on ``host:port`` (0 for any free port: ``server.sockets``)."""
        return await asyncio.start_server(self.connection, host, port, limit=MAX_LINE_BYTES)

    async def connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        address = str(peer[0]) if isinstance(peer, tuple) and peer else ""
        try:
            if not self.anyone and not local_peer(address):
                log.warning("wyoming: refused %s (not a local network; see --anyone)", address)
                await write_event(writer, _error(
                    "this heard takes Wyoming connections from local networks only",
                    "not-local"))  # fmt: skip
                return
            await _Session(self, writer).run(reader)
        except InputError as e:
            log.info("wyoming: %s: %s", address, e)
            await _say(writer, _error(str(e), "bad-event"))
        except (ConnectionError, asyncio.CancelledError):
            pass
        except Exception:  # a bug: the client hears of it, the log has the traceback
            log.exception("wyoming: unexpected error with %s", address)
            await _say(writer, _error("internal error", "internal"))
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError, OSError):
                await writer.wait_closed()


def _error(text: str, code: str) -> Event:
    return Event("error", {"text": text, "code": code})


async def _say(writer: asyncio.StreamWriter, event: Event) -> None:
    with contextlib.suppress(ConnectionError, OSError):
        await write_event(writer, event)


class _Session:
    """One connection's utterances, one at a time."""

    def __init__(self, server: WyomingServer, writer: asyncio.StreamWriter) -> None:
        self.server, self.writer = server, writer
        self.language: str | None = None
        self.audio: IncomingAudio | None = None
        self.pcm: list[bytes] = []
        self.samples = 0
        self.dropped = False
        """The utterance was refused: its chunks, up to its audio-stop, are ignored."""

    async def run(self, reader: asyncio.StreamReader) -> None:
        while (event := await read_event(reader)) is not None:
            if event.type == "describe":
                await write_event(self.writer, Event("info", self.server.info()))
            elif event.type == "transcribe":
                language = event.data.get("language")
                self.language = language if isinstance(language, str) and language else None
            elif event.type == "audio-start":
                self.audio, self.pcm, self.samples = _incoming(event.data), [], 0
                self.dropped = False
            elif event.type == "audio-chunk" and not self.dropped:
                try:
                    self._chunk(event)
                except TooLargeError as e:
                    await write_event(self.writer, _error(str(e), "too-long"))
                    self.audio, self.pcm, self.samples, self.dropped = None, [], 0, True
            elif event.type == "audio-stop":
                if self.dropped:  # refused: said so; an empty transcript, as a client waits for one
                    await write_event(self.writer, Event("transcript", {"text": ""}))
                else:
                    await self._transcribe()
                self.dropped = False
                self.language = None
            elif event.type == "ping":
                await write_event(self.writer, Event("pong", event.data))
            # other events (a satellite's, a wake word's) are not heard's to answer

    def _chunk(self, event: Event) -> None:
        if self.audio is None:  # a chunk without its start says its own format
            self.audio, self.pcm, self.samples = _incoming(event.data), [], 0
        try:
            channels = self.audio.feed(event.payload)
        except AudioError as e:
            raise InputError(f"audio-chunk: {e}") from None
        self._keep(channels)

    def _keep(self, channels: list[bytes]) -> None:
        import numpy as np

        if not channels or not channels[0]:
            return
        if len(channels) == 1:  # Home Assistant's: kept as it came
            self.pcm.append(channels[0])
            self.samples += len(channels[0]) // 2
        else:
            mixed = np.mean([np.frombuffer(c, dtype="<i2") for c in channels], axis=0)
            self.pcm.append(mixed.astype("<i2").tobytes())
            self.samples += len(mixed)
        if self.samples > MAX_UTTERANCE_S * 16_000:
            raise TooLargeError(
                f"an utterance is at most {MAX_UTTERANCE_S:.0f} s of audio: this one is dropped"
            )

    async def _transcribe(self) -> None:
        import numpy as np

        if self.audio is not None:
            self._keep(self.audio.finish())
        pcm = (np.frombuffer(b"".join(self.pcm), dtype="<i2") / 32768).astype(np.float32)
        self.audio, self.pcm, self.samples = None, [], 0
        loop = asyncio.get_running_loop()
        decoded: asyncio.Queue[Segment | None] = asyncio.Queue()
        left = threading.Event()  # the client is gone: the decode stops at its next segment

        def on_segment(segment: Segment) -> None:
            loop.call_soon_threadsafe(decoded.put_nowait, segment)

        def watched(done_s: float, total_s: float) -> None:
            if left.is_set():
                raise StoppingError("the Wyoming client left")

        language, self.language = self.language, None  # a transcribe's language is its own

        def work() -> Any:
            try:
                return transcribe_each(self.server.transcriber, pcm, on_segment,
                                       language=language, on_progress=watched)  # fmt: skip
            finally:
                loop.call_soon_threadsafe(decoded.put_nowait, None)

        async with self.server._decoding:  # held until the decode has ended, however
            task = asyncio.ensure_future(asyncio.to_thread(work))
            try:
                await write_event(self.writer, Event("transcript-start", _language(language)))
                said = 0
                while (segment := await decoded.get()) is not None:
                    text = segment.text if not said else " " + segment.text
                    await write_event(self.writer, Event("transcript-chunk", {"text": text}))
                    said += 1
                try:
                    heard = await task
                except HeardError as e:  # said, then an empty transcript: a client waits for one
                    await write_event(self.writer, _error(str(e), "transcription-failed"))
                    heard = Transcription((), language)
            finally:
                if not task.done():
                    left.set()
                    with contextlib.suppress(Exception):
                        await task
        text = " ".join(s.text for s in heard.segments)
        spoken = _language(heard.language or language)
        await write_event(self.writer, Event("transcript", {"text": text, **spoken}))
        await write_event(self.writer, Event("transcript-stop"))


def _language(code: str | None) -> dict[str, str]:
    return {"language": code} if code else {}


def _incoming(data: dict[str, Any]) -> IncomingAudio:
    rate, width, channels = data.get("rate"), data.get("width"), data.get("channels")
    if width != 2:
        raise InputError(f"audio: 16-bit PCM (width 2) only, not width {width!r}")
    if not isinstance(rate, int) or not isinstance(channels, int):
        raise InputError("audio: rate and channels are whole numbers")
    try:
        return IncomingAudio("linear16", rate, channels)
    except AudioError as e:
        raise InputError(f"audio: {e}") from None
