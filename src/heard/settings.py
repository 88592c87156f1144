"""Every setting heard takes from its environment: its variable, its default and what it means.

This is the only module that touches ``os.environ`` (tests/test_settings.py walks the source to
keep it so). The edges (a CLI command, the server, a worker) call ``settings()`` once and hand
what the library needs down to it; library code takes plain arguments. Every default works
with no service running: a SQLite file, no LLM, faster-whisper in-process.
"""

from __future__ import annotations

import os
import types
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Union, get_args, get_origin, get_type_hints

from heard.errors import InputError

__all__ = ["Settings", "data_dir", "database_url", "settings"]


def _var(name: str, default: Any, doc: str) -> Any:
    return field(default=default, metadata={"env": name, "doc": doc})


@dataclass(frozen=True, slots=True)
class Settings:
    """heard's settings; ``settings()`` reads them from the environment."""

    database_url: str | None = _var(
        "HEARD_DATABASE_URL", None,
        "SQLAlchemy URL of the store; unset: a SQLite file in the user's data folder "
        "(~/.local/share/heard/heard.db on Linux). For deployments: "
        "postgresql+psycopg://USER@HOST:5432/DB.",
    )  # fmt: skip
    broker_url: str = _var(
        "HEARD_BROKER_URL", "redis://127.0.0.1:6379/0",
        "Celery broker of `--queue` and `heard worker` (amqp://guest:guest@HOST:5672// for "
        "RabbitMQ).",
    )  # fmt: skip
    queue: str = _var("HEARD_QUEUE", "heard", "The Celery queue heard's tasks go to.")
    stuck_after_s: float | None = _var(
        "HEARD_STUCK_AFTER_S", None,
        "A claim on a track older than this, from a process heard cannot see (another "
        "machine), was abandoned; also the tasks' hard time limit. Unset: the pipeline's "
        "1800 s (heard.meetings.steps.PipelineOptions).",
    )  # fmt: skip
    visibility_timeout_s: float = _var(
        "HEARD_VISIBILITY_TIMEOUT_S", 3600.0,
        "How long Redis keeps an unacknowledged task before handing it to another worker; "
        "must exceed the time limit.",
    )  # fmt: skip
    worker_stop_s: float = _var(
        "HEARD_WORKER_STOP_S", 10.0,
        "How long a `heard worker` sent SIGTERM lets its tracks in hand finish before it "
        "hands them back to the queue for another worker, and stops.",
    )  # fmt: skip
    live_audio_x: float = _var(
        "HEARD_LIVE_AUDIO_X", 2.0,
        "The audio one token's live sockets may send together, in channels at real time: "
        "each channel of a stream counts, as each is decoded as one stream. 2: a stereo call, "
        "or one stream at twice real time; a /v1/listen stream of 8 channels needs 8.",
    )  # fmt: skip
    lease_s: float = _var(
        "HEARD_LEASE_S", 30.0,
        "How long a server's lease on its runs lasts: it renews it every fifth of this; "
        "another server on the same database takes over the runs of one silent this long "
        "(killed, or its host lost), once it has itself been in touch with the database for "
        "as long. At most 600.",
    )  # fmt: skip
    retry_delay_s: float | None = _var(
        "HEARD_RETRY_DELAY_S", None,
        "First wait before looking again at a track still recording; it doubles on each "
        "retry, up to 10 minutes. Unset: the pipeline's 30 s.",
    )  # fmt: skip
    transcriber: str = _var(
        "HEARD_TRANSCRIBER", "faster-whisper",
        "The recognizer of workers and the server: faster-whisper, or module:callable "
        "returning a Transcriber.",
    )  # fmt: skip
    model: str | None = _var(
        "HEARD_MODEL", None,
        "The Whisper model of faster-whisper: tiny.en (unset), base (multilingual, "
        "heard[multilingual]), a faster-whisper size (small, large-v3...), a Hugging Face "
        "repository or a folder holding model.bin. `heard models` lists those at hand.",
    )  # fmt: skip
    language: str | None = _var(
        "HEARD_LANGUAGE", None,
        "The language spoken (en, es, ru...); unset: detected per track by a multilingual "
        "model, English for an English-only one.",
    )  # fmt: skip
    device: str = _var(
        "HEARD_DEVICE", "auto", "auto (a CUDA GPU when there is one), cpu or cuda."
    )  # fmt: skip
    compute_type: str = _var(
        "HEARD_COMPUTE_TYPE", "auto",
        "CTranslate2 compute type: auto (int8 on the CPU, float16 on a GPU), int8_float16, "
        "float32...",
    )  # fmt: skip
    asr_threads: int = _var(
        "HEARD_ASR_THREADS", 0,
        "CPU threads per faster-whisper process; 0: CTranslate2 decides. With several workers "
        "on one machine, give each cores / workers.",
    )  # fmt: skip
    llm_provider: str | None = _var(
        "HEARD_LLM_PROVIDER", None,
        "openai, anthropic or gemini; unset: no LLM (the gate fails open, LLM lanes are "
        "skipped, translation is the identity). The SDK reads its own key variable "
        "(OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY).",
    )  # fmt: skip
    llm_model: str | None = _var("HEARD_LLM_MODEL", None, "The LLM's model name.")
    llm_base_url: str | None = _var(
        "HEARD_LLM_BASE_URL", None,
        "An OpenAI-compatible server (llama.cpp, Ollama, vLLM) for the openai provider.",
    )  # fmt: skip
    dense: bool = _var(
        "HEARD_DENSE", True,
        "0 turns the dense scout (heard[dense]) off even when it is installed.",
    )  # fmt: skip
    embedder: str = _var(
        "HEARD_EMBEDDER", "auto",
        "The dense scout's model: minilm (English, fastest), e5 (multilingual-e5-small: about "
        "100 languages, a question in one finds evidence in another) or auto (e5 when "
        "HEARD_LANGUAGE names a language other than English, else minilm).",
    )  # fmt: skip
    max_track_s: float = _var(
        "HEARD_MAX_TRACK_S", 14400.0,
        "The longest track heard takes, in seconds (4 h): longer audio is refused before it is "
        "decoded, or, when its header said less, stopped once decoding passes the limit.",
    )  # fmt: skip
    user_storage_mb: float = _var(
        "HEARD_USER_STORAGE_MB", 10240.0,
        "The audio one user of `heard serve` may keep in uploaded tracks, in MiB (10 GiB); an "
        "upload past it is a 507 and nothing is kept. 0: no limit.",
    )  # fmt: skip
    resume: bool = _var(
        "HEARD_RESUME", True,
        "`heard serve` resumes the meetings a process that is gone left off, at start-up "
        "and when another server's lease runs out (here, or on the workers with --queue); "
        "0: it only takes their tracks back at start-up.",
    )  # fmt: skip
    spare_cpu: str = _var(
        "HEARD_SPARE_CPU", "off",
        "What `heard serve`'s live streams spend on their reading while its decoding has CPU to "
        "spare: off, or wide (Whisper's beam 5 and buffers of up to 15 s, given back as load "
        "rises; BENCHMARKS.md, issue 58).",
    )  # fmt: skip
    cors_origins: str = _var(
        "HEARD_CORS_ORIGINS", "",
        "Web origins (comma-separated, e.g. https://app.example.com) whose pages may call "
        "`heard serve` from a browser; empty: none, only heard's own pages.",
    )  # fmt: skip
    link_secret: str = _var(
        "HEARD_LINK_SECRET", "",
        "The key that signs the meetings page's audio links (with the asking token); empty: a "
        "random one per server process. Give every server behind one address the same.",
    )  # fmt: skip

    def __post_init__(self) -> None:
        if not 1 <= self.lease_s <= 600:
            raise InputError(f"$HEARD_LEASE_S must be from 1 to 600 (seconds), got {self.lease_s}")

    @classmethod
    def variables(cls) -> dict[str, str]:
        """Each field's environment variable."""
        return {f.name: f.metadata["env"] for f in fields(cls)}


