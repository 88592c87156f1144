"""Write constraints.txt: the releases the test suite passed with, one Python version or more.

Each input is what ``pip freeze`` printed in an environment where ``bash tools/test.sh`` passed
(on the oldest patch release of its Python that heard supports: a pin holds for all of them),
named by that environment's Python version; a release the versions share is pinned for all, one
they differ on is pinned per version (``; python_version == "3.11"``), the newest Python's pins
standing for every later one. A version not given keeps its lines from the current file.

    .venv/bin/pip freeze --exclude-editable > /tmp/3.11.txt   # after a passing run
    python tools/pin.py 3.11=/tmp/3.11.txt 3.13=/tmp/3.13.txt
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[1]
HEADER = """\
# The releases heard's test suite last passed with, per Python version: `bash tools/test.sh`
# installs heard[dev] with these as constraints (pip's -c: a pin installs nothing by itself);
# `bash tools/test.sh --newest` ignores them and takes the newest releases. Made by
# tools/pin.py from `pip freeze` after passing runs; do not edit by hand.
"""


def read_freeze(text: str) -> dict[str, str]:
    """Name -> version from ``pip freeze`` output (editable installs and heard left out)."""
    pins: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", "-e", "-")) or " @ " in line:
            continue
        try:
            req = Requirement(line)
        except InvalidRequirement as e:
            raise SystemExit(f"pin.py: not a pinned requirement: {line!r} ({e})") from None
        (spec,) = req.specifier
        if spec.operator != "==" or canonicalize_name(req.name) == "heard":
            continue
        pins[canonicalize_name(req.name)] = spec.version
    return pins


def read_constraints(text: str) -> dict[str, dict[str, str]]:
    """Python version -> pins, from a constraints.txt this tool wrote."""
    pythons = re.search(r"^# pinned for Python (.+)$", text, re.MULTILINE)
    shared: dict[str, str] = {}
    by_python: dict[str, dict[str, str]] = {
        python: {} for python in (pythons.group(1).split(", ") if pythons else [])
    }
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        req = Requirement(line)
        (spec,) = req.specifier
        marker = str(req.marker or "")
        if m := re.search(r'python_version [=>]= "([\d.]+)"', marker):
            by_python.setdefault(m.group(1), {})[canonicalize_name(req.name)] = spec.version
        else:
            shared[canonicalize_name(req.name)] = spec.version
    return {python: {**shared, **pins} for python, pins in by_python.items()}


def merge(by_python: dict[str, dict[str, str]]) -> str:
    """constraints.txt for these Pythons' pins: one line where they agree, else one each."""
    pythons = sorted(by_python, key=lambda v: tuple(int(p) for p in v.split(".")))
    newest = pythons[-1]
    lines = [HEADER, f"# pinned for Python {', '.join(pythons)}\n"]
    for name in sorted({n for pins in by_python.values() for n in pins}):
        versions = {python: by_python[python].get(name) for python in pythons}
        if len(set(versions.values())) == 1:
            lines.append(f"{name}=={versions[newest]}\n")
            continue
        for python, version in versions.items():
            if version is not None:
                op = ">=" if python == newest else "=="
                lines.append(f'{name}=={version} ; python_version {op} "{python}"\n')
    return "".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "freezes", nargs="+", metavar="PYTHON=FILE",
        help="a Python version and the pip freeze output of a passing run",
    )  # fmt: skip
    parser.add_argument("-o", "--output", type=Path, default=REPO / "constraints.txt")
    args = parser.parse_args(argv)
    by_python: dict[str, dict[str, str]] = {}
    if args.output.exists():
        by_python = read_constraints(args.output.read_text(encoding="utf-8"))
    for item in args.freezes:
        python, sep, file = item.partition("=")
        if not sep or not re.fullmatch(r"3\.\d+", python):
            parser.error(f"{item!r}: give PYTHON=FILE, e.g. 3.11=/tmp/freeze.txt")
        try:
            by_python[python] = read_freeze(Path(file).read_text(encoding="utf-8"))
        except OSError as e:
            parser.error(f"{file}: {e.strerror}")
    args.output.write_text(merge(by_python), encoding="utf-8")
    print(f"{args.output}: pins for Python {', '.join(sorted(by_python))}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
