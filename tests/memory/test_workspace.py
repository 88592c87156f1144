from __future__ import annotations

from pathlib import Path

import pytest

from heard.errors import InputError
from heard.memory.workspace import (
    ChildRef,
    Page,
    PageIndex,
    TreeIndex,
    TreeNode,
    check_workspace,
    compose_node_index,
    load_workspace,
)

WORKSPACE = Path(__file__).resolve().parents[1] / "data" / "memory"


def test_loads_pages_and_tree() -> None:
    ws = load_workspace(WORKSPACE)
    rhea = ws.pages.by_slug["rhea"]
    assert rhea.aliases == ("Rhea Sharma", "R. Sharma")
    assert rhea.edges == ("tokyo-office", "launch-plan")
    assert ws.pages.by_slug["boat-trip"].summary.startswith(
        "Boat trip on the lake"
    )  # first body line
    assert ws.tree.roots == ["root"]
    assert ws.tree.children("people") == (ChildRef("page", "rhea"),)


def test_composed_index_follows_the_rules() -> None:
    ws = load_workspace(WORKSPACE)
    assert compose_node_index("root", ws.tree, ws.pages) == (
        "[node:people] People the user works with\n"
        "[node:work] Projects, plans and offices.\n"
        "[page:boat-trip] Boat trip on the lake with the uncle, planned for a warm weekend.\n"
        "Routing hints: people and work questions go down; trips and leisure stay here"
    )
    work = compose_node_index("work", ws.tree, ws.pages).splitlines()
    assert work[0].startswith("[page:launch-plan] Launch plan")
    assert len(work) == 3  # node:missing does not resolve and is skipped
    assert compose_node_index("nope", ws.tree, ws.pages) == ""


def test_compose_edge_cases_on_plain_data() -> None:
    pages = PageIndex({"a": Page("a", "about a")})
    tree = TreeIndex(
        {
            "n": TreeNode("n", children=(ChildRef("node", "bare"), ChildRef("page", "a"))),
            "bare": TreeNode("bare", body="\n\n  \n"),
            "empty": TreeNode("empty"),
        }
    )
    assert compose_node_index("n", tree, pages) == "[node:bare]\n[page:a] about a"
    assert compose_node_index("empty", tree, pages) == ""


def test_check_reports_dangling_refs_cycles_and_duplicates(tmp_path: Path) -> None:
    problems = check_workspace(load_workspace(WORKSPACE))
    assert "page launch-plan: edge to unknown page 'ghost-page'" in problems
    assert "node work: child node:missing does not exist" in problems
    (tmp_path / "pages").mkdir()
    (tmp_path / "tree").mkdir()
    (tmp_path / "pages" / "a.md").write_text("---\naliases: [Same]\n---\nA")
    (tmp_path / "pages" / "b.md").write_text("---\naliases: [same]\n---\nB")
    (tmp_path / "tree" / "x.md").write_text('---\nchildren: ["node:y"]\n---\n')
    (tmp_path / "tree" / "y.md").write_text('---\nchildren: ["node:x"]\n---\n')
    problems = check_workspace(load_workspace(tmp_path))
    assert "alias 'same' names both a and b" in problems
    assert any(p.startswith("cycle in the tree: x -> y -> x") for p in problems)


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("---\nsummary: [unclosed\n---\n", ":2: malformed frontmatter"),
        ("---\nsummary: fine\n", ":1: frontmatter opened with --- is never closed"),
        ("---\n- a list\n---\n", "frontmatter must be a mapping"),
        ("---\nedges: 5\n---\n", "edges must be a list of strings"),
    ],
)
def test_malformed_frontmatter_names_the_file_and_line(
    tmp_path: Path, content: str, problem: str
) -> None:
    (tmp_path / "pages").mkdir()
    (tmp_path / "pages" / "bad.md").write_text(content)
    with pytest.raises(InputError, match=problem) as info:
        load_workspace(tmp_path)
    assert "bad.md" in str(info.value)


def test_a_bad_child_ref_and_a_missing_folder(tmp_path: Path) -> None:
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "t.md").write_text('---\nchildren: ["file:x"]\n---\n')
    with pytest.raises(InputError, match="page:<slug> or node:<id>"):
        load_workspace(tmp_path)
    with pytest.raises(InputError, match="no such memory folder"):
        load_workspace(tmp_path / "absent")
