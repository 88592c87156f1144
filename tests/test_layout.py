"""The house's rules, read from the imports: all SQL in the store, no I/O in the pure cores."""

from __future__ import annotations

import ast
from pathlib import Path

import heard

SRC = Path(heard.__file__).resolve().parent
SQL = ("sqlalchemy", "alembic", "psycopg")
IO = (*SQL, "faster_whisper", "ctranslate2", "fastapi", "starlette", "uvicorn", "celery",
      "redis", "openai", "anthropic", "google", "httpx", "torch", "heard.store", "heard.asr",
      "heard.server", "heard.meetings", "heard.llm")  # fmt: skip
PURE = ("transcript", "timeline", "release/policy.py", "release/tracker.py", "speech.py")


def imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def importers(prefixes: tuple[str, ...], files: list[Path]) -> dict[str, list[str]]:
    found = {}
    for path in files:
        hits = sorted(n for n in imports(path) if n.startswith(prefixes))
        if hits:
            found[str(path.relative_to(SRC))] = hits
    return found


def test_only_the_store_speaks_sql() -> None:
    outside = [p for p in SRC.rglob("*.py") if SRC / "store" not in p.parents]
    assert importers(SQL, outside) == {}


def test_the_pure_cores_import_no_io() -> None:
    pure = [p for p in SRC.rglob("*.py") if str(p.relative_to(SRC)).startswith(PURE)]
    assert len(pure) > 10
    assert importers(IO, pure) == {}


DOWNSTREAM = ("transcript/speculation.py", "transcript/prefetch.py", "release/", "live/")
"""What a live event reaches after the stabilizer: it takes the words, keys and tokens the
step carries (issue 27). ``release/alignment.py`` keys words itself on purpose: a final is
aligned with what was shown on normalized words, whatever the turn's word rule."""


def test_nothing_after_the_stabilizer_keys_or_tokenizes_a_step_again() -> None:
    files = [
        p
        for p in SRC.rglob("*.py")
        if str(p.relative_to(SRC)).startswith(DOWNSTREAM) and p != SRC / "release" / "alignment.py"
    ]
    assert len(files) > 10
    found = importers(("heard.transcript.tokenize", "heard.transcript.words"), files)
    assert found == {}


RANKING = ("memory/bm25.py", "memory/evidence.py", "memory/language.py", "memory/recall.py",
           "memory/selection.py", "memory/when.py")  # fmt: skip
"""What ranks memory: it is handed its items, and reads no file and no database itself."""
FILE_IO = ("os", "io", "pathlib", "gzip", "shutil", "tempfile", "sqlite3", "importlib")
PROVIDERS = ("heard.llm.providers", "heard.llm.anthropic_provider", "heard.llm.openai_provider",
             "heard.llm.gemini_provider")  # fmt: skip
"""The LLM SDKs behind ``heard.llm.provider``'s protocol, which ranking may call through."""


def opens_files(path: Path) -> bool:
    return any(
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "open"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
    )


def io_helpers(path: Path) -> list[str]:
    """Names a file takes from heard's own modules that read or write files or the store."""
    return [
        alias.name
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("heard")
        for alias in node.names
        if alias.name.startswith(("load_", "read_", "write_", "store_", "cached_", "ingest"))
    ]


def test_memory_ranking_reads_no_file_and_no_database() -> None:
    ranking = [SRC / name for name in RANKING]
    assert all(p.is_file() for p in ranking)
    assert {str(p.relative_to(SRC)): io_helpers(p) for p in ranking if io_helpers(p)} == {}
    banned = (*(n for n in IO if n != "heard.llm"), *PROVIDERS, *FILE_IO)
    assert importers(banned, ranking) == {}
    assert [str(p.relative_to(SRC)) for p in ranking if opens_files(p)] == []
