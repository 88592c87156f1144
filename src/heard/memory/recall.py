"""The retrieval loop: scouts, tree walk, edges, sticky pages, then the gate; up to 3 passes.

Each pass:

1. **scouts**: BM25 over pages (slug, summary, aliases, body) and over evidence;
2. **tree walk**: from each root, the children whose composed index line best
   matches the query are followed, ``tree_width`` at a time (lexical descent;
   an LLM descender is the next step);
3. **edge expansion**: pages linked from candidates, up to ``edge_hops`` hops and
   ``edge_cap`` pages; unknown slugs are skipped;
4. **sticky carry-over**: pages injected on earlier turns are never dropped;
5. **the gate** (``heard.memory.gate``): ready, or more with questions that
   become the next pass's queries. No provider: ready with every candidate.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from heard.llm.provider import Provider
from heard.memory.bm25 import BM25Index
from heard.memory.evidence import EvidenceIndex, Recalled
from heard.memory.gate import CallRecord, GateResult, run_gate
from heard.memory.workspace import Workspace, compose_node_index

__all__ = ["MemoryRecall", "PassTrace", "RecallOptions", "RecallResult"]


@dataclass(frozen=True, slots=True)
class RecallOptions:
    k: int = 10
    max_passes: int = 3
    page_scouts: int = 8
    tree_width: int = 2
    edge_hops: int = 2
    edge_cap: int = 8


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


class MemoryRecall:
    """Recall over a workspace of pages and an evidence index (either may be absent)."""

    def __init__(
        self,
        workspace: Workspace | None = None,
        evidence: EvidenceIndex | None = None,
        *,
        provider: Provider | None = None,
        options: RecallOptions | None = None,
    ) -> None:
        self.workspace = workspace
        self.evidence = evidence
        self.provider = provider
        self.options = options or RecallOptions()
        self._pages = BM25Index(stem=True)
        self._slugs: list[str] = []
        if workspace:
            for page in workspace.pages.by_slug.values():
                text = " ".join(
                    [page.slug.replace("-", " "), page.summary, *page.aliases, page.body]
                )
                self._pages.add(text)
                self._slugs.append(page.slug)

    def _scout(self, query: str) -> list[str]:
        return [self._slugs[h.doc] for h in self._pages.search(query, self.options.page_scouts)]

    def _walk(self, query: str) -> list[str]:
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
            scored = []
            for line, child in zip(index.splitlines(), ws.tree.children(node_id), strict=False):
                overlap = len(terms & set(self._pages.tokens(line)))
                if overlap:
                    scored.append((overlap, child))
            scored.sort(key=lambda item: -item[0])
            for _, child in scored[: self.options.tree_width]:
                if child.kind == "page" and child.ref not in found:
                    found.append(child.ref)
                elif child.kind == "node":
                    frontier.append(child.ref)
        return found

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
        self, query: str, *, sticky: list[str] | tuple[str, ...] = (), capture: bool = False
    ) -> RecallResult:
        o = self.options
        calls: list[CallRecord] = []
        sink = calls.append if capture else None
        evidence = (
            self.evidence.recall(query, k=o.k)
            if self.evidence is not None and len(self.evidence)
            else []
        )
        if self.workspace is None:
            return RecallResult([], evidence, [], calls)
        candidates: list[str] = []
        queries = [query]
        passes: list[PassTrace] = []
        gate: GateResult | None = None
        summaries = {s: p.summary for s, p in self.workspace.pages.by_slug.items()}
        for number in range(1, o.max_passes + 1):
            scouted = [s for q in queries for s in self._scout(q)]
            tree = [s for q in queries for s in self._walk(q)]
            for slug in [*scouted, *tree]:
                if slug not in candidates:
                    candidates.append(slug)
            edges = self._edges(candidates)
            candidates += [e for e in edges if e not in candidates]
            kept_sticky = [s for s in sticky if s in self.workspace.pages.by_slug]
            trace = PassTrace(number, queries, scouted, tree, edges, kept_sticky)
            passes.append(trace)
            if sink:
                records_before = len(calls)
            gate = run_gate(
                " / ".join(queries),
                candidates,
                sticky=kept_sticky,
                summaries=summaries,
                pass_number=number,
                provider=self.provider,
                capture=sink,
            )
            if sink:
                for i in range(records_before, len(calls)):
                    record = calls[i]
                    calls[i] = CallRecord(
                        record.lane,
                        record.request,
                        record.response,
                        record.error,
                        record.ms,
                        number,
                    )
            trace.gate = gate
            if gate.decision == "ready" or not gate.questions:
                break
            queries = gate.questions
        pages = gate.selected if gate else []
        return RecallResult(pages[: max(o.k, len(sticky))], evidence, passes, calls)
