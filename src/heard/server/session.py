"""The live sockets' one session loop; each protocol on it is a codec.

Every live WebSocket (heard's ``/v1/live``, Deepgram's ``/v1/listen``, OpenAI's
``/v1/realtime``, AssemblyAI's ``/v3/ws``, Twilio's ``/v1/twilio``) goes through ``serve``,
which owns what the protocols share:

* **who**: the token from ``Authorization: Bearer`` or ``Token`` (Deepgram's SDKs), the
  ``token`` subprotocol pair (Deepgram's browsers), OpenAI's ``openai-insecure-api-key.KEY``
  subprotocol, or ``?token=`` (a protocol whose clients send it otherwise reads it itself:
  ``mount``'s ``offered``); a token barred for going over a rate limit is refused after a
  second's wait (a 429, so reconnecting in a loop costs a sleeping coroutine), a bad one with
  a 401, options the codec cannot honour with a 400, each in the codec's own shape;
* **limits**: frames over the codec's size close with 1009; text frames count against the
  token's events a second, audio against its seconds of audio (``quotas.Quota``, one per
  token over all its sockets); going over sends the codec's error, closes with 1008 and bars
  the token for a while; a codec may close a socket quiet for too long;
* **the way out**: messages wait in one outbox (``OUTBOX_LIMIT``); a client that does not take
  them (one waits ``SEND_TIMEOUT_S``, or too many pile up) is closed with 1008, and a client
  already gone is never written to (a send that fails ends the sending quietly);
* **revocation**: a codec asks ``admit_final`` before a final is stored or sent; a token
  revoked since the handshake closes the socket with 1008;
* **the end**: whatever ends the loop, the codec's ``close`` runs once (its microphones
  decoded and stopped), what it sent is delivered, then the close frame.

A codec (``Codec``) reads the protocol's frames and writes its messages; it raises
``heard.errors.SocketCloseError`` to end the socket with a code and a reason (any other
exception is a bug: logged, that socket closed with 1011, nobody else notices). Adding a
protocol is one codec and one ``mount`` line in ``heard.server.app``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from fastapi import FastAPI, WebSocket, WebSocketDisconnect
from pydantic import BaseModel

from heard.errors import InputError, SocketCloseError
from heard.server import quotas
from heard.server.guard import client_address, from_this_machine, raw_headers, too_many_bad_tokens
from heard.server.state import ServerSettings, state_of
from heard.store.users import LOCAL_USER, Principal, digest

__all__ = [
    "CLOSE_ERROR",
    "CLOSE_INVALID",
    "CLOSE_NORMAL",
    "CLOSE_POLICY",
    "CLOSE_TOO_BIG",
    "MAX_FRAME_BYTES",
    "OUTBOX_LIMIT",
    "REVOKED",
    "SEND_TIMEOUT_S",
    "Codec",
    "Session",
    "close_reason",
    "mount",
    "quotas_of",
]

log = logging.getLogger("heard.server.session")

CLOSE_NORMAL = 1000
CLOSE_INVALID = 1007
CLOSE_POLICY = 1008
CLOSE_TOO_BIG = 1009
CLOSE_ERROR = 1011
MAX_FRAME_BYTES = 64 * 1024
"""The largest frame a codec takes unless it says otherwise."""
OUTBOX_LIMIT = 1000
"""Messages waiting for a client: one that lets more pile up is not reading, and is closed."""
SEND_TIMEOUT_S = 10.0
"""How long one message may wait for the client to take it before the client is closed."""
REVOKED = "the token was revoked"
NOT_READING = "not reading: messages waited too long or piled up"
MAX_REASON_BYTES = 123
"""A close frame's reason holds at most this much UTF-8 (RFC 6455: 125 bytes with the code)."""
OPENAI_KEY_PROTOCOL = "openai-insecure-api-key."
"""OpenAI's browser clients put the key in a subprotocol of this prefix."""


def close_reason(text: str) -> str:
    """``text`` as a close frame can carry it: what UTF-8 cannot hold (a lone surrogate a client
    sent, quoted back) escaped, cut to whole characters. A reason that cannot be sent fails the
    close, and the client sees 1006 instead of the code."""
    data = text.encode("utf-8", "backslashreplace")
    if len(data) <= MAX_REASON_BYTES:
        return data.decode("utf-8")
    return data[: MAX_REASON_BYTES - 3].decode("utf-8", "ignore") + "..."


