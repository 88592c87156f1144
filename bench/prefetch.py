"""Prefetch: is the memory context ready when the user stops speaking?

LoCoMo dev questions (categories 1-4, a seeded sample per conversation) are
spoken with espeak-ng, streamed through heard's real streaming ASR (tiny.en,
re-decode every 500 ms, simulated clock) into partial/final logs, cached under
bench/.cache/prefetch/. Each log is then replayed on its own timing (``--speed``
times faster) into a ``heard.live.Conversation`` whose memory holds that
conversation's turns, with prefetch and without:

* ready: milliseconds from the final's arrival to the context being published;
* hit rate: turns whose context was the speculative result (the reuse rule);
* wasted: speculative retrievals per turn whose result was not used;
* R@10: the context's evidence against the question's evidence ids, so reuse
  is seen to cost (or not cost) recall.

Two memories: the default lexical index, and with ``heard[dense]`` the dense
scout (one MiniLM encoding per retrieval), where prefetch has something to hide.
A sweep of the reuse threshold (at once, without timing) shows the rule's
trade-off between hit rate and recall.

Usage: python bench/prefetch.py [--per-conversation 12] [--speed 4] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from heard.asr.streaming import StreamOptions, stream_events
from heard.live.conversation import Conversation
from heard.live.retriever import MemoryRetriever
from heard.live.session import feed_at_pace
from heard.memory.dense import Embedder, default_embedder
from heard.memory.evidence import Evidence, EvidenceIndex
from heard.memory.recall import MemoryRecall
from heard.release.cadence import nearest_rank
from heard.transcript.events import TranscriptEvent, read_events

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tools"))
sys.path.insert(0, str(HERE))

from locomo import conversations, questions_of, turns_of  # noqa: E402
from make_meeting import Voice, speak  # noqa: E402

CACHE = HERE / ".cache" / "prefetch"
VOICE = Voice("en-us", 165)
THRESHOLDS = (0.34, 0.5, 0.6, 0.75, 1.0)


def spoken(question: str) -> list[TranscriptEvent]:
    """The question as real streaming ASR heard it (cached by text)."""
    key = hashlib.sha1(question.encode()).hexdigest()[:16]
    path = CACHE / f"{key}.jsonl"
    if not path.exists():
        with tempfile.TemporaryDirectory() as tmp:
            audio = speak(question, VOICE, Path(tmp), 0)
        pad = np.zeros(16_000, dtype=np.int16)  # a second of silence: the VAD ends the turn
        samples = (np.concatenate([pad[:4000], audio, pad]) / 32768).astype(np.float32)
        events = list(stream_events(samples, options=StreamOptions(chunk_ms=500), speaker="user"))
        CACHE.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(e.to_json() + "\n" for e in events), encoding="utf-8")
    return read_events(path)


class QuietRetriever(MemoryRetriever):
    """The questions are not part of the conversation asked about: nothing is remembered."""

    async def remember(self, evidence: Evidence) -> None:
        return None


def one_turn(events: list[TranscriptEvent]) -> list[TranscriptEvent]:
    """Partials up to the first final, then that final (one question, one turn)."""
    out = []
    for e in events:
        out.append(e)
        if e.kind == "final":
            break
    return out


def run(
    data: list[dict[str, Any]],
    logs: dict[str, list[tuple[dict[str, Any], list[TranscriptEvent]]]],
    indexes: dict[str, EvidenceIndex],
    *,
    prefetch: bool,
    speed: float,
    threshold: float = 0.6,
) -> dict[str, Any]:
    ready, wasted, recall10 = [], [], []
    turns = hits = speculations = 0
    for conv in data:
        index = indexes[conv["sample_id"]]
        retriever = QuietRetriever(MemoryRecall(None, index))
        for question, events in logs[conv["sample_id"]]:
            c = Conversation(
                retriever, prefetch=prefetch, reuse_jaccard=threshold, release_mode=None
            )
            asyncio.run(feed_at_pace(c, events, speed))
            if not c.contexts:
                continue
            ctx = c.contexts[-1]
            turns += 1
            hits += ctx.source == "speculative"
            speculations += c.stats.speculations
            ready.append(ctx.ready_after_final_ms)
            wasted.append(ctx.wasted)
            wanted = set(question["evidence"])
            got = {r.id for r in ctx.evidence[:10]}
            recall10.append(len(wanted & got) / len(wanted))
    return {
        "turns": turns,
        "ready_p50_ms": round(nearest_rank(ready, 50), 2),
        "ready_p95_ms": round(nearest_rank(ready, 95), 2),
        "hit_rate": round(hits / turns, 3) if turns else 0.0,
        "speculations_per_turn": round(speculations / turns, 2) if turns else 0.0,
        "wasted_per_turn": round(sum(wasted) / turns, 2) if turns else 0.0,
        "wasted_max": max(wasted, default=0),
        "R@10": round(sum(recall10) / len(recall10), 3) if recall10 else 0.0,
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--per-conversation", type=int, default=12)
    parser.add_argument("--speed", type=float, default=4.0, help="replay speed-up (timing kept)")
    parser.add_argument("--no-dense", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    data = conversations()
    rng = random.Random(7)
    logs: dict[str, list[tuple[dict[str, Any], list[TranscriptEvent]]]] = {}
    total = sum(min(args.per_conversation, len(questions_of(c))) for c in data)
    done = 0
    for conv in data:
        qs = questions_of(conv)
        picked = rng.sample(qs, min(args.per_conversation, len(qs)))
        logs[conv["sample_id"]] = []
        for q in picked:
            logs[conv["sample_id"]].append((q, one_turn(spoken(q["question"]))))
            done += 1
            print(f"\rspoken and recognized {done}/{total}", end="", file=sys.stderr)
    print(file=sys.stderr)
    memories: dict[str, Embedder | None] = {"lexical": None}
    if not args.no_dense:
        embedder = default_embedder()
        if embedder is not None:
            memories["dense"] = embedder
    result: dict[str, Any] = {"questions": total, "speed": args.speed}
    for name, embedder in memories.items():
        indexes = {}
        for conv in data:
            index = EvidenceIndex(embedder)
            index.extend(
                Evidence(
                    id=t["dia_id"],
                    speaker=t["speaker"],
                    text=t["text"],
                    conversation=conv["sample_id"],
                )
                for t in turns_of(conv)
            )
            indexes[conv["sample_id"]] = index
        result[name] = {
            "prefetch": run(data, logs, indexes, prefetch=True, speed=args.speed),
            "no prefetch": run(data, logs, indexes, prefetch=False, speed=args.speed),
        }
        if name == "lexical":
            result["sweep"] = {
                str(t): run(data, logs, indexes, prefetch=True, speed=0, threshold=t)
                for t in THRESHOLDS
            }
    if args.json:
        print(json.dumps(result, indent=1))
        return result
    print(f"{total} questions, replayed at {args.speed}x their own timing")
    cols = ("ready_p50_ms", "ready_p95_ms", "hit_rate", "speculations_per_turn", "wasted_per_turn",
            "wasted_max", "R@10")  # fmt: skip
    print(f"{'memory':<9}{'mode':<13}" + "".join(f"{c:>23}" for c in cols))
    for name in memories:
        for mode, row in result[name].items():
            print(f"{name:<9}{mode:<13}" + "".join(f"{row[c]!s:>23}" for c in cols))
    print("reuse threshold sweep (lexical, without timing):")
    for t, row in result["sweep"].items():
        print(f"  Jaccard >= {t:<5} hit rate {row['hit_rate']:<6} R@10 {row['R@10']}")
    return result


if __name__ == "__main__":
    main()
