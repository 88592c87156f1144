"""``heard memory``: evidence in, recall out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from heard.cli.app import app, reports_errors
from heard.cli.meetings import DbOption, open_store
from heard.memory.evidence import MAX_QUERY_CHARS
from heard.memory.store import ingest_file, load_index

memory_app = typer.Typer(
    help="Memory a voice assistant recalls from: final utterances as evidence.",
    no_args_is_help=True,
)
app.add_typer(memory_app, name="memory")


@memory_app.command()
@reports_errors
def ingest(
    utterances: Annotated[Path, typer.Argument(help="JSONL: id, speaker, text, session, t.")],
    db: DbOption = None,
) -> None:
    """Store final utterances as evidence (all of the file, or nothing)."""
    database = open_store(db)
    database.migrate()
    count = ingest_file(database, utterances)
    typer.echo(f"stored {count} utterances in {database.safe_url}")


@memory_app.command()
@reports_errors
def recall(
    query: Annotated[str, typer.Argument(help="What the assistant needs to remember.")],
    k: Annotated[int, typer.Option("-k", min=1, max=1000, help="How many items.")] = 10,
    db: DbOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Rank stored evidence for QUERY (BM25 with neighbouring turns and speakers)."""
    database = open_store(db)
    index = load_index(database) if database.has_schema() else None
    if index is None or not len(index):
        from heard.errors import InputError

        raise InputError(f"memory is empty in {database.safe_url}; run `heard memory ingest` first")
    hits = index.recall(query, k=k)
    if index.truncated_last_query:
        typer.echo(f"heard: note: the query was cut to {MAX_QUERY_CHARS} characters", err=True)
    if as_json:
        payload = [
            {"id": h.id, "kind": h.kind, "score": h.score, "speaker": h.speaker, "text": h.text}
            for h in hits
        ]
        typer.echo(json.dumps(payload, indent=1, ensure_ascii=False))
        return
    for rank, h in enumerate(hits, 1):
        typer.echo(f"{rank:>3}. {h.score:7.3f}  {h.kind:<8} {h.id:<12} {h.speaker}: {h.text}")