class Codec(Protocol):
    """One protocol on the session loop. Made per connection after the caller is known, in a
    worker thread (``InputError`` from the constructor refuses the handshake with a 400,
    naming it)."""

    protocol: str
    """Its name in the logs."""
    max_frame_bytes: int
    idle_s: float | None
    """Close a socket that sends nothing for this long (``on_idle`` says how), or never."""

    async def start(self) -> None:
        """The socket is accepted: the first messages, if the protocol has any."""
        ...

    async def text(self, raw: str) -> None:
        """One text frame (already counted against the token's events)."""
        ...

    async def audio(self, data: bytes) -> None:
        """One binary frame (within the size limit; the codec charges its audio)."""
        ...

    def error(self, detail: str) -> None:
        """Tell the client what went wrong before the session closes it."""
        ...

    def on_idle(self) -> SocketCloseError:
        """The close for a socket quiet for ``idle_s``."""
        ...

    async def close(self) -> None:
        """The socket is ending, however: decode and send what is left, stop its work."""
        ...


class Refusals(Protocol):
    """How a protocol refuses a handshake (a status and a message, in its own shape)."""

    async def __call__(self, websocket: WebSocket, status: int, message: str) -> None: ...


def quotas_of(app: FastAPI) -> dict[str, quotas.Quota]:
    """Each token's limits, one per token over every live socket of the app."""
    return state_of(app).live_quotas


def offered_token(websocket: WebSocket) -> tuple[str, str | None]:
    """The key the client sent, and the subprotocol to accept (the one it offered with it)."""
    header = websocket.headers.get("authorization", "")
    scheme, _, key = header.partition(" ")
    if scheme.lower() in ("token", "bearer") and key.strip():
        return key.strip(), _chosen(websocket)
    offered = [p.strip() for p in websocket.headers.get("sec-websocket-protocol", "").split(",")]
    if len(offered) == 2 and offered[0] == "token":
        return offered[1], "token"
    for name in offered:
        if name.startswith(OPENAI_KEY_PROTOCOL):
            return name[len(OPENAI_KEY_PROTOCOL) :], _chosen(websocket)
    return websocket.query_params.get("token", ""), _chosen(websocket)


def _chosen(websocket: WebSocket) -> str | None:
    """OpenAI's browser clients offer ``realtime`` and need it accepted."""
    offered = [p.strip() for p in websocket.headers.get("sec-websocket-protocol", "").split(",")]
    return "realtime" if "realtime" in offered else None


class Session:
    """One accepted socket: who is on it, and the way out to it (for its codec)."""

    def __init__(
        self,
        websocket: WebSocket,
        user: Principal,
        token: str,
        settings: ServerSettings,
        quota: quotas.Quota,
    ) -> None:
        self.websocket = websocket
        self.user = user
        self.token = token
        self.settings = settings
        self.quota = quota
        self.params = dict(websocket.query_params)
        self.id = uuid.uuid4().hex[:8]
        self.revoked = False
        self.outbox: asyncio.Queue[str | None] = asyncio.Queue(maxsize=OUTBOX_LIMIT)
        self.ended: asyncio.Future[SocketCloseError] = asyncio.get_running_loop().create_future()

    def send(self, message: BaseModel | dict[str, Any]) -> None:
        """Queue ``message`` for the client (dropped once the client is not reading)."""
        if self.stuck:
            return
        text = message.model_dump_json() if isinstance(message, BaseModel) else json.dumps(message)
        try:
            self.outbox.put_nowait(text)
        except asyncio.QueueFull:
            self.end(SocketCloseError(CLOSE_POLICY, NOT_READING))

    def end(self, closing: SocketCloseError) -> None:
        """End the socket now (from a callback: the loop is waiting on the client)."""
        if not self.ended.done():
            self.ended.set_result(closing)

    def charge_audio(self, pcm_bytes: int) -> None:
        """``pcm_bytes`` of 16 kHz PCM16 against the token's audio limit (``SocketCloseError`` when
        over it)."""
        if not self.quota.pcm.take(pcm_bytes):
            raise self._too_fast("audio")

    async def admit_final(self) -> bool:
        """Whether the token is still valid; a revoked one ends the socket."""
        if self.user is LOCAL_USER:
            return True  # no token to revoke
        tokens = state_of(self.websocket.app).tokens
        if not self.revoked and await tokens.principal(self.token) is None:
            self.revoked = True
            log.warning("%s: the token was revoked; closing", self.name)
            self.end(SocketCloseError(CLOSE_POLICY, REVOKED))
        return not self.revoked

    @property
    def stuck(self) -> bool:
        """The client does not take its messages: nothing more is sent to it."""
        return self.ended.done() and self.ended.result().reason == NOT_READING

    @property
    def name(self) -> str:
        return f"{self.id} ({self.user.name})"

    def _too_fast(self, what: str) -> SocketCloseError:
        log.warning("%s: over the rate limit for %s", self.name, what)
        self.quota.bar()
        detail = (
            f"over the rate limit of {quotas.limit_text(what, self.quota.audio_x)}; closing "
            f"(no new connection for {quotas.BARRED_S:g} s)"
        )
        return SocketCloseError(CLOSE_POLICY, detail)


