from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path

import pytest

import heard.memory.workspace as workspace_module
from heard.errors import InputError
from heard.memory.workspace import (
    ChildRef,
    Page,
    PageIndex,
    TreeIndex,
    TreeNode,
    check_workspace,
    compose_node_index,
    load_page,
    load_workspace,
    write_page,
)
from tests.workspace import WORKSPACE


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
def test_a_malformed_page_names_the_file_and_line_and_is_skipped(
    tmp_path: Path, content: str, problem: str
) -> None:
    (tmp_path / "pages").mkdir()
    (tmp_path / "pages" / "bad.md").write_text(content)
    (tmp_path / "pages" / "good.md").write_text("---\nsummary: fine\n---\nbody\n")
    with pytest.raises(InputError, match=problem) as info:
        load_page(tmp_path / "pages" / "bad.md")
    assert "bad.md" in str(info.value)
    workspace = load_workspace(tmp_path)  # the rest of the memory still loads
    assert list(workspace.pages.by_slug) == ["good"]
    [reported] = workspace.problems
    assert "bad.md" in reported
    assert problem in reported
    assert reported.endswith("(skipped)")


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\u0085", "\r"])
def test_a_page_is_written_whole_and_reads_back_as_written(tmp_path: Path, separator: str) -> None:
    summary = f"before{separator}---{separator}after"
    page = write_page(tmp_path, "odd", summary=summary, aliases=["a"], edges=[], body="body")
    assert load_page(tmp_path / "odd.md").summary == page.summary == summary
    assert [p.name for p in tmp_path.iterdir()] == ["odd.md"]  # no temp file left behind


def test_a_page_that_would_not_read_back_is_not_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_page(tmp_path, "p", summary="first", aliases=[], edges=[], body="one")
    real = workspace_module.load_page
    # a fault between writing and reading back: the file on disk is not what was asked
    monkeypatch.setattr(workspace_module, "load_page", lambda path: replace(real(path), body="?"))
    with pytest.raises(InputError, match="would not read back"):
        write_page(tmp_path, "p", summary="second", aliases=[], edges=[], body="two")
    monkeypatch.undo()
    assert load_page(tmp_path / "p.md").body == "one"  # the old page stands
    assert [p.name for p in tmp_path.iterdir()] == ["p.md"]


def test_concurrent_writers_of_one_page_each_write_whole(tmp_path: Path) -> None:
    def write(i: int) -> None:
        write_page(tmp_path, "same", summary=f"writer {i}", aliases=[], edges=[], body=f"{i}")

    threads = [threading.Thread(target=write, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    page = load_page(tmp_path / "same.md")
    assert page.summary == f"writer {page.body}"  # one writer's whole page, never a mix
    assert [p.name for p in tmp_path.iterdir()] == ["same.md"]


def test_a_bad_child_ref_and_a_missing_folder(tmp_path: Path) -> None:
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "t.md").write_text('---\nchildren: ["file:x"]\n---\n')
    with pytest.raises(InputError, match="page:<slug> or node:<id>"):
        load_workspace(tmp_path)
    with pytest.raises(InputError, match="no such memory folder"):
        load_workspace(tmp_path / "absent")
