"""The memory tests' workspace: a copy of tests/data/memory per test process, so nothing a
recall keeps beside the pages (their vectors in ``.vectors/``) lands in the repository."""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path

_ORIGINAL = Path(__file__).resolve().parent / "data" / "memory"
_COPY = Path(tempfile.mkdtemp(prefix="heard-workspace-"))
atexit.register(shutil.rmtree, _COPY, ignore_errors=True)

WORKSPACE = _COPY / "memory"
shutil.copytree(_ORIGINAL, WORKSPACE)
