"""Choosing the lexical index: heard's BM25 against bm25s, tantivy and SQLite FTS5.

The same synthetic corpus (Zipf-distributed words, 5-25 per item, like spoken
turns) at each size; the same 200 queries (3-8 words). For each engine: time to
build the index from scratch, time to add one more item to a built index (the
live case: a final is said and must be searchable at once), and per-query
latency p50/p95 for the top 10. All in this process, one engine after another.
bm25s has no incremental add: adding one item means re-indexing everything, and
that is what is timed.

Usage: python bench/lexical.py [--sizes 10000,100000] [--json]
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import time
from collections.abc import Callable
from itertools import accumulate
from typing import Any

import bm25s
import tantivy

from heard.memory.bm25 import BM25Index
from heard.release.cadence import nearest_rank

QUERIES = 200


def corpus(n: int, seed: int = 11) -> tuple[list[str], list[str]]:
    rng = random.Random(seed)
    vocabulary = [f"w{i}" for i in range(50_000)]
    weights = [1 / (i + 1) ** 1.1 for i in range(len(vocabulary))]
    cum = list(accumulate(weights))  # once: choices() with weights= redoes this every call
    rare = list(accumulate(weights[50:]))
    docs = [
        " ".join(rng.choices(vocabulary, cum_weights=cum, k=rng.randint(5, 25))) for _ in range(n)
    ]
    queries = [
        " ".join(rng.choices(vocabulary[50:], cum_weights=rare, k=rng.randint(3, 8)))
        for _ in range(QUERIES)
    ]
    return docs, queries


class Engine:
    name = ""

    def build(self, docs: list[str]) -> None:
        raise NotImplementedError

    def add(self, doc: str) -> None:
        raise NotImplementedError

    def query(self, q: str) -> list[int]:
        raise NotImplementedError

    def close(self) -> None:
        """Let go of what ``build`` opened (FTS5's connection)."""


class Heard(Engine):
    name = "heard BM25"

    def build(self, docs: list[str]) -> None:
        self.index = BM25Index(stopwords=())
        for d in docs:
            self.index.add(d)

    def add(self, doc: str) -> None:
        self.index.add(doc)

    def query(self, q: str) -> list[int]:
        return [h.doc for h in self.index.search(q, 10)]


class Bm25s(Engine):
    name = "bm25s"

    def build(self, docs: list[str]) -> None:
        self.docs = list(docs)
        self.retriever = bm25s.BM25()
        self.retriever.index(bm25s.tokenize(self.docs, show_progress=False), show_progress=False)

    def add(self, doc: str) -> None:
        self.build([*self.docs, doc])

    def query(self, q: str) -> list[int]:
        docs, _ = self.retriever.retrieve(
            bm25s.tokenize([q], show_progress=False), k=10, show_progress=False
        )
        return [int(i) for i in docs[0]]


class Tantivy(Engine):
    name = "tantivy"

    def build(self, docs: list[str]) -> None:
        schema = (
            tantivy.SchemaBuilder()
            .add_integer_field("id", stored=True)
            .add_text_field("body")
            .build()
        )
        self.index = tantivy.Index(schema)  # in RAM
        writer = self.index.writer()
        for i, d in enumerate(docs):
            writer.add_document(tantivy.Document(id=i, body=d))
        writer.commit()
        self.index.reload()
        self.n = len(docs)

    def add(self, doc: str) -> None:
        writer = self.index.writer()
        writer.add_document(tantivy.Document(id=self.n, body=doc))
        writer.commit()
        self.index.reload()
        self.n += 1

    def query(self, q: str) -> list[int]:
        searcher = self.index.searcher()
        terms = " OR ".join(q.split())
        hits = searcher.search(self.index.parse_query(terms, ["body"]), 10).hits
        return [searcher.doc(address)["id"][0] for _, address in hits]


class Fts5(Engine):
    name = "SQLite FTS5"

    def build(self, docs: list[str]) -> None:
        self.db = sqlite3.connect(":memory:")
        self.db.execute("create virtual table t using fts5(body)")
        self.db.executemany("insert into t(rowid, body) values (?, ?)", enumerate(docs))
        self.db.commit()
        self.n = len(docs)

    def add(self, doc: str) -> None:
        self.db.execute("insert into t(rowid, body) values (?, ?)", (self.n, doc))
        self.db.commit()
        self.n += 1

    def query(self, q: str) -> list[int]:
        match = " OR ".join(q.split())
        rows = self.db.execute(
            "select rowid from t where t match ? order by bm25(t) limit 10", (match,)
        )
        return [r[0] for r in rows]

    def close(self) -> None:
        self.db.close()


def measure(engine: Engine, docs: list[str], queries: list[str]) -> dict[str, Any]:
    started = time.perf_counter()
    engine.build(docs)
    build_s = time.perf_counter() - started
    try:
        return _measured(engine, docs, queries, build_s)
    finally:
        engine.close()


def _measured(
    engine: Engine, docs: list[str], queries: list[str], build_s: float
) -> dict[str, Any]:
    adds = []
    for i in range(5 if engine.name != "bm25s" else 1):
        t0 = time.perf_counter()
        engine.add(f"w{i} w7 fresh item {i}")
        adds.append((time.perf_counter() - t0) * 1000)
    latencies = []
    for q in queries:
        t0 = time.perf_counter()
        engine.query(q)
        latencies.append((time.perf_counter() - t0) * 1000)
    return {
        "engine": engine.name,
        "items": len(docs),
        "build_s": round(build_s, 2),
        "add_ms": round(sorted(adds)[len(adds) // 2], 3),
        "query_p50_ms": round(nearest_rank(latencies, 50), 3),
        "query_p95_ms": round(nearest_rank(latencies, 95), 3),
    }


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    engines: list[Callable[[], Engine]] = [Heard, Bm25s, Tantivy, Fts5]
    rows = []
    for n in (int(s) for s in args.sizes.split(",")):
        docs, queries = corpus(n)
        for make in engines:
            rows.append(measure(make(), docs, queries))
    if args.json:
        print(json.dumps(rows, indent=1))
        return rows
    print(
        f"{'engine':<14}{'items':>9}{'build s':>9}{'add 1 ms':>10}{'query p50 ms':>14}{'p95 ms':>9}"
    )
    for r in rows:
        print(
            f"{r['engine']:<14}{r['items']:>9,}{r['build_s']:>9}{r['add_ms']:>10}"
            f"{r['query_p50_ms']:>14}{r['query_p95_ms']:>9}"
        )
    return rows


if __name__ == "__main__":
    main()
