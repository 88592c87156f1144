"""How uvicorn serves heard: its HTTP protocol and its WebSocket keepalive.

``heard serve`` and the test suite's real servers both run uvicorn with ``UVICORN_OPTIONS``.
Two things in them are heard's choice rather than uvicorn's defaults:

* A WebSocket handshake is read twice: by the HTTP parser, which reads any length, and then
  by the WebSocket library, which reads no line over ``MAX_LINE_BYTES`` (8 KiB) and then
  never answers, holding the descriptor (python-websockets/websockets#1489). A handshake with
  a longer request line or header line is refused here with a 400 and closed, before it
  reaches that library; so is one with more than ``MAX_HEADERS`` headers.
* A request's headers (a WebSocket handshake's too) must arrive within ``HEADERS_S`` of the
  connection, or of the request's first byte on a kept-alive one: a client that trickles
  them, or sends nothing, gets a 408 and is closed, so idle descriptors cannot pile up.
  (uvicorn itself waits for ever.) A body that stalls is ``heard.server.guard``'s.
* A signal to stop (SIGINT, SIGTERM) sets the app's ``ServerSettings.stopping`` at once, so
  heavy work in flight gives its work back at its next batch or segment instead of holding
  the shutdown (uvicorn waits on in-flight requests, and runs the app's shutdown only after
  them); what still runs after ``GRACE_S`` is cancelled.
* A live client that answers no ping for ``PING_INTERVAL_S`` then ``PING_TIMEOUT_S`` is
  closed with 1011 "keepalive ping timeout": the end of a client that takes in nothing.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
import threading
from types import FrameType
from typing import Any

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from websockets.http11 import MAX_LINE_LENGTH, MAX_NUM_HEADERS

from heard.errors import InputError

__all__ = [
    "GRACE_S",
    "HEADERS_S",
    "MAX_HEADERS",
    "MAX_LINE_BYTES",
    "PING_INTERVAL_S",
    "PING_TIMEOUT_S",
    "UVICORN_OPTIONS",
    "DeniedHandshakes",
    "Server",
    "listening_socket",
]

MAX_LINE_BYTES = MAX_LINE_LENGTH
"""The longest line of a WebSocket handshake, its CRLF included (the request line with its
query, or a header)."""
MAX_HEADERS = MAX_NUM_HEADERS
"""The most headers a WebSocket handshake may have (the library reads no more, and hangs)."""
PING_INTERVAL_S = 20.0
PING_TIMEOUT_S = 20.0
GRACE_S = 30.0
"""How long a shutdown waits for requests in flight (each stops its heavy work at once)."""
HEADERS_S = 10.0
"""How long a request's headers may take to arrive (nginx's client_header_timeout is 60 s;
a client on any working link sends them in a packet or two)."""
REQUEST_TIMEOUT = (b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
                   b"content-length: 33\r\nconnection: close\r\n\r\n"
                   b"the request headers came too late")  # fmt: skip


class BoundedHandshake(HttpToolsProtocol):
    """uvicorn's httptools protocol, refusing a handshake line the WebSocket library would
    not read, and closing a connection whose request headers do not arrive in time."""

    _headers_due: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._await_headers()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if self._headers_due is None:  # a kept-alive connection's next request
            self._await_headers()

    def on_headers_complete(self) -> None:
        self._headers_came()
        super().on_headers_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._headers_came()
        super().connection_lost(exc)

    def _await_headers(self) -> None:
        self._headers_due = self.loop.call_later(HEADERS_S, self._headers_late)

    def _headers_came(self) -> None:
        if self._headers_due is not None:
            self._headers_due.cancel()
            self._headers_due = None

    def _headers_late(self) -> None:
        self._headers_due = None
        if self.transport.is_closing():
            return
        if self.cycle is None or self.cycle.response_complete:  # not amid an answer's bytes
            self.transport.write(REQUEST_TIMEOUT)
        self.transport.close()

    def handle_websocket_upgrade(self) -> None:
        # the lines as uvicorn hands them on: "GET <url> HTTP/1.1\r\n", "name: value\r\n"
        request_line = len(self.scope["method"]) + 1 + len(self.url) + len(" HTTP/1.1\r\n")
        header_line = max((len(name) + len(value) + 4 for name, value in self.headers), default=0)
        if len(self.headers) > MAX_HEADERS:
            self.send_400_response(f"a WebSocket handshake with over {MAX_HEADERS} headers")
            return
        if max(request_line, header_line) > MAX_LINE_BYTES:
            self.send_400_response(
                f"a WebSocket handshake line is over {MAX_LINE_BYTES} bytes "
                "(a query or a header too long)"
            )
            return
        super().handle_websocket_upgrade()


UVICORN_OPTIONS: dict[str, Any] = {
    "http": BoundedHandshake,
    "ws_ping_interval": PING_INTERVAL_S,
    "ws_ping_timeout": PING_TIMEOUT_S,
    "timeout_graceful_shutdown": GRACE_S,
}


class DeniedHandshakes(logging.Filter):
    """uvicorn (0.54, sans-io WebSocket protocol) logs an error for every handshake the app
    refuses with an HTTP response (``/v1/listen``'s 400, 401 and 429, as Deepgram refuses),
    as if the app had forgotten to answer: a client retrying a bad key would fill the log."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != "ASGI callable returned without completing handshake."


class Server(uvicorn.Server):
    """uvicorn's server, setting ``stopping`` as soon as it is told to stop."""

    def __init__(self, config: uvicorn.Config, stopping: threading.Event) -> None:
        super().__init__(config)
        self.stopping = stopping

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        self.stopping.set()
        super().handle_exit(sig, frame)


def listening_socket(host: str, port: int) -> socket.socket:
    """The server's socket, bound before anything heavy loads: a port in use or an address
    this machine does not have is said in words (``InputError``), not as uvicorn's errno."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        raise InputError(_cannot_bind(host, port, e)) from None
    sock.set_inheritable(True)
    return sock


def _cannot_bind(host: str, port: int, error: OSError) -> str:
    where = f"{host}:{port}"
    if error.errno == errno.EADDRINUSE:
        return (f"cannot listen on {where}: another program is using port {port} (stop it, or "
                "pick another port with --port)")  # fmt: skip
    if error.errno == errno.EACCES:
        return (f"cannot listen on {where}: ports below 1024 need administrator rights (pick "
                "one above with --port)")  # fmt: skip
    if error.errno in (errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT) or isinstance(
        error, socket.gaierror
    ):
        return (f"cannot listen on {where}: this machine has no address {host} (--host "
                "127.0.0.1 for this machine only, 0.0.0.0 for every interface)")  # fmt: skip
    return f"cannot listen on {where}: {error.strerror or error}"
