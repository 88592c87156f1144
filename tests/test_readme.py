"""The Python examples of README.md and of the documentation site (docs/) run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
# ```python blocks run here; ```py blocks need outside services (a Pipecat transport, a Gemini key)
BLOCKS = [
    pytest.param(page, code, id=f"{page.name}:{n}")
    for page in PAGES
    for n, code in enumerate(re.findall(r"```python\n(.*?)```", page.read_text("utf-8"), re.S))
]


def test_the_docs_have_python_examples() -> None:
    assert len(BLOCKS) >= 5


@pytest.mark.parametrize(("page", "code"), BLOCKS)
def test_python_block_runs(
    page: Path,
    code: str,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)  # examples may write files (a SQLite store) where they run
    exec(compile(code, str(page), "exec"), {})
    assert capsys.readouterr().out


def test_the_fresh_root_script_runs_readmes_two_commands_verbatim() -> None:
    """tools/fresh_root.sh runs in a fresh Debian root what README's quick start says, word
    for word: the first two ```bash blocks after its heading."""
    import subprocess

    text = (REPO / "README.md").read_text("utf-8")
    quick = text[text.index("## Quick start") :]
    said = [block.strip() for block in re.findall(r"```bash\n(.*?)```", quick, re.S)[:2]]
    assert said[0].startswith("python3 -m venv .venv")
    assert said[1].startswith("bash tools/test.sh")
    printed = subprocess.run(
        ["bash", str(REPO / "tools" / "fresh_root.sh"), "--print-commands"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert printed.splitlines() == said
