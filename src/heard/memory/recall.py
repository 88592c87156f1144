"""The retrieval loop: scouts, tree walk, edges, sticky pages, then the gate; up to 3 passes.

Each pass:

1. **scouts**: BM25 over pages (slug, summary, aliases, body) and over evidence,
   and, with an embedder (``heard[dense]``), the pages nearest the query by cosine;
2. **tree walk**: from each root down, ``tree_width`` children are followed per
   node. With a provider, a forced ``choose_children`` call reads the node's
   composed index and picks them; without one (or when the call fails) the
   children whose index line shares the most words with the query are taken;
3. **edge expansion**: pages linked from candidates, up to ``edge_hops`` hops and
   ``edge_cap`` pages; unknown slugs are skipped;
4. **sticky carry-over**: pages injected on earlier turns join the pass's candidates
   (after the others), so the gate may pick and place them; they are never dropped,
   not even one the workspace no longer has or the gate leaves out;
5. **the gate** (``heard.memory.selection``): ready, or more with questions that
   become the next pass's queries. No provider: ready with every candidate.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np

from heard.errors import ProviderError
from heard.llm.provider import Provider, ToolSpec
from heard.memory.bm25 import BM25Index
from heard.memory.dense import DenseIndex, Embedder
from heard.memory.evidence import EvidenceIndex, Recalled
from heard.memory.selection import (
    CallRecord,
    CaptureSink,
    GateResult,
    call_with_timeout,
    render_turn,
    run_gate,
)
from heard.memory.workspace import ChildRef, Workspace, compose_node_index

__all__ = [
    "DESCENT_CALL_SITE",
    "FILTER_CALL_SITE",
    "MemoryRecall",
    "PassTrace",
    "RecallOptions",
    "RecallResult",
    "keep_sticky",
]

CALL_SITES = {"filter": "memory_filter", "descent": "memory_descent"}
"""Each lane's call site in capture records (the gate's is ``GATE_CALL_SITE``)."""
FILTER_CALL_SITE = CALL_SITES["filter"]
DESCENT_CALL_SITE = CALL_SITES["descent"]

DENSE_FLOOR = 0.3
"""A page the dense scout brings must be at least this close (cosine) to the query."""

FILTER_SYSTEM = (
    "You check pages a similarity search brought for a voice assistant's next reply. Given "
    "the conversation and the pages (slug - summary), call keep_pages with the slugs that "
    "could help; keep any you are unsure of."
)

DESCENT_SYSTEM = (
    "You walk a tree of memory notes to find what answers a question. Given one node's index "
    "(one line per child: [node:id] or [page:slug] with a summary, and routing hints), call "
    "choose_children with the children worth opening, best first; choose none if none helps."
)


@dataclass(frozen=True, slots=True)
class RecallOptions:
    k: int = 10
    """Evidence items, and pages beyond the sticky ones, returned at most."""
    max_passes: int = 3
    page_scouts: int = 8
    tree_width: int = 2
    edge_hops: int = 2
    edge_cap: int = 8
    llm_timeout_s: float = 20.0
    """Each LLM call (filter, descent, gate) is abandoned after this; its lane fails open."""


@dataclass(slots=True)
class PassTrace:
    number: int
    queries: list[str]
    scouted: list[str]
    tree: list[str]
    edges: list[str]
    sticky: list[str]
    gate: GateResult | None = None


@dataclass(slots=True)
class RecallResult:
    pages: list[str]
    evidence: list[Recalled]
    passes: list[PassTrace] = field(default_factory=list)
    calls: list[CallRecord] = field(default_factory=list)

    def items(self, workspace: Workspace | None) -> list[Recalled]:
        """Pages (in the gate's order) then evidence, as ranked items."""
        pages = []
        for rank, slug in enumerate(self.pages):
            page = workspace.pages.by_slug.get(slug) if workspace else None
            pages.append(
                Recalled(slug, "page", float(len(self.pages) - rank), page.summary if page else "")
            )
        return [*pages, *self.evidence]


def page_texts(workspace: Workspace) -> list[str]:
    """What recall reads of each page (slug order): its slug's words, summary, aliases, body."""
    return [
        " ".join([page.slug.replace("-", " "), page.summary, *page.aliases, page.body])
        for page in workspace.pages.by_slug.values()
    ]


class MemoryRecall:
    """Recall over a workspace of pages and an evidence index (either may be absent)."""

    def __init__(
        self,
        workspace: Workspace | None = None,
        evidence: EvidenceIndex | None = None,
        *,
        provider: Provider | None = None,
        options: RecallOptions | None = None,
        embedder: Embedder | None = None,
        page_vectors: np.ndarray | None = None,
    ) -> None:
        """``page_vectors``: the embedder's vectors of ``page_texts(workspace)``, when the
        caller has them (``memory.factory`` keeps them beside the workspace); else they are
        encoded here."""
        self.workspace = workspace
        self.embedder = embedder
        self._page_vectors: DenseIndex | None = None
        self.evidence = evidence
        self.provider = provider
        self.options = options or RecallOptions()
        self._pages = BM25Index(stem=True)
        self._slugs: list[str] = []
        if workspace:
            texts = page_texts(workspace)
            for slug, text in zip(workspace.pages.by_slug, texts, strict=True):
                self._pages.add(text)
                self._slugs.append(slug)
            if embedder is not None and texts:
                self._page_vectors = DenseIndex(embedder.dim, embedder.unrelated)
                self._page_vectors.add(
                    embedder.embed(texts) if page_vectors is None else page_vectors
                )

    def _scout(
        self,
        query: str,
        turn: str | None = None,
        context: Sequence[str] = (),
        number: int = 1,
        sink: CaptureSink | None = None,
    ) -> list[str]:
        n = self.options.page_scouts
        found = [self._slugs[h.doc] for h in self._pages.search(query, n)]
        if self.embedder is not None and self._page_vectors is not None:
            cosine = self._page_vectors.scores(self.embedder.embed_query(query))
            near = [
                self._slugs[doc]
                for doc in np.argsort(-cosine)[:n].tolist()
                if cosine[doc] >= DENSE_FLOOR and self._slugs[doc] not in found
            ]
            found += self._filter(near, query if turn is None else turn, context, number, sink)
        return found

    def _filter(
        self,
        slugs: list[str],
        turn: str,
        context: Sequence[str],
        number: int,
        sink: CaptureSink | None,
    ) -> list[str]:
        """The LLM filter over the dense scout's pages: those it keeps, or all of them when
        there is no provider or the call fails (the lane fails open)."""
        if self.provider is None or not slugs or self.workspace is None:
            return slugs
        pages = self.workspace.pages.by_slug
        lines = "\n".join(f"{s} - {pages[s].summary}" for s in slugs)
        tool = _pick_tool("keep_pages", "Keep the pages that could help the next reply.",
                          "slugs", slugs)  # fmt: skip
        prompt = f"{render_turn(turn, context)}\n<pages>\n{lines}\n</pages>"
        kept = self._lane("filter", FILTER_SYSTEM, prompt, tool, "slugs", number, None, sink)
        return slugs if kept is None else [s for s in slugs if s in kept]

    def _lane(
        self,
        lane: Literal["filter", "descent"],
        system: str,
        prompt: str,
        tool: ToolSpec,
        field: str,
        number: int,
        node: str | None,
        sink: CaptureSink | None,
    ) -> list[object] | None:
        """One LLM call of a lane, captured: the list the tool returned under ``field``, or
        None when there is no usable answer in time (the lane then fails open)."""
        assert self.provider is not None
        request = {"system": system, "prompt": prompt, "tool": tool.name}
        site = CALL_SITES[lane]
        started = time.perf_counter()
        try:
            call = call_with_timeout(self.provider, system=system, prompt=prompt, tool=tool,
                                     timeout_s=self.options.llm_timeout_s)  # fmt: skip
            picked = call.arguments.get(field)
            if not isinstance(picked, list):
                raise ProviderError(f"{tool.name} without a {field} list")
        except Exception as e:  # noqa: BLE001 - any failure of a lane fails open
            if sink:
                ms = (time.perf_counter() - started) * 1000
                sink(CallRecord(lane, site, request, None, str(e), ms, number, node))
            return None
        if sink:
            ms = (time.perf_counter() - started) * 1000
            sink(CallRecord(lane, site, request, call.arguments, None, ms, number, node, call.raw))
        return picked

    def _walk(self, query: str, number: int = 1, sink: CaptureSink | None = None) -> list[str]:
        ws = self.workspace
        if ws is None or not ws.tree.nodes:
            return []
        terms = set(self._pages.tokens(query))
        found: list[str] = []
        frontier = list(ws.tree.roots)
        visited: set[str] = set()
        while frontier:
            node_id = frontier.pop(0)
            if node_id in visited:
                continue
            visited.add(node_id)
            index = compose_node_index(node_id, ws.tree, ws.pages)
            resolvable = [
                c
                for c in ws.tree.children(node_id)
                if (c.ref in ws.tree.nodes if c.kind == "node" else c.ref in ws.pages.by_slug)
            ]
            chosen = self._descend(query, node_id, index, resolvable, number, sink)
            if chosen is None:
                scored = []
                for line, child in zip(index.splitlines(), resolvable, strict=False):
                    overlap = len(terms & set(self._pages.tokens(line)))
                    if overlap:
                        scored.append((overlap, child))
                scored.sort(key=lambda item: -item[0])
                chosen = [child for _, child in scored]
            for child in chosen[: self.options.tree_width]:
                if child.kind == "page" and child.ref not in found:
                    found.append(child.ref)
                elif child.kind == "node":
                    frontier.append(child.ref)
        return found

    def _descend(
        self,
        query: str,
        node_id: str,
        index: str,
        children: list[ChildRef],
        number: int,
        sink: CaptureSink | None,
    ) -> list[ChildRef] | None:
        """The LLM descender: the children to follow, or None to fall back to words."""
        if self.provider is None or not children:
            return None
        refs = [f"{c.kind}:{c.ref}" for c in children]
        tool = _pick_tool(
            "choose_children",
            "Choose the children of this memory node worth opening for the question, best first.",
            "children",
            refs,
        )
        prompt = f'<question>\n{query}\n</question>\n<node id="{node_id}">\n{index}\n</node>'
        picked = self._lane(
            "descent", DESCENT_SYSTEM, prompt, tool, "children", number, node_id, sink
        )
        if picked is None:
            return None
        by_ref = dict(zip(refs, children, strict=True))
        return [by_ref[r] for r in picked if isinstance(r, str) and r in by_ref]

    def _edges(self, seeds: list[str]) -> list[str]:
        ws = self.workspace
        if ws is None:
            return []
        out: list[str] = []
        layer = seeds
        for _ in range(self.options.edge_hops):
            nxt = []
            for slug in layer:
                page = ws.pages.by_slug.get(slug)
                for edge in page.edges if page else ():
                    if edge in ws.pages.by_slug and edge not in seeds and edge not in out:
                        out.append(edge)
                        nxt.append(edge)
                        if len(out) >= self.options.edge_cap:
                            return out
            layer = nxt
        return out

    def recall(
        self,
        query: str,
        *,
        context: Sequence[str] = (),
        sticky: list[str] | tuple[str, ...] = (),
        capture: bool = False,
        k: int | None = None,
    ) -> RecallResult:
        """Up to ``k`` evidence items and ``k`` pages for the user's turn ``query`` (default:
        ``options.k``), plus every sticky page, whatever ``k``. ``context`` is the conversation
        before the turn, as the gate should see it."""
        o = self.options if k is None else replace(self.options, k=k)
        calls: list[CallRecord] = []
        sink = calls.append if capture else None
        evidence = (
            self.evidence.recall(query, k=o.k)
            if self.evidence is not None and len(self.evidence)
            else []
        )
        # sticky pages are never dropped, pages of the workspace or not (the gate unions them)
        kept_sticky = list(dict.fromkeys(sticky))
        if self.workspace is None:
            return RecallResult(kept_sticky, evidence, [], calls)
        candidates: list[str] = []
        queries = [query]
        passes: list[PassTrace] = []
        gate: GateResult | None = None
        summaries = {s: p.summary for s, p in self.workspace.pages.by_slug.items()}
        for number in range(1, o.max_passes + 1):
            scouted = [s for q in queries for s in self._scout(q, query, context, number, sink)]
            tree = [s for q in queries for s in self._walk(q, number, sink)]
            for slug in [*scouted, *tree]:
                if slug not in candidates:
                    candidates.append(slug)
            edges = self._edges(candidates)
            candidates += [e for e in edges if e not in candidates]
            trace = PassTrace(number, queries, scouted, tree, edges, kept_sticky)
            passes.append(trace)
            # the gate lets the model pick candidates only: the sticky pages are candidates too
            gate_candidates = [*candidates, *(s for s in kept_sticky if s not in candidates)]
            gate = run_gate(
                query,
                gate_candidates,
                context=context,
                questions=queries if number > 1 else (),
                sticky=kept_sticky,
                summaries=summaries,
                pass_number=number,
                provider=self.provider,
                capture=sink,
                timeout_s=o.llm_timeout_s,
            )
            trace.gate = gate
            if gate.decision == "ready" or not gate.questions:
                break
            queries = gate.questions
        selected = gate.selected if gate else []
        return RecallResult(keep_sticky(selected, kept_sticky, o.k), evidence, passes, calls)


def _pick_tool(name: str, description: str, field: str, choices: list[str]) -> ToolSpec:
    """A tool whose one argument is a list picked from ``choices``."""
    item = {"type": "string", "enum": choices}
    schema = {"type": "object", "properties": {field: {"type": "array", "items": item}},
              "required": [field]}  # fmt: skip
    return ToolSpec(name, description, schema)


def keep_sticky(selected: list[str], sticky: list[str], k: int) -> list[str]:
    """The first ``k`` selected pages that are not sticky, and every sticky page, in the
    selection's order: a page injected on an earlier turn is never dropped."""
    pinned = set(sticky)
    others = [s for s in selected if s not in pinned][:k]
    keep = set(others) | pinned
    out = [s for s in selected if s in keep]
    return out + [s for s in sticky if s not in out]
