"""heard's settings: one module reads the environment, and the configuration page
(docs/configuration.md) lists every variable."""

from __future__ import annotations

import ast
from dataclasses import fields
from pathlib import Path

import pytest

import heard
from heard.errors import InputError
from heard.settings import Settings, settings

SRC = Path(heard.__file__).resolve().parent
CONFIGURATION = SRC.parents[1] / "docs" / "configuration.md"


def environment_reads(tree: ast.AST) -> list[int]:
    """Lines that touch the process environment: os.environ, os.getenv, os.putenv, environ."""
    lines = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv", "putenv")) or (
            isinstance(node, ast.ImportFrom)
            and node.module == "os"
            and any(a.name in ("environ", "getenv", "putenv") for a in node.names)
        ):
            lines.append(node.lineno)
    return lines


def test_only_the_settings_module_reads_the_environment() -> None:
    readers = {
        f"{path.relative_to(SRC)}:{line}"
        for path in SRC.rglob("*.py")
        if path != SRC / "settings.py"
        for line in environment_reads(ast.parse(path.read_text(encoding="utf-8")))
    }
    assert readers == set()
    assert environment_reads(ast.parse((SRC / "settings.py").read_text(encoding="utf-8")))


def test_the_configuration_page_lists_every_variable() -> None:
    page = CONFIGURATION.read_text(encoding="utf-8")
    missing = [name for name in Settings.variables().values() if f"`{name}`" not in page]
    assert missing == []


def test_every_setting_has_a_variable_and_a_meaning() -> None:
    for f in fields(Settings):
        assert f.metadata["env"].startswith("HEARD_")
        assert len(f.metadata["doc"]) > 20


def test_unset_and_empty_variables_give_the_defaults() -> None:
    assert settings({}) == Settings()
    assert settings(dict.fromkeys(Settings.variables().values(), " ")) == Settings()


def test_variables_are_parsed_by_type() -> None:
    s = settings(
        {"HEARD_STUCK_AFTER_S": "6", "HEARD_ASR_THREADS": "2", "HEARD_DENSE": "0",
         "HEARD_LLM_PROVIDER": " openai ", "HEARD_DATABASE_URL": "sqlite:///x.db"}
    )  # fmt: skip
    assert (s.stuck_after_s, s.asr_threads, s.dense) == (6.0, 2, False)
    assert (s.llm_provider, s.database_url) == ("openai", "sqlite:///x.db")


@pytest.mark.parametrize(
    ("variable", "value", "problem"),
    [("HEARD_STUCK_AFTER_S", "soon", "must be a number"),
     ("HEARD_RETRY_DELAY_S", "-1", "must be >= 0"),
     ("HEARD_ASR_THREADS", "2.5", "must be a number"),
     ("HEARD_DENSE", "maybe", "must be 0 or 1")],
)  # fmt: skip
def test_a_malformed_variable_is_an_input_error_naming_it(
    variable: str, value: str, problem: str
) -> None:
    with pytest.raises(InputError, match=rf"\${variable} {problem}"):
        settings({variable: value})
