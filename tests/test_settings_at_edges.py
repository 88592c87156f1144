"""Settings are read at the edges only (issue 27): the CLI, the server's and the worker's
start-up, and ``settings.py`` itself. A library module that reads the environment on its own
cannot be told otherwise by its caller: ``heard transcribe --queue --db X`` stored a meeting in
X while the pipeline opened ``$HEARD_DATABASE_URL``.

Found by reading the source: a call of ``settings()`` or ``database_url()`` (which falls back to
``$HEARD_DATABASE_URL``) anywhere outside the edges fails this test.
"""

from __future__ import annotations

import ast
from pathlib import Path

import heard

SRC = Path(heard.__file__).resolve().parent
EDGES = ("cli/", "settings.py", "meetings/celery_app.py")
"""The command line, where settings are made, and the worker's start-up (``configure``)."""
READERS = {"settings", "database_url"}


def calls_outside_the_edges(root: Path = SRC) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        if relative.startswith(EDGES):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
                if name in READERS:
                    found.append(f"{relative}:{node.lineno}: {name}()")
    return sorted(found)


def test_only_the_edges_read_the_settings() -> None:
    assert calls_outside_the_edges() == []


def test_the_scan_sees_a_call(tmp_path: Path) -> None:
    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / "x.py").write_text(
        "from heard import settings as s\ns.settings().dense\ns.database_url(None)\n"
    )
    (tmp_path / "cli").mkdir()
    (tmp_path / "cli" / "y.py").write_text("settings()\n")
    assert calls_outside_the_edges(tmp_path) == [
        "memory/x.py:2: settings()",
        "memory/x.py:3: database_url()",
    ]
