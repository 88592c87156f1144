"""A real uvicorn server for tests: in a thread of the test's own process (so a test may
patch the server's module constants), on a free loopback port."""

from __future__ import annotations

import signal
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from fastapi import FastAPI

from heard.server.transport import UVICORN_OPTIONS, Server


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def serving(app: FastAPI, **config: Any) -> Iterator[str]:
    """``app`` served as ``heard serve`` serves it until the block ends (``config``: uvicorn
    settings in place of heard's); its ``host:port``."""
    import uvicorn

    port = free_port()
    options = UVICORN_OPTIONS | config
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", **options)
    server = Server(config, app.state.settings.stopping)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.05)
    try:
        yield f"127.0.0.1:{port}"
    finally:
        server.handle_exit(signal.SIGTERM, None)  # as heard serve is stopped
        thread.join(20)
