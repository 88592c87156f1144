from __future__ import annotations

from pathlib import Path

import pytest

from heard.samples import sample_path

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(
    __import__("os").environ.get("HEARD_SHARED_DATA", REPO.parent / "shared" / "data")
)


@pytest.fixture
def jfk_log() -> Path:
    return sample_path("jfk_partials.jsonl")


@pytest.fixture
def runon_log() -> Path:
    return sample_path("runon_partials.jsonl")
