"""heard's exceptions: all declared in heard.errors, in the tree its docstring draws."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import heard
import heard.errors
from heard.errors import HeardError

SRC = Path(heard.__file__).resolve().parent


def documented_tree() -> dict[str, str | None]:
    """Each class drawn in heard.errors' docstring and its parent (None for the root)."""
    assert heard.errors.__doc__ is not None
    parents: dict[str, str | None] = {}
    stack: list[tuple[int, str]] = []
    for line in heard.errors.__doc__.splitlines():
        match = re.match(r"^(\s*(?:[│ ]   )*(?:[├└]── )?)(\w+Error)\b", line)
        if not match:
            continue
        depth, name = len(match.group(1)), match.group(2)
        while stack and stack[-1][0] >= depth:
            stack.pop()
        parents[name] = stack[-1][1] if stack else None
        stack.append((depth, name))
    return parents


def real_tree() -> dict[str, str | None]:
    """Each subclass of HeardError and its nearest HeardError ancestor."""
    tree: dict[str, str | None] = {"HeardError": None}

    def walk(cls: type[HeardError]) -> None:
        for sub in cls.__subclasses__():
            tree[sub.__name__] = cls.__name__
            walk(sub)

    walk(HeardError)
    return tree


def test_the_documented_tree_is_the_real_one() -> None:
    assert documented_tree() == real_tree()


def test_every_error_is_exported_from_heard_errors() -> None:
    assert set(real_tree()) == set(heard.errors.__all__)


def test_no_module_but_heard_errors_declares_an_exception() -> None:
    elsewhere = []
    for path in SRC.rglob("*.py"):
        if path.name == "errors.py" and path.parent == SRC:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and any(
                isinstance(base, ast.Name | ast.Attribute)
                and ast.unparse(base).split(".")[-1].endswith(("Error", "Exception"))
                for base in node.bases
            ):
                elsewhere.append(f"{path.relative_to(SRC)}: {node.name}")
    assert elsewhere == []


def test_the_public_errors_are_heard_errors() -> None:
    for name in heard.__all__:
        if name.endswith("Error"):
            assert issubclass(getattr(heard, name), HeardError)
