"""How soon each word of a real recorded utterance becomes stable, per word-match rule.

Replays the bundled faster-whisper partial logs (``src/heard/samples``) through
``TranscriptAccumulator`` with the ``normalized`` rule (heard's default: case
and edge punctuation ignored) and the ``exact`` rule, and through
LocalAgreement-2 (whisper_streaming's policy, re-implemented in
``bench/peers.py``: exact words, the last word may commit).

For the k-th word of the utterance, "heard at" is the first partial with at
least k words and "stable at" the first partial whose stable prefix has at least
k words; a word never stable before the final counts at the final's time.
Reported: words stable before the final, the mean and worst lag from heard to
stable, and how many words stabilized earlier than under the exact rule.

Usage: python bench/agreement.py [--json]
"""

from __future__ import annotations

import argparse
import json

from heard.samples import SAMPLE_LOGS, sample_path
from heard.transcript.accumulator import TranscriptAccumulator
from heard.transcript.events import EventKind, TranscriptEvent, read_events
from peers import LocalAgreement2


def stable_counts_heard(events: list[TranscriptEvent], rule: str) -> list[int]:
    acc = TranscriptAccumulator(word_match=rule)
    return [acc.push_partial(e.text).stable_word_count for e in events]


def stable_counts_la2(events: list[TranscriptEvent]) -> list[int]:
    la = LocalAgreement2()
    counts = []
    for e in events:
        la.insert(e.text)
        counts.append(len(la.committed))
    return counts


def stable_at(
    events: list[TranscriptEvent], counts: list[int], n_words: int, t_final: int
) -> list[int]:
    times = []
    for k in range(1, n_words + 1):
        t = next((e.t_ms for e, c in zip(events, counts, strict=True) if c >= k), t_final)
        times.append(t)
    return times


def measure(name: str) -> dict[str, object]:
    events = read_events(sample_path(name))
    partials = [e for e in events if e.kind is EventKind.PARTIAL]
    final = events[-1]
    n_words = len(final.text.split())
    rows: dict[str, object] = {"log": name, "words": n_words, "partials": len(partials)}
    heard_at = stable_at(partials, [len(e.text.split()) for e in partials], n_words, final.t_ms)
    results = {}
    exact_times: list[int] = []
    for label, counts in (
        ("exact", stable_counts_heard(partials, "exact")),
        ("normalized", stable_counts_heard(partials, "normalized")),
        ("LocalAgreement-2", stable_counts_la2(partials)),
    ):
        times = stable_at(partials, counts, n_words, final.t_ms)
        exact_times = exact_times or times
        lags = [t - h for t, h in zip(times, heard_at, strict=True)]
        results[label] = {
            "stable_before_final": sum(t < final.t_ms for t in times),
            "mean_lag_ms": round(sum(lags) / n_words),
            "max_lag_ms": max(lags),
            "words_earlier_than_exact": sum(t < e for t, e in zip(times, exact_times, strict=True)),
            "words_later_than_exact": sum(t > e for t, e in zip(times, exact_times, strict=True)),
        }
    rows["rules"] = results
    return rows


def main(argv: list[str] | None = None) -> list[dict[str, object]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    table = [measure(name) for name in SAMPLE_LOGS]
    if args.json:
        print(json.dumps(table, indent=1))
        return table
    print(
        f"{'log':22}{'rule':18}{'stable before final':>20}{'mean lag ms':>12}"
        f"{'max lag ms':>11}{'earlier/later than exact':>26}"
    )
    for row in table:
        rules = row["rules"]
        assert isinstance(rules, dict)
        for label, r in rules.items():
            stable = f"{r['stable_before_final']}/{row['words']}"
            earlier = f"{r['words_earlier_than_exact']}/{r['words_later_than_exact']}"
            print(
                f"{row['log']:22}{label:18}{stable:>20}{r['mean_lag_ms']:>12,}"
                f"{r['max_lag_ms']:>11,}{earlier:>26}"
            )
    return table


if __name__ == "__main__":
    main()
