"""``heard serve`` and ``heard users``: the HTTP/WebSocket server and who may use it."""

from __future__ import annotations

import logging
import re
from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer

from heard.cli.app import app, reports_errors
from heard.cli.meetings import DbOption
from heard.cli.models import (
    ComputeTypeOption,
    DeviceOption,
    LanguageOption,
    ModelOption,
    chosen_settings,
)
from heard.errors import InputError, MissingDependencyError

users_app = typer.Typer(
    help="Users of `heard serve` and their bearer tokens.", no_args_is_help=True
)
app.add_typer(users_app, name="users")


@users_app.command("add")
@reports_errors
def users_add(
    name: Annotated[str, typer.Argument(help="The new user's name.")],
    db: DbOption = None,
) -> None:
    """Create a user and print their first token (shown this once; only its hash is kept)."""
    from heard.settings import database_url
    from heard.store.database import Database
    from heard.store.users import add_user

    database = Database(database_url(db))
    database.migrate()
    user, token = add_user(database, name)
    typer.echo(f"user {user.name} ({user.id})", err=True)
    typer.echo(token)


@users_app.command("revoke")
@reports_errors
def users_revoke(
    name: Annotated[str, typer.Argument(help="An existing user's name.")],
    token: Annotated[
        str | None,
        typer.Option(help="Revoke only this token (default: every token of the user)."),
    ] = None,
    db: DbOption = None,
) -> None:
    """Revoke a user's tokens: requests with them get 401 from then on."""
    from heard.settings import database_url
    from heard.store.database import Database
    from heard.store.users import revoke_tokens

    database = Database(database_url(db))
    database.migrate()
    count = revoke_tokens(database, name, token)
    typer.echo(f"revoked {count} token{'s' if count != 1 else ''} of {name.strip()}", err=True)


@users_app.command("token")
@reports_errors
def users_token(
    name: Annotated[str, typer.Argument(help="An existing user's name.")],
    db: DbOption = None,
) -> None:
    """Print another token for an existing user (shown this once)."""
    from heard.settings import database_url
    from heard.store.database import Database
    from heard.store.users import add_token

    database = Database(database_url(db))
    database.migrate()
    typer.echo(add_token(database, name))


