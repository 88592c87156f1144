"""tools/pin.py writes constraints.txt from passing runs' pip freeze, per Python version, and
the constraints.txt in the repository is one it wrote (issue 54)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from packaging.requirements import Requirement
from tests.conftest import REPO

TOOL = REPO / "tools" / "pin.py"


def pin(tmp_path: Path, *freezes: tuple[str, str]) -> str:
    args = []
    for python, text in freezes:
        (tmp_path / f"{python}.txt").write_text(text, encoding="utf-8")
        args.append(f"{python}={tmp_path / f'{python}.txt'}")
    out = tmp_path / "constraints.txt"
    subprocess.run([sys.executable, str(TOOL), *args, "-o", str(out)], check=True,
                   capture_output=True)  # fmt: skip
    return out.read_text(encoding="utf-8")


def test_shared_releases_are_pinned_once_and_the_rest_per_python(tmp_path: Path) -> None:
    text = pin(
        tmp_path,
        ("3.11", "av==18.1.0\nnumpy==2.4.6\nrich==15.0.0\n-e git+x#egg=heard\n"),
        ("3.13", "av==19.0.2\nnumpy==2.5.5\nrich==15.0.0\naudioop-lts==0.2.2\n"),
    )
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    assert lines == [
        'audioop-lts==0.2.2 ; python_version >= "3.13"',
        'av==18.1.0 ; python_version == "3.11"',
        'av==19.0.2 ; python_version >= "3.13"',
        'numpy==2.4.6 ; python_version == "3.11"',
        'numpy==2.5.5 ; python_version >= "3.13"',
        "rich==15.0.0",
    ]


def test_a_python_not_given_keeps_its_pins(tmp_path: Path) -> None:
    pin(tmp_path, ("3.11", "av==18.1.0\nrich==15.0.0\n"), ("3.13", "av==19.0.2\nrich==15.0.0\n"))
    text = pin(tmp_path, ("3.13", "av==19.0.3\nrich==15.0.1\n"))
    assert 'av==18.1.0 ; python_version == "3.11"' in text
    assert 'rich==15.0.0 ; python_version == "3.11"' in text
    assert 'av==19.0.3 ; python_version >= "3.13"' in text


def test_the_repositorys_constraints_pin_every_line_for_a_tested_python() -> None:
    text = (REPO / "constraints.txt").read_text(encoding="utf-8")
    assert "# pinned for Python 3.11, 3.13" in text
    for line in text.splitlines():
        if line and not line.startswith("#"):
            req = Requirement(line)
            assert [s.operator for s in req.specifier] == ["=="], line
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    if here in ("3.11", "3.13"):  # a tested Python: one pin of PyAV applies, as of every name
        av = [Requirement(line) for line in text.splitlines() if line.startswith("av==")]
        assert len([r for r in av if r.marker is None or r.marker.evaluate()]) == 1
