"""The memory workspace: pages and a tree of nodes, as markdown files with YAML frontmatter.

* ``memory/pages/<slug>.md``: ``summary``, ``aliases``, ``edges: [slug]`` and a body;
* ``memory/tree/<id>.md``: ``children: ["page:<slug>" | "node:<id>"]``, optional
  ``summary`` and ``routing_hints``, and a body.

``compose_node_index`` renders a node's index at read time from its children
(nothing is stored), for a descent step to read. ``check_workspace`` reports
dangling references, cycles and duplicate slugs.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from heard.errors import InputError

__all__ = [
    "ChildRef",
    "Page",
    "PageIndex",
    "TreeIndex",
    "TreeNode",
    "Workspace",
    "check_workspace",
    "compose_node_index",
    "load_page",
    "load_workspace",
    "write_page",
]

ROUTING_HINTS_LABEL = "Routing hints:"
SUMMARY_MAX_CHARS = 240


@dataclass(frozen=True, slots=True)
class Page:
    slug: str
    summary: str
    aliases: tuple[str, ...] = ()
    edges: tuple[str, ...] = ()
    body: str = ""
    path: Path | None = None


@dataclass(frozen=True, slots=True)
class ChildRef:
    kind: Literal["page", "node"]
    ref: str


@dataclass(frozen=True, slots=True)
class TreeNode:
    id: str
    summary: str = ""
    routing_hints: str = ""
    children: tuple[ChildRef, ...] = ()
    body: str = ""
    path: Path | None = None


@dataclass(slots=True)
class PageIndex:
    by_slug: dict[str, Page] = field(default_factory=dict)


@dataclass(slots=True)
class TreeIndex:
    nodes: dict[str, TreeNode] = field(default_factory=dict)

    def children(self, node_id: str) -> tuple[ChildRef, ...]:
        node = self.nodes.get(node_id)
        return node.children if node else ()

    @property
    def roots(self) -> list[str]:
        """Nodes no other node lists as a child, in id order."""
        referenced = {c.ref for n in self.nodes.values() for c in n.children if c.kind == "node"}
        return sorted(n for n in self.nodes if n not in referenced)


@dataclass(slots=True)
class Workspace:
    pages: PageIndex
    tree: TreeIndex
    problems: list[str] = field(default_factory=list)
    """Problems found while loading (duplicate slugs), reported by ``check_workspace``."""
    root: Path | None = None
    """The folder it was loaded from (its page vectors are kept in ``root/.vectors``)."""


def _split_frontmatter(path: Path) -> tuple[dict[str, Any], str]:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"{path}: not UTF-8 text (bad byte at {e.start})") from None
    except OSError as e:
        raise InputError(f"{path}: cannot read ({e.strerror})") from None
    if not text.startswith("---"):
        return {}, text
    # "\n" only: U+2028, U+2029 and U+0085 are text inside a line, not line breaks
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    except StopIteration:
        raise InputError(f"{path}:1: frontmatter opened with --- is never closed") from None
    try:
        data = yaml.safe_load("\n".join(lines[1:end])) or {}
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = (mark.line + 2) if mark is not None else 1
        raise InputError(
            f"{path}:{line}: malformed frontmatter ({getattr(e, 'problem', e)})"
        ) from None
    if not isinstance(data, dict):
        raise InputError(f"{path}:2: frontmatter must be a mapping, got {type(data).__name__}")
    return data, "\n".join(lines[end + 1 :]).strip()


def _strings(value: Any, path: Path, key: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise InputError(f"{path}: {key} must be a list of strings")


def _text(value: Any, path: Path, key: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str | int | float):
        raise InputError(f"{path}: {key} must be text")
    return str(value).strip()


def _first_line(body: str) -> str:
    return next((line.strip() for line in body.splitlines() if line.strip()), "")


def _files(folder: Path) -> Iterator[Path]:
    return iter(sorted(folder.glob("*.md"))) if folder.is_dir() else iter(())


def load_page(path: Path) -> Page:
    """One page file; ``InputError`` naming it when it cannot be read as a page."""
    meta, body = _split_frontmatter(path)
    summary = _text(meta.get("summary"), path, "summary") or _first_line(body)
    return Page(
        path.stem,
        summary[:SUMMARY_MAX_CHARS],
        _strings(meta.get("aliases"), path, "aliases"),
        _strings(meta.get("edges"), path, "edges"),
        body,
        path,
    )


def write_page(
    folder: Path, slug: str, *, summary: str, aliases: list[str], edges: list[str], body: str
) -> Page:
    """Write a page atomically and only if it reads back as written: a temp file of this
    writer's own, loaded back and compared, then renamed over the page. Nothing is kept
    (``InputError``) when it would not load as the same page."""
    folder.mkdir(parents=True, exist_ok=True)
    meta = {"summary": summary, "aliases": aliases, "edges": edges}
    wanted = (
        (summary.strip() or _first_line(body))[:SUMMARY_MAX_CHARS],
        tuple(aliases),
        tuple(edges),
        body.strip(),
    )
    fd, temporary = tempfile.mkstemp(dir=folder, prefix=f".{slug}.", suffix=".tmp")
    os.close(fd)
    try:
        # readable UTF-8 first; escaped, for characters YAML would read back otherwise
        for readable in (True, False):
            frontmatter = yaml.safe_dump(meta, allow_unicode=readable, sort_keys=False)
            Path(temporary).write_text(f"---\n{frontmatter}---\n{body}", encoding="utf-8")
            loaded = load_page(Path(temporary))
            if (loaded.summary, loaded.aliases, loaded.edges, loaded.body) == wanted:
                break
        else:
            raise InputError(f"page {slug!r} would not read back as written")
        final = folder / f"{slug}.md"
        os.replace(temporary, final)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return Page(slug, loaded.summary, loaded.aliases, loaded.edges, loaded.body, final)


def load_workspace(root: str | Path) -> Workspace:
    """Load ``root/pages`` and ``root/tree``. A page that cannot be read is skipped and listed
    in ``problems`` (it must not take the rest of the memory down); a malformed tree node
    raises ``InputError``."""
    base = Path(root)
    if not base.is_dir():
        raise InputError(f"{base}: no such memory folder")
    pages, tree, problems = PageIndex(), TreeIndex(), []
    seen: dict[str, Path] = {}
    for path in _files(base / "pages"):
        try:
            page = load_page(path)
        except InputError as e:
            problems.append(f"{e} (skipped)")
            continue
        key = page.slug.casefold()
        if key in seen:
            problems.append(f"duplicate slug {page.slug!r}: {seen[key]} and {path}")
            continue
        seen[key] = path
        pages.by_slug[page.slug] = page
    for path in _files(base / "tree"):
        meta, body = _split_frontmatter(path)
        children = []
        for raw in _strings(meta.get("children"), path, "children"):
            kind, sep, ref = raw.partition(":")
            if not sep or kind not in ("page", "node") or not ref:
                raise InputError(f"{path}: child {raw!r} must be page:<slug> or node:<id>")
            children.append(ChildRef(kind, ref))  # type: ignore[arg-type]
        tree.nodes[path.stem] = TreeNode(
            path.stem,
            _text(meta.get("summary"), path, "summary"),
            _text(meta.get("routing_hints"), path, "routing_hints"),
            tuple(children),
            body,
            path,
        )
    return Workspace(pages, tree, problems, base)


def _node_summary(node: TreeNode) -> str:
    return node.summary.strip() or _first_line(node.body)


def compose_node_index(node_id: str, tree: TreeIndex, pages: PageIndex) -> str:
    """One line per resolvable child, in authored order, then the node's routing hints.

    ``[node:<id>] <summary>`` for a sub-node (its summary, else its body's first
    non-empty line, else just the header; whitespace never counts as a summary);
    ``[page:<slug>] <summary>`` for a page; children that do not resolve are skipped
    (``check_workspace`` reports them). Empty string when there is nothing to say.
    """
    lines = []
    for child in tree.children(node_id):
        if child.kind == "node":
            sub = tree.nodes.get(child.ref)
            if sub is None:
                continue
            summary = _node_summary(sub)
            lines.append(f"[node:{child.ref}] {summary}" if summary else f"[node:{child.ref}]")
        else:
            page = pages.by_slug.get(child.ref)
            if page is not None:
                lines.append(f"[page:{child.ref}] {page.summary}")
    node = tree.nodes.get(node_id)
    hints = node.routing_hints.strip() if node is not None else ""
    if hints:
        lines.append(f"{ROUTING_HINTS_LABEL} {hints}")
    return "\n".join(lines)


def check_workspace(ws: Workspace) -> list[str]:
    """Dangling references, cycles in the tree and duplicate slugs, one line each."""
    problems = list(ws.problems)
    slugs = ws.pages.by_slug
    aliases: dict[str, str] = {}
    for page in slugs.values():
        for edge in page.edges:
            if edge not in slugs:
                problems.append(f"page {page.slug}: edge to unknown page {edge!r}")
        for alias in page.aliases:
            key = alias.casefold()
            if key in aliases and aliases[key] != page.slug:
                problems.append(f"alias {alias!r} names both {aliases[key]} and {page.slug}")
            aliases[key] = page.slug
    for node in ws.tree.nodes.values():
        for child in node.children:
            known = slugs if child.kind == "page" else ws.tree.nodes
            if child.ref not in known:
                problems.append(f"node {node.id}: child {child.kind}:{child.ref} does not exist")
    problems += _cycles(ws.tree)
    return problems


def _cycles(tree: TreeIndex) -> list[str]:
    found: list[str] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(node_id: str, path: list[str]) -> None:
        state[node_id] = 1
        for child in tree.children(node_id):
            if child.kind != "node" or child.ref not in tree.nodes:
                continue
            if state.get(child.ref) == 1:
                cycle = [*path[path.index(child.ref) :], child.ref]
                found.append("cycle in the tree: " + " -> ".join(cycle))
            elif child.ref not in state:
                visit(child.ref, [*path, child.ref])
        state[node_id] = 2

    for node_id in sorted(tree.nodes):
        if node_id not in state:
            visit(node_id, [node_id])
    return found
