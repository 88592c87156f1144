"""Release policy constants and clause boundaries.

The numbers here encode measurements; each says where its measurement lives.
"""

from __future__ import annotations

import re

__all__ = [
    "DE_ESCALATE_BOUNDARIES",
    "ESCALATE_AFTER_MS",
    "LIVE_DWELL_MS",
    "MIN_UNIT_WORDS",
    "PAUSE_MS",
    "ends_clause",
]

LIVE_DWELL_MS = 1500
"""Live releases settled text once it has waited this long. One and a half re-decode
chunks (1000 ms): a unit then usually carries more than one revision's growth."""

ESCALATE_AFTER_MS = 6000
"""Balanced turns to dwell releases after this long without a clause boundary.
It must exceed the waits between boundaries on punctuated speech, or Balanced costs
what Live costs there. Measured on the committed punctuated fixtures as the escalation
timer sees them (settled text waiting for the next boundary, finals' punctuation
included; tests/release/test_fixtures.py::test_escalation_clears_the_clause_gaps):
29 waits, the worst 5000 ms but one of 14000 ms where tiny.en left a whole sentence
end unpunctuated - an unpunctuated stretch, where escalating is right. 6000 ms is 20%
above the worst punctuated wait; it meets every cadence target (BENCHMARKS.md)."""

DE_ESCALATE_BOUNDARIES = 2
"""Punctuation boundaries that must be seen while escalated before Balanced trusts
punctuation again. One is not evidence (a stray abbreviation period); staying escalated
through punctuated speech costs Live's price, so no more than two."""

MIN_UNIT_WORDS = 3
"""A boundary releases only if the unit would hold at least this many words; shorter
clauses ride with the next unit (a translation call per "Yes." is waste)."""

PAUSE_MS = 2500
"""Balanced treats a partial unchanged for this long as a soft boundary: the speaker
paused, whatever the punctuation says. It must exceed the wait between two partials
(1000 ms) and the time heard's own streaming ASR takes to finalize after speech stops
(800 ms of silence, seen at the next 1000 ms chunk): a shorter pause releases a unit
just before the final would have, for nothing (measured on the natural fixture:
1.17x Relaxed's cost at 1600 ms, 1.0x at 2500 ms). It helps recognizers that
finalize late, or only at the end of a turn."""

# Sentence and clause punctuation of Latin and Cyrillic scripts and the full-width CJK forms.
_CLAUSE_END = re.compile(
    "[.!?;:\u2026\u3002\uff01\uff1f\uff1b\uff1a]"  # . ! ? ; : ellipsis, CJK full-width forms
    "[\"'\u201d\u2019\u00bb\u300d\u300f)\\]]*$"  # closing quotes and brackets
)


def ends_clause(word: str) -> bool:
    """Whether a recognizer word closes a clause ("planned." "so?" "完了。")."""
    return bool(_CLAUSE_END.search(word))


if not ESCALATE_AFTER_MS > LIVE_DWELL_MS:  # pragma: no cover - a retune gone wrong
    raise AssertionError("ESCALATE_AFTER_MS must exceed LIVE_DWELL_MS")
if not DE_ESCALATE_BOUNDARIES >= 2:  # pragma: no cover
    raise AssertionError("one boundary is not evidence: DE_ESCALATE_BOUNDARIES >= 2")
