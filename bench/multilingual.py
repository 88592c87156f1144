"""Recall in Spanish and Russian: heard's evidence index against bm25s with the matching stemmer.

``tests/data/multilingual/conversations.json`` holds two conversations written for heard, in
LoCoMo's format (one in Spanish, one in Russian, three dated sessions each) with questions and
the ids of the turns that answer them. Each question is asked in the conversation's language
("same") or in another one ("cross": English, and Russian or Spanish).

Rows, each on the same turns:

* ``heard``: the lexical scout, each turn read in its own language (stopwords and Snowball
  stemmer, ``heard.memory.language``);
* ``heard-mixed``: both conversations in one memory, so each question is read in Spanish and
  in Russian (and among twice the turns);
* ``heard-en``: the same index with every turn read as English (heard before issue 26);
* ``bm25s``: bm25s (PyPI) with PyStemmer's stemmer and bm25s's own stopwords for the
  conversation's language;
* ``heard+minilm``, ``heard+e5``: the dense scout with each of heard's embedders.

Usage: python bench/multilingual.py [--json]
"""

from __future__ import annotations

import argparse
import json
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import bm25s
import Stemmer

from heard.memory.dense import EMBEDDERS, Embedder, default_embedder
from heard.memory.evidence import Evidence, EvidenceIndex
from locomo import Tally, score, turns_of

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "multilingual"
DATA = DATA / "conversations.json"
KS = (1, 5, 10)
_BM25S = {"es": ("spanish", "es"), "ru": ("russian", "ru")}
"""PyStemmer's algorithm and bm25s's stopword list, per conversation language."""


def conversations(path: Path = DATA) -> list[dict[str, Any]]:
    return list(json.loads(path.read_text(encoding="utf-8")))


def asked(conv: dict[str, Any], q: dict[str, Any]) -> str:
    return "same" if q["asked_in"] == conv["language"] else "cross"


def run_heard(
    data: list[dict[str, Any]],
    embedder: Embedder | None = None,
    *,
    as_english: bool = False,
    together: bool = False,
) -> dict[str, Any]:
    """Each conversation in a memory of its own, or with ``together`` all in one (ids prefixed
    by the conversation's), so a question is read in every language the memory holds."""
    tally = Tally()
    shared = EvidenceIndex(embedder) if together else None
    indexes = {}
    for conv in data:
        index = shared if shared is not None else EvidenceIndex(embedder)
        prefix = f"{conv['sample_id']}/" if together else ""
        index.extend(
            Evidence(
                id=prefix + t["dia_id"],
                speaker=t["speaker"],
                text=t["text"],
                conversation=conv["sample_id"],
                t=datetime.fromisoformat(t["said"]),
                session=t["session"],
                language="en" if as_english else "",
            )
            for t in turns_of(conv)
        )
        indexes[conv["sample_id"]] = index
    for conv in data:
        index = indexes[conv["sample_id"]]
        prefix = f"{conv['sample_id']}/" if together else ""
        for q in conv["qa"]:
            started = time.perf_counter()
            hits = index.recall(q["question"], k=max(KS))
            ms = (time.perf_counter() - started) * 1000
            wanted = [prefix + e for e in q["evidence"]]
            tally.add(asked(conv, q), score([h.id for h in hits], wanted), ms)
    return tally.table()


def run_bm25s(data: list[dict[str, Any]]) -> dict[str, Any]:
    tally = Tally()
    for conv in data:
        algorithm, stopwords = _BM25S[conv["language"]]
        stem = Stemmer.Stemmer(algorithm)
        turns = turns_of(conv)
        corpus = [f"{t['speaker']}: {t['text']}" for t in turns]
        retriever = bm25s.BM25()
        tokens = bm25s.tokenize(corpus, stopwords=stopwords, stemmer=stem, show_progress=False)
        retriever.index(tokens, show_progress=False)
        for q in conv["qa"]:
            started = time.perf_counter()
            query = bm25s.tokenize(
                [q["question"]], stopwords=stopwords, stemmer=stem, show_progress=False
            )
            docs, _ = retriever.retrieve(query, k=min(max(KS), len(corpus)), show_progress=False)
            ms = (time.perf_counter() - started) * 1000
            ranked = [turns[int(i)]["dia_id"] for i in docs[0]]
            tally.add(asked(conv, q), score(ranked, q["evidence"]), ms)
    return tally.table()


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--embedders", default=",".join(EMBEDDERS), help="of: %(default)s")
    args = parser.parse_args(argv)
    data = conversations()
    result: dict[str, Any] = {
        "heard": run_heard(data),
        "heard-mixed": run_heard(data, together=True),
        "heard-en": run_heard(data, as_english=True),
        "bm25s": run_bm25s(data),
    }
    for name in [n.strip() for n in args.embedders.split(",") if n.strip()]:
        embedder = default_embedder(True, name)
        if embedder is None:
            print(f"({name} skipped: install the extra with `pip install -e .[dense]`)")
            continue
        result[f"heard+{name}"] = run_heard(data, embedder)
        result[f"heard-mixed+{name}"] = run_heard(data, embedder, together=True)
    if args.json:
        print(json.dumps(result, indent=1))
        return result
    print(f"{'system':<19}{'asked':<7}{'n':>4}" + "".join(f"{'R@' + str(k):>7}" for k in KS))
    for system, table in result.items():
        for kind in ("same", "cross", "all"):
            row = table[kind]
            print(
                f"{system:<19}{kind:<7}{row['n']:>4}" + "".join(f"{row[f'R@{k}']:>7}" for k in KS)
            )
        print(f"{system:<19}recall latency p95 {table['p95_ms']} ms")
    return result


if __name__ == "__main__":
    main()