def _parse(name: str, raw: str, kind: Any) -> Any:
    if get_origin(kind) in (Union, types.UnionType):
        kind = next(a for a in get_args(kind) if a is not type(None))
    if kind is bool:
        if raw.strip().lower() in ("0", "false", "no", "off"):
            return False
        if raw.strip().lower() in ("1", "true", "yes", "on"):
            return True
        raise InputError(f"${name} must be 0 or 1, got {raw!r}")
    if kind in (int, float):
        try:
            value = kind(raw)
        except ValueError:
            raise InputError(f"${name} must be a number, got {raw!r}") from None
        if value < 0:
            raise InputError(f"${name} must be >= 0, got {raw!r}")
        return value
    return raw.strip()


def settings(environ: Mapping[str, str] | None = None) -> Settings:
    """The settings in ``environ`` (default: this process's environment).

    An empty variable counts as unset; a malformed one is an ``InputError`` naming it.
    """
    env = os.environ if environ is None else environ
    hints = get_type_hints(Settings)
    values: dict[str, Any] = {}
    for f in fields(Settings):
        raw = env.get(f.metadata["env"], "")
        if raw.strip():
            values[f.name] = _parse(f.metadata["env"], raw, hints[f.name])
    return Settings(**values)


def data_dir() -> Path:
    """heard's folder in the user's data directory (the SQLite store, uploads)."""
    from platformdirs import user_data_dir

    return Path(user_data_dir("heard", appauthor=False))


def default_database_url() -> str:
    """The SQLite file in heard's data directory."""
    return f"sqlite:///{data_dir() / 'heard.db'}"


def database_url(explicit: str | None = None) -> str:
    """The store's URL: ``explicit``, else ``$HEARD_DATABASE_URL``, else the SQLite default."""
    return explicit or settings().database_url or default_database_url()


def default_for_libraries(values: Mapping[str, str]) -> None:
    """Set, where the environment does not already, variables a library reads for itself
    (Celery's billiard reads ``REMAP_SIGTERM`` once, when it is imported): the one place heard
    writes its process's environment, so the processes it starts inherit them too."""
    for name, value in values.items():
        os.environ.setdefault(name, value)