Greeting = Callable[[WebSocket], Awaitable[tuple[str, list[str]]]]
"""Reads a protocol's first text frames on an accepted socket until they hold the token
(``InputError`` when they do not); the token and the frames read, for the codec."""
GREETING_S = 10.0
"""How long a protocol whose token comes in its first frames has to send it."""


def mount(
    app: FastAPI,
    path: str,
    codec: Callable[[Session], Codec],
    refuse: Refusals,
    offered: Callable[[WebSocket], tuple[str, str | None]] = offered_token,
    greeting: Greeting | None = None,
) -> None:
    """Serve ``codec``'s protocol at ``path`` on the session loop; ``offered`` reads the token
    the way the protocol's clients send it (and the subprotocol to accept). With
    ``greeting``, the token comes in the first frames instead (Twilio's, whose handshake
    carries none): the socket is accepted first, and a refusal is a close (1008)."""
    state = state_of(app)
    settings = state.settings
    by_token = quotas_of(app)

    @app.websocket(path)
    async def socket(websocket: WebSocket) -> None:
        early: list[str] = []
        if greeting is None:
            token, subprotocol = offered(websocket)
            refusal = refuse
        else:
            await websocket.accept()
            refusal, subprotocol = _closing, None
            try:
                token, early = await asyncio.wait_for(greeting(websocket), GREETING_S)
            except (TimeoutError, InputError, WebSocketDisconnect) as e:
                reason = str(e) if isinstance(e, InputError) else "no token in time"
                with contextlib.suppress(Exception):
                    await websocket.close(CLOSE_POLICY, close_reason(reason))
                return
        address = client_address(websocket.scope)
        guessing_s = state.failures.wait_s(address) if token else 0
        if guessing_s and not state.tokens.vouched(token):
            await refusal(websocket, 429, too_many_bad_tokens(guessing_s))
            return
        key = digest(token)
        quota = by_token.get(key) if token else None
        if quota is not None and (wait_s := quota.barred_for()) > 0:
            await asyncio.sleep(min(wait_s, quotas.REFUSAL_DELAY_S))
            await refusal(websocket, 429, f"over the rate limit: wait {wait_s:.0f} s")
            return
        user = await state.tokens.principal(token) if token else None
        here = from_this_machine(raw_headers(websocket.scope), websocket.scope.get("client"))
        if user is None and not token and settings.local and here:
            user = LOCAL_USER
        if user is None:
            if token:
                state.failures.failed(address)
            await refusal(websocket, 401, "a valid token is required")
            return
        quota = by_token.setdefault(key, quotas.Quota(audio_x=settings.live_audio_x))
        if quota.sockets >= quotas.SOCKETS_PER_TOKEN:
            await refusal(websocket, 429, f"this token has {quota.sockets} live connections "
                         "open already; close one first")  # fmt: skip
            return
        quota.sockets += 1
        try:
            session = Session(websocket, user, token, settings, quota)
            try:
                handler = await state.work.run(user.owner, codec, session)  # it may load a model
            except InputError as e:
                await refusal(websocket, 400, str(e))
                return
            if greeting is None:
                await websocket.accept(subprotocol=subprotocol)
            await _run(session, handler, early)
        finally:
            quota.sockets -= 1


async def _closing(websocket: WebSocket, status: int, message: str) -> None:
    """A refusal on a socket already accepted: a close with the reason."""
    with contextlib.suppress(Exception):
        await websocket.close(CLOSE_POLICY, close_reason(f"{status}: {message}"))


