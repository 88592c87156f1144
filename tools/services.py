"""PostgreSQL and Redis for heard's tests and benchmarks: the ones at the test URLs, or throwaways.

    python tools/services.py -- python -m pytest      # run a command with both services up
    python tools/services.py --status                 # say what answers; start nothing

A service that answers at its URL is used as it is. When the URL is the default one and nothing
answers there, the service is installed from Debian's packages if it is missing (as root, or
with passwordless sudo) and a throwaway one is started on a free loopback port: a PostgreSQL
cluster in a temporary folder (run as the ``postgres`` user when this runs as root, since
PostgreSQL refuses root) and a Redis with no persistence. The command runs with the URLs of
what answered in its environment; whatever was started is stopped and deleted afterwards.
A service that cannot be had is reported in one line and left out; the tests that need it then
skip, or fail under CI (see tests/conftest.py).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

DATABASE_URL_ENV = "HEARD_TEST_DATABASE_URL"
REDIS_URL_ENV = "HEARD_TEST_REDIS_URL"
DEFAULT_DATABASE_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
READY_TIMEOUT_S = 60.0


class Unavailable(Exception):
    """A service cannot be had here; the message says why, in one line."""


def database_url() -> str:
    return os.environ.get(DATABASE_URL_ENV) or DEFAULT_DATABASE_URL


def redis_url() -> str:
    return os.environ.get(REDIS_URL_ENV) or DEFAULT_REDIS_URL


def _first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return lines[0].strip() if lines else type(error).__name__


def _libpq(url: str) -> str:
    """A SQLAlchemy URL (``postgresql+psycopg://...``) as the conninfo libpq takes."""
    from sqlalchemy.engine import make_url

    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def postgres_problem(url: str) -> str | None:
    """Why PostgreSQL at ``url`` cannot be used, or None when it answers a query.

    A server that answers but lacks the URL's database gets that database created: a
    developer's own PostgreSQL rarely has one named ``test``.
    """
    import psycopg
    from sqlalchemy.engine import make_url

    try:
        with psycopg.connect(_libpq(url), connect_timeout=3) as conn:
            conn.execute("SELECT 1")
        return None
    except psycopg.OperationalError as e:
        name = make_url(url).database
        if name and f'database "{name}" does not exist' in str(e):
            try:
                maintenance = _libpq(str(make_url(url).set(database="postgres", query={})))
                with psycopg.connect(maintenance, connect_timeout=3, autocommit=True) as conn:
                    conn.execute(f'CREATE DATABASE "{name}"')
                return postgres_problem(url)
            except psycopg.Error as create_error:
                return _first_line(create_error)
        return _first_line(e)


def redis_problem(url: str) -> str | None:
    """Why Redis at ``url`` cannot be used, or None when it answers PING."""
    import redis

    try:
        with redis.Redis.from_url(url, socket_timeout=3, socket_connect_timeout=3) as client:
            client.ping()
        return None
    except redis.RedisError as e:
        return _first_line(e)


# --- installing and starting ---------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _as_root() -> list[str]:
    """The prefix that runs a command as root here, or Unavailable."""
    if os.geteuid() == 0:
        return []
    if (
        shutil.which("sudo")
        and subprocess.run(["sudo", "-n", "true"], capture_output=True).returncode == 0
    ):
        return ["sudo", "-n"]
    raise Unavailable("installing it needs root or passwordless sudo")


_apt_updated = False


def apt_install(package: str) -> None:
    """Install one of Debian's packages, without starting its service where policy allows."""
    global _apt_updated
    if shutil.which("apt-get") is None:
        raise Unavailable(f"it is not installed and there is no apt-get to install {package}")
    root = _as_root()
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    print(f"== services: installing {package} from Debian's packages", flush=True)
    steps = [] if _apt_updated else [["apt-get", "update", "-qq"]]
    steps.append(["apt-get", "install", "-y", "-qq", "--no-install-recommends", package])
    for step in steps:
        done = subprocess.run([*root, *step], env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise Unavailable(f"{' '.join(step)} failed: {done.stderr.strip()[-300:]}")
    _apt_updated = True


def _postgres_bindir() -> Path | None:
    on_path = shutil.which("pg_ctl")
    if on_path:
        return Path(on_path).resolve().parent
    versions = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"), key=lambda p: int(p.parent.parent.name)
    )
    return versions[-1].parent if versions else None


def _wait(problem: Callable[[], str | None], what: str) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while (reason := problem()) is not None:
        if time.monotonic() > deadline:
            raise Unavailable(f"{what} did not answer within {READY_TIMEOUT_S:.0f} s: {reason}")
        time.sleep(0.2)


def _run(argv: list[str]) -> None:
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        raise Unavailable(f"{Path(argv[0]).name} failed: {done.stderr.strip()[-300:]}")


class PostgresCluster:
    """A PostgreSQL cluster of its own in ``workdir``, on a free port: made at once, then
    started and stopped at will (a test stops it under a running server)."""

    def __init__(self, workdir: Path) -> None:
        bindir = _postgres_bindir()
        if bindir is None:
            apt_install("postgresql")
            bindir = _postgres_bindir()
            if bindir is None:
                raise Unavailable("the postgresql package installed no pg_ctl")
        data = workdir / "postgres"
        data.mkdir()
        as_owner: list[str] = []
        if os.geteuid() == 0:
            # PostgreSQL refuses to run as root: the cluster belongs to the user Debian's
            # package made.
            shutil.chown(data, user="postgres", group="postgres")
            as_owner = ["runuser", "-u", "postgres", "--"]
        self.port = _free_port()
        _run([*as_owner, str(bindir / "initdb"), "-D", str(data), "-U", "postgres",
              "--auth=trust", "--encoding=UTF8", "--no-sync"])  # fmt: skip
        self._settings = (
            f"-c listen_addresses=127.0.0.1 -c port={self.port} -c unix_socket_directories={data} "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
        )
        self._pg_ctl = [*as_owner, str(bindir / "pg_ctl"), "-D", str(data),
                        "-l", str(data / "server.log")]  # fmt: skip
        self.url = f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/test"

    def start(self) -> None:
        """Start it and wait until it answers (its ``test`` database made on first start)."""
        _run([*self._pg_ctl, "-w", "-t", str(int(READY_TIMEOUT_S)), "-o", self._settings,
              "start"])  # fmt: skip
        _wait(lambda: postgres_problem(self.url), "the throwaway PostgreSQL")

    def stop(self) -> None:
        """Stop it (``fast``: open sessions are ended, as at a restart of the service)."""
        subprocess.run([*self._pg_ctl, "-m", "fast", "stop"], capture_output=True)


@contextlib.contextmanager
def throwaway_postgres(workdir: Path) -> Iterator[str]:
    """A PostgreSQL cluster of its own in ``workdir``, on a free port; stopped on exit."""
    cluster = PostgresCluster(workdir)
    try:
        cluster.start()
        yield cluster.url
    finally:
        cluster.stop()


@contextlib.contextmanager
def throwaway_redis(workdir: Path) -> Iterator[str]:
    """A Redis of its own on a free port, keeping nothing on disk; stopped on exit."""
    server = shutil.which("redis-server") or shutil.which("redis-server", path="/usr/bin")
    if server is None:
        apt_install("redis-server")
        server = shutil.which("redis-server", path="/usr/bin")
        if server is None:
            raise Unavailable("the redis-server package installed no redis-server")
    port = _free_port()
    proc = subprocess.Popen(
        [server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--dir", str(workdir), "--logfile", str(workdir / "redis.log")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        url = f"redis://127.0.0.1:{port}/0"
        _wait(
            lambda: redis_problem(url) if proc.poll() is None else "it exited",
            "the throwaway Redis",
        )
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@dataclass(frozen=True, slots=True)
class Service:
    name: str
    env: str
    default_url: str
    problem: Callable[[str], str | None]
    throwaway: Callable[[Path], contextlib.AbstractContextManager[str]]


POSTGRES = Service(
    "PostgreSQL", DATABASE_URL_ENV, DEFAULT_DATABASE_URL, postgres_problem, throwaway_postgres
)
REDIS = Service("Redis", REDIS_URL_ENV, DEFAULT_REDIS_URL, redis_problem, throwaway_redis)
SERVICES = (POSTGRES, REDIS)


def provide(service: Service, stack: contextlib.ExitStack, workdir: Path) -> str | None:
    """The URL where ``service`` answers (started here if need be), or None after saying why."""
    url = os.environ.get(service.env) or service.default_url
    reason = service.problem(url)
    if reason is None:
        print(f"== services: {service.name} answers at {url}", flush=True)
        return url
    if os.environ.get(service.env):
        print(f"== services: {service.name} at {url} ({service.env}) does not answer: {reason}")
        return None
    try:
        started = stack.enter_context(service.throwaway(workdir))
    except Unavailable as e:
        print(f"== services: no {service.name} ({e}); set {service.env} to one you run", flush=True)
        return None
    print(f"== services: started a throwaway {service.name} at {started}", flush=True)
    return started


def _stop_on_sigterm() -> None:
    """SIGTERM unwinds like Ctrl-C, so what was started is stopped."""

    def handler(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, handler)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--status", action="store_true", help="say what answers; start nothing")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND [ARGS...]")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if args.status:
        for service in SERVICES:
            at = os.environ.get(service.env) or service.default_url
            reason = service.problem(at)
            print(f"{service.name}: {at}: {'answers' if reason is None else reason}")
        return 0
    if not command:
        parser.error("give a command to run after --, or --status")
    _stop_on_sigterm()
    with contextlib.ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="heard-services-")))
        workdir.chmod(0o755)  # the postgres user reaches its cluster through here
        env = dict(os.environ)
        for service in SERVICES:
            url = provide(service, stack, workdir)
            if url is not None:
                env[service.env] = url
        return subprocess.call(command, env=env)


if __name__ == "__main__":
    sys.exit(main())
