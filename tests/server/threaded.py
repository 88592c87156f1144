"""A real uvicorn server for tests: in a thread of the test's own process (so a test may
patch the server's module constants), on a free loopback port."""

from __future__ import annotations

import signal
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI

from heard.server.state import state_of
from heard.server.transport import UVICORN_OPTIONS, Server
from heard.store.database import Database


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
    server = Server(config, state_of(app).settings.stopping)
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


@contextmanager
def recognizing(folder: Path, **settings: Any) -> Iterator[tuple[str, str]]:
    """A real server on SQLite in ``folder`` with heard's recognizer (tiny.en) and one user,
    ana (``settings``: ServerSettings' others); its ``host:port`` and her token."""
    from heard.asr.whisper import FasterWhisperTranscriber
    from heard.server.app import ServerSettings, create_app
    from heard.store.database import Database
    from heard.store.users import add_user

    db = Database(f"sqlite:///{folder / 'h.db'}")
    options = {"transcriber": FasterWhisperTranscriber(), **settings}
    app = create_app(ServerSettings(db, folder / "uploads", **options))
    _, token = add_user(db, "ana")
    try:
        with serving(app) as host:
            yield host, token
    finally:
        db.dispose()


@contextmanager
def served_for_a_user(tmp_path: Path, **settings: Any) -> Iterator[tuple[str, str, Database]]:
    """A server on a SQLite store in ``tmp_path`` (``settings``: ServerSettings' fields) with
    one user, "browser": its URL, the user's token and the store."""
    from heard.server.app import ServerSettings, create_app
    from heard.store.users import add_user

    db = Database(f"sqlite:///{tmp_path / 'heard.db'}")
    app = create_app(ServerSettings(db, tmp_path / "uploads", **settings))  # the schema made
    _, token = add_user(db, "browser")
    try:
        with serving(app) as host:
            yield f"http://{host}", token, db
    finally:
        db.dispose()
