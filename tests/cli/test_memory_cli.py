from __future__ import annotations

import json
from pathlib import Path

from tests.cli.run import heard
from tests.workspace import WORKSPACE


def test_check_reports_problems_and_exits_1(tmp_path: Path) -> None:
    result = heard("memory", "check", str(WORKSPACE), cwd=tmp_path)
    assert result.returncode == 1
    assert "edge to unknown page 'ghost-page'" in result.stdout
    assert "5 pages, 3 tree nodes, 2 problems" in result.stdout


def test_check_a_clean_workspace_and_a_malformed_one(tmp_path: Path) -> None:
    (tmp_path / "memory" / "pages").mkdir(parents=True)
    (tmp_path / "memory" / "pages" / "a.md").write_text("---\nsummary: fine\n---\nbody")
    clean = heard("memory", "check", cwd=tmp_path)  # ./memory by default
    assert clean.returncode == 0, clean.stderr
    assert "0 problems" in clean.stdout
    (tmp_path / "memory" / "pages" / "b.md").write_text("---\nsummary: [oops\n---\n")
    bad = heard("memory", "check", cwd=tmp_path)
    assert bad.returncode == 1
    assert "b.md:2: malformed frontmatter" in bad.stdout


def test_recall_pages_as_json_and_simulate(tmp_path: Path) -> None:
    result = heard("memory", "recall", "what does Rhea eat", "--memory", str(WORKSPACE), "--json",
                   cwd=tmp_path)  # fmt: skip
    assert result.returncode == 0, result.stderr
    items = json.loads(result.stdout)
    assert (items[0]["id"], items[0]["kind"]) == ("rhea", "page")
    assert items[0]["text"] == "Rhea Sharma, product lead; vegetarian, allergic to peanuts"
    simulated = heard("memory", "simulate", "what does Rhea eat", "--memory", str(WORKSPACE),
                      cwd=tmp_path)  # fmt: skip
    assert simulated.returncode == 0, simulated.stderr
    assert "== pass 1: what does Rhea eat" in simulated.stdout
    assert "gate   : ready (failed open: no provider)" in simulated.stdout
    assert "no LLM calls" in simulated.stdout


def test_recall_with_nothing_to_recall_from(tmp_path: Path) -> None:
    result = heard("memory", "recall", "anything", cwd=tmp_path)
    assert result.returncode == 2
    assert "memory is empty" in result.stderr
