"""Run the real ``heard`` entry point in a working folder of its own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def heard(*args: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """``heard ARGS`` with ``tmp_path`` as its folder and its SQLite store; no LLM provider."""
    env = {**os.environ, "HEARD_DATABASE_URL": f"sqlite:///{tmp_path / 'm.db'}"}
    env.pop("HEARD_LLM_PROVIDER", None)
    return subprocess.run([sys.executable, "-m", "heard", *args], capture_output=True, text=True,
                          env=env, check=False, cwd=tmp_path)  # fmt: skip
