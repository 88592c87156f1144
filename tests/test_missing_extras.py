"""What the plain install lacks (issue 42's review): a database driver or Celery that an extra
brings is named in one line, with the extra to install, not a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from heard.errors import MissingDependencyError
from heard.store.database import Database


def test_a_database_url_whose_driver_is_missing_names_it() -> None:
    with pytest.raises(MissingDependencyError, match="needs the Python package 'MySQLdb'"):
        Database("mysql://heard@127.0.0.1:1/heard")


def test_no_psycopg_names_the_postgres_extra_in_one_line(tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['psycopg'] = None\n"
        "from heard.cli import app\n"
        "app(['meetings', '--db', 'postgresql+psycopg://heard@127.0.0.1:1/heard'])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "HOME": str(tmp_path)})  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        "heard: error: the database URL needs the Python package 'psycopg' (heard[postgres]: "
        "pip install '.[postgres]' in heard's clone)"
    ]


def test_no_celery_names_the_celery_extra_in_one_line(tmp_path: Path) -> None:
    code = "import sys; sys.modules['celery'] = None\nfrom heard.cli import app\napp(['worker'])\n"
    env = {**os.environ, "HOME": str(tmp_path),
           "HEARD_DATABASE_URL": f"sqlite:///{tmp_path / 'h.db'}"}  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env=env)  # fmt: skip
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert "Celery workers need heard[celery]" in lines[0]
