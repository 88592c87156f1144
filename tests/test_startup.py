"""What starting heard costs: the modules ``import heard`` and ``heard --help`` load (not a time).

bench/startup.py measures the CPU time; this guards the cause. Every CLI call pays for what
the package and the command modules import at their top, so the heavy libraries load only
inside the commands (and library functions) that use them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("sqlalchemy", "numpy", "torch", "faster_whisper", "ctranslate2", "fastapi", "celery",
         "pydantic", "yaml", "alembic", "httpx", "uvicorn", "av")  # fmt: skip


def loaded_after(code: str, env: dict[str, str] | None = None) -> set[str]:
    """The modules a fresh interpreter holds after running ``code`` (with ``env`` added to the
    environment)."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60,
        env={**os.environ, **(env or {})},
    )  # fmt: skip
    return set(json.loads(out.stdout.splitlines()[-1]))


def heavy(modules: set[str]) -> set[str]:
    """The heavy libraries among ``modules``, by top-level name."""
    return {m.split(".")[0] for m in modules} & set(HEAVY)


def test_import_heard_loads_heard_alone() -> None:
    modules = loaded_after("import heard")
    assert heavy(modules) == set()
    assert {m for m in modules if m.startswith("heard")} == {"heard"}


def help_code(argv: list[str]) -> str:
    return (
        "from heard.cli import app\n"
        f"try:\n    app({argv!r}, prog_name='heard')\nexcept SystemExit:\n    pass"
    )


def test_help_loads_no_heavy_library() -> None:
    assert heavy(loaded_after(help_code(["--help"]))) == set()


@pytest.mark.parametrize(
    "argv",
    [["transcribe", "--help"], ["memory", "recall", "--help"], ["users", "add", "--help"],
     ["replay", "--help"], ["serve", "--help"], ["stream", "--help"]],
)  # fmt: skip
def test_a_commands_help_loads_nothing_of_its_work(argv: list[str]) -> None:
    # Typer itself validates a command's parameters with pydantic once it builds them.
    assert heavy(loaded_after(help_code(argv))) <= {"pydantic"}


def test_public_names_still_resolve_on_first_use() -> None:
    modules = loaded_after("import heard\nheard.Database\nheard.tokenize('x')")
    assert "sqlalchemy" in modules
    assert "heard.store.database" in modules


RECALL_NEEDS_NONE_OF = ("heard.meetings", "heard.server", "heard.asr", "heard.cli.meeting_jobs",
                        "heard.diarize", "faster_whisper", "ctranslate2", "fastapi", "celery",
                        "uvicorn", "av", "alembic")  # fmt: skip
"""What a recall never uses: the meeting pipeline, the server, speech recognition, and Alembic
on a store whose schema is current (issue 46: ``heard memory recall`` imported the meeting
pipeline through ``meeting_jobs``, and Alembic for a schema it did not change)."""


def test_a_recall_loads_no_meeting_pipeline_server_or_recognizer(tmp_path: Path) -> None:
    turns = tmp_path / "turns.jsonl"
    turns.write_text(
        "\n".join(json.dumps({"id": f"t{i}", "speaker": "ana", "text": text, "session": "s1"})
                  for i, text in enumerate(["we ship on friday", "the budget is approved"]))
        + "\n", encoding="utf-8",
    )  # fmt: skip
    db = f"sqlite:///{tmp_path / 'h.db'}"
    ingest = ["memory", "ingest", str(turns), "--db", db]
    loaded_after(help_code(ingest), env={"HEARD_DENSE": "0"})
    loaded = loaded_after(help_code(["memory", "recall", "when do we ship", "--db", db]),
                          env={"HEARD_DENSE": "0"})  # fmt: skip
    assert "heard.memory.recall" in loaded  # it did recall
    assert sorted(m for m in loaded if m.startswith(RECALL_NEEDS_NONE_OF)) == []