async def _run(session: Session, codec: Codec, early: list[str] | None = None) -> None:
    sender = asyncio.create_task(_send_all(session))
    receiving: asyncio.Task[SocketCloseError | None] | None = None
    closing: SocketCloseError | None = None
    try:
        await codec.start()
        try:
            for raw in early or ():  # the frames the greeting read
                await codec.text(raw)
        except SocketCloseError as e:
            closing = e
            return
        except Exception:  # a bug: as on any frame, this socket ends and nobody else notices
            log.exception("%s on %s: a first frame failed", session.name, codec.protocol)
            codec.error("the server failed on this frame; closing")
            closing = SocketCloseError(CLOSE_ERROR, "the server failed on a frame")
            return
        receiving = asyncio.create_task(_receive(session, codec))
        either: set[asyncio.Future[Any]] = {receiving, session.ended}
        await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        if receiving.done():
            closing = receiving.result()
        else:
            receiving.cancel()
            await asyncio.wait({receiving})
            closing = session.ended.result()
            if session.stuck:
                log.warning("%s on %s: not reading its messages, closed", session.name,
                            codec.protocol)  # fmt: skip
            else:
                log.warning("%s on %s: closed: %s", session.name, codec.protocol, closing.reason)
    finally:
        if receiving is not None and not receiving.done():
            receiving.cancel()
        try:
            await codec.close()
        except Exception:  # its microphones are stopped either way; the client hears the close
            log.exception("%s on %s: closing failed", session.name, codec.protocol)
        try:
            if session.stuck:
                raise asyncio.QueueFull
            session.outbox.put_nowait(None)  # what was sent before goes out first
        except asyncio.QueueFull:
            sender.cancel()
        await asyncio.wait({sender}, timeout=SEND_TIMEOUT_S)
        sender.cancel()
        if closing is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(
                    session.websocket.close(closing.code, close_reason(closing.reason)),
                    SEND_TIMEOUT_S,
                )


async def _send_all(session: Session) -> None:
    while (text := await session.outbox.get()) is not None:
        try:
            await asyncio.wait_for(session.websocket.send_text(text), SEND_TIMEOUT_S)
        except TimeoutError:
            session.end(SocketCloseError(CLOSE_POLICY, NOT_READING))
            return
        except (WebSocketDisconnect, RuntimeError, OSError):  # the client is gone, or going
            return


async def _receive(session: Session, codec: Codec) -> SocketCloseError | None:
    """Frames until the client leaves (None) or must be closed."""
    number = 0
    events = session.quota.events
    while True:
        try:
            message = await asyncio.wait_for(session.websocket.receive(), codec.idle_s)
        except WebSocketDisconnect:
            return None
        except TimeoutError:
            return codec.on_idle()
        if message["type"] == "websocket.disconnect":
            return None
        number += 1
        if session.revoked:
            return SocketCloseError(CLOSE_POLICY, REVOKED)
        raw, data = message.get("text"), message.get("bytes")
        size = len(raw.encode("utf-8", "surrogatepass")) if raw is not None else len(data or b"")
        try:
            if size > codec.max_frame_bytes:
                log.warning("%s: frame %d is over %d bytes", session.name, number,
                            codec.max_frame_bytes)  # fmt: skip
                raise SocketCloseError(
                    CLOSE_TOO_BIG, f"frame {number} is over {codec.max_frame_bytes} bytes"
                )
            if raw is not None:
                if not events.take(1):
                    raise session._too_fast("events")
                await codec.text(raw)
            else:
                await codec.audio(data or b"")
        except Exception as e:
            if not isinstance(e, SocketCloseError):  # a bug: this socket ends, nobody else notices
                log.exception("%s on %s: frame %d failed", session.name, codec.protocol, number)
                codec.error("the server failed on this frame; closing")
                return SocketCloseError(CLOSE_ERROR, "the server failed on a frame")
            if e.code == CLOSE_POLICY and e.reason.startswith("over the rate limit"):
                codec.error(e.reason)
                return SocketCloseError(e.code, f"frame {number}: {e.reason}")
            if e.code in (CLOSE_INVALID, CLOSE_TOO_BIG):
                log.warning("%s on %s: %s", session.name, codec.protocol, e.reason)
            return e