@app.command()
@reports_errors
def serve(
    host: Annotated[
        str, typer.Option(help="Address to bind (0.0.0.0 to listen on every interface).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port to listen on.")] = 8000,
    db: DbOption = None,
    uploads: Annotated[
        Path | None,
        typer.Option(help="Where uploaded audio is kept (default: heard's data folder)."),
    ] = None,
    queue: Annotated[
        bool,
        typer.Option(
            "--queue", help="Run meetings on Celery workers ($HEARD_BROKER_URL), not in-process."
        ),
    ] = False,
    cors_origin: Annotated[
        list[str] | None,
        typer.Option(
            "--cors-origin",
            metavar="ORIGIN",
            help="A web origin whose pages may call this server from a browser (repeatable; "
            "default: $HEARD_CORS_ORIGINS, else none).",
        ),
    ] = None,
    local: Annotated[
        bool,
        typer.Option(
            "--local",
            help="One user on this machine, no token: the pages and the API answer requests "
            "from this machine as the user of `heard transcribe` and `heard memory` (so their "
            "meetings and memory show). Loopback only.",
        ),
    ] = False,
    spare_cpu: Annotated[
        str | None,
        typer.Option(
            "--spare-cpu",
            metavar="RULE",
            help="What live streams spend on their reading while decoding has CPU to spare: "
            "off, or wide (Whisper's beam 5 and buffers of up to 15 s, given back as load "
            "rises; about twice the CPU of a lone stream). Default: $HEARD_SPARE_CPU, else off.",
        ),
    ] = None,
    model: ModelOption = None,
    language: LanguageOption = None,
    device: DeviceOption = None,
    compute_type: ComputeTypeOption = None,
) -> None:
    """Serve the REST API, the /v1/live WebSocket and the OpenAPI spec (/docs), with OpenAI's
    audio endpoints and Realtime socket (/v1/audio/*, /v1/models, /v1/realtime), Deepgram's
    /v1/listen (pre-recorded and live) and AssemblyAI's streaming /v3/ws for clients written
    for them, on their defaults; Twilio Media Streams' /v1/twilio, a phone call kept as a
    meeting.

    --model and the options beside it choose the recognizer of uploaded meetings (run here)
    and of the live socket's audio.
    """
    try:
        import uvicorn

        from heard.server.app import ServerSettings, create_app
        from heard.server.transport import (
            UVICORN_OPTIONS,
            DeniedHandshakes,
            Server,
            listening_socket,
        )
    except ImportError as e:
        raise MissingDependencyError(
            f"`heard serve` cannot load its server ({e}): reinstall heard (pip install "
            "--force-reinstall --no-deps . in its clone)"
        ) from e
    from heard.asr.models import check_model_name, resolve_device
    from heard.asr.streaming import SPARE_RULES
    from heard.asr.transcribers import load_transcriber
    from heard.asr.whisper import WhisperOptions, load_model
    from heard.cli.stores import queue_database
    from heard.memory.factory import MemoryParts
    from heard.settings import data_dir, database_url
    from heard.store.database import Database

    if local and host not in ("127.0.0.1", "localhost", "::1"):
        raise InputError(
            f"--local serves without tokens, so only on this machine's loopback: drop --host "
            f"{host} (or give users tokens: heard users add NAME)"
        )
    # What the command line and the environment choose (settings, model name, CORS origins,
    # the store) is checked before the port is taken: a wrong choice is reported as itself
    # whoever holds the port (another heard, say). The model's files, the broker and the
    # transcriber are loaded or reached after it.
    chosen = chosen_settings(model, language, device, compute_type)
    spare = SPARE_RULES[spare_cpu or chosen.spare_cpu]  # an unknown name fails here
    whisper = WhisperOptions.from_settings(chosen)
    check_model_name(whisper.model_name)
    origins = cors_origin or [o.strip() for o in chosen.cors_origins.split(",") if o.strip()]
    for origin in origins:
        if origin == "*" or not re.fullmatch(r"https?://[^/\s]+", origin):
            raise InputError(
                f"CORS origin {origin!r}: give a scheme and host, like https://app.example.com "
                "(no path, no *: a page holding a token must be one you name)"
            )
    # a --queue --db the workers do not open, or a store that cannot be had, fails here
    database = queue_database(db) if queue else Database(database_url(db))
    try:
        database.migrate()
        sock = listening_socket(host, port)  # a port in use fails now, before the model loads
    except BaseException:
        database.dispose()
        raise
    with sock:  # closed however the start ends (uvicorn closes it too, when it stops)
        # the files' recognizer, its threads at bulk priority on a CPU (on a GPU the live
        # decoders share its one copy): a model it cannot have fails here
        files = replace(whisper, bulk=resolve_device(whisper.device) == "cpu")
        load_model(files)
        transcriber = None
        if queue:
            from heard.meetings.celery_app import check_broker, configure

            configure(chosen)
            check_broker()
        else:
            transcriber = load_transcriber(chosen.transcriber, files)
        server_settings = ServerSettings(
            database, uploads or data_dir() / "uploads", transcriber=transcriber, queue=queue,
            cors_origins=tuple(origins), whisper=whisper, memory=MemoryParts.from_settings(chosen),
            resume=chosen.resume, lease_s=chosen.lease_s, live_audio_x=chosen.live_audio_x,
            max_track_s=chosen.max_track_s,
            user_storage_bytes=round(chosen.user_storage_mb * 2**20), local=local, spare=spare,
        )  # fmt: skip
        if chosen.link_secret:
            server_settings.link_secret = chosen.link_secret.encode()
        served = create_app(
            server_settings
        )  # opens and migrates the database: fails here, not later
        typer.echo(
            f"heard: serving {database.safe_url} on http://{host}:{port} (API docs at /docs)",
            err=True,
        )
        if local:
            typer.echo(
                f"heard: local mode: open http://{host}:{port}/meetings on this machine, no token "
                "needed; meetings of `heard transcribe` on this database show there",
                err=True,
            )
        for name in ("uvicorn.access", "uvicorn.error"):  # handshakes log to uvicorn.error
            logging.getLogger(name).addFilter(RedactTokens())
        logging.getLogger("uvicorn.error").addFilter(DeniedHandshakes())
        config = uvicorn.Config(served, host=host, port=port, log_level="info", **UVICORN_OPTIONS)
        Server(config, server_settings.stopping).run(sockets=[sock])


class RedactTokens(logging.Filter):
    """Access logs print request paths; a token must not reach them, however it is spelled:
    any query parameter whose decoded name is ``token`` (or ``sig``, an audio link's
    signature) in any case, and anything shaped like a heard token wherever it stands."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(redact(a) if isinstance(a, str) else a for a in record.args)
        return True


_PARAM = re.compile(r"([^?&;=\s\"]+)=([^&;\s\"]*)")
_HEARD_TOKEN = re.compile(r"heard_[A-Za-z0-9_\-%]{8,}")


def redact(text: str) -> str:
    """``text`` with every token in it replaced by ``[redacted]``."""
    from urllib.parse import unquote

    def param(m: re.Match[str]) -> str:
        named_token = unquote(m[1]).strip().lower() in ("token", "sig")
        shaped_like_one = _HEARD_TOKEN.search(unquote(m[2])) is not None
        return f"{m[1]}=[redacted]" if named_token or shaped_like_one else m[0]

    return _HEARD_TOKEN.sub("[redacted]", _PARAM.sub(param, text))
