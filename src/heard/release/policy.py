"""Release policy constants and clause boundaries.

The numbers here encode measurements; each says where its measurement lives.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from heard.transcript.utterances import CLOSING_MARKS, SENTENCE_MARKS

__all__ = [
    "BARE_FINAL_WORDS",
    "COMMA_UNIT_WORDS",
    "DE_ESCALATE_CLAUSE_ENDS",
    "ESCALATED_DWELL_MS",
    "ESCALATED_OVERDUE_MS",
    "ESCALATE_AFTER_MS",
    "ESCALATE_AFTER_WORDS",
    "ESCALATE_BEFORE_ANY_MARK_MS",
    "LIVE_DWELL_MS",
    "MIN_UNIT_WORDS",
    "PAUSE_MS",
    "ReleaseConfig",
    "ends_clause",
    "punctuated",
]

LIVE_DWELL_MS = 1500
"""Live releases settled text once it has waited this long. One and a half re-decode
chunks (1000 ms): a unit then usually carries more than one revision's growth."""

ESCALATE_AFTER_WORDS = 23
"""Balanced turns to dwell releases once the finals have run this many words without a
punctuation mark (commas count): the recognizer is not punctuating. Measured on the finals,
what the recognizer settled on, in words, so silence never escalates. Derived in
tests/release/test_fixtures.py::test_the_escalation_thresholds_clear_every_punctuated_run:
the punctuated fixtures' longest run is 19 words (a 19-word sentence with no comma); 20%
above it."""

BARE_FINAL_WORDS = 8
"""A final of this many words with no punctuation mark at all escalates Balanced at once: a
recognizer that punctuates ends its utterances with a mark, and the punctuated fixtures hold
no bare final of any length (same test). Shorter bare finals ("okay sure") prove nothing."""

ESCALATED_DWELL_MS = 2000
"""How long settled text waits, once Balanced has escalated, before it is released: longer
than Live's dwell, so escalated Balanced costs less than Live (BENCHMARKS.md, cadence). At
2500 ms the unpunctuated fixture's p95 was 5.5 s for the same 15 units; at 2000 ms, 5.0 s."""

ESCALATED_OVERDUE_MS = 5000
"""Once Balanced has escalated, settled text whose first word was first heard this long ago is
released at once, without waiting out the dwell: the recognizer kept it unsettled (it changed
its reading, "change" / "can"), so it has already waited longer than the dwell would have made
it, and holding it batches nothing more. It is the latency escalated Balanced aims at (issue
25: p95 at most 5 s). Measured on both cadence families (BENCHMARKS.md, cadence): the late-final
unpunctuated monologue's p95 falls from 6.0 to 5.0 s for one more unit (0.75x Live), the
unpunctuated fixture's from 5.0 to 4.0 s for the same units; at 4000 ms the late one is at
4.0 s for two more (0.80x), at 3500 ms five more (0.95x). It must exceed the dwell plus one
decode step (1000 ms), the soonest a word heard in a partial settles and goes out on the dwell:
else it would be a shorter dwell."""

ESCALATE_AFTER_MS = 10000
"""Balanced escalates once settled words have waited this long with no settled punctuation mark
after the last one, while speech goes on. The wait starts when the first word after the last
mark settles, so it runs through every clause as it is spoken: its floor is the longest such
wait on punctuated speech, not the dwell. Derived in tests/release/test_fixtures.py::
test_the_escalation_window_clears_every_boundary_free_wait_of_punctuated_speech: the longest
wait on the punctuated fixtures of both families is 9.0 s (a 13-word stretch of the mixed
meeting the recognizer left unpunctuated, finalized once per turn); one decode step above."""

ESCALATE_BEFORE_ANY_MARK_MS = 3000
"""While the recognizer has written no punctuation mark at all for this speaker, Balanced
escalates after this much boundary-free waiting: a recognizer that punctuates shows it within
its first clause, and one that never does (no ``punctuate`` option, stripped output) should
not make its user wait the whole ``ESCALATE_AFTER_MS`` first. Derived in the same test: the
punctuated fixtures' settled words wait at most 2.0 s before their first mark settles; one
decode step above."""

DE_ESCALATE_CLAUSE_ENDS = 2
"""Clause ends (``. ? !``, not commas) that must settle while escalated before Balanced trusts
punctuation again. One is not evidence (a stray abbreviation period); dwell releases do not
reset the count."""

COMMA_UNIT_WORDS = 12
"""A comma releases what waits before it only from this many words on: a long clause is worth
showing at its comma, a short one rides with the next ("Okay, thank you all."). Measured on
the continuous fixture (BENCHMARKS.md, cadence): without comma releases Balanced's p95 is
13 s there (a 15-second utterance of commas only); at 12 words it is 6 s for 2 more units;
at 10 or 8 words it is 7 s (8 words: 5 more units)."""

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

# A sentence's marks (the commits stage's rule: ``ends_sentence``) and ; : and their CJK
# full-width forms, then closing quotes and brackets.
_CLAUSE_END = re.compile(f"[{SENTENCE_MARKS};:\uff1b\uff1a][{CLOSING_MARKS}]*$")


def ends_clause(word: str) -> bool:
    """Whether a recognizer word closes a clause ("planned." "so?" "完了。")."""
    return bool(_CLAUSE_END.search(word))


_ANY_MARK = re.compile("[.,!?;:\u2026\u3001\u3002\uff0c\uff01\uff1f\uff1b\uff1a]")


def punctuated(word: str) -> bool:
    """Whether a recognizer word carries any punctuation mark, commas included."""
    return bool(_ANY_MARK.search(word))


@dataclass(frozen=True, slots=True)
class ReleaseConfig:
    """The release policy's settings; each default is the measured constant above."""

    dwell_ms: int = LIVE_DWELL_MS
    escalated_dwell_ms: int = ESCALATED_DWELL_MS
    escalated_overdue_ms: int | None = ESCALATED_OVERDUE_MS
    """None: escalated Balanced releases on the dwell only."""
    escalate_after_ms: int | None = ESCALATE_AFTER_MS
    """None turns escalation on time off (finals alone then escalate)."""
    escalate_before_any_mark_ms: int | None = ESCALATE_BEFORE_ANY_MARK_MS
    """The window while the recognizer has written no mark at all for this speaker."""
    escalate_after_words: int = ESCALATE_AFTER_WORDS
    bare_final_words: int = BARE_FINAL_WORDS
    de_escalate_clause_ends: int = DE_ESCALATE_CLAUSE_ENDS
    min_unit_words: int = MIN_UNIT_WORDS
    comma_unit_words: int = COMMA_UNIT_WORDS
    pause_ms: int | None = PAUSE_MS
    """None turns pause boundaries off (the behaviour of the spec's design)."""


if not ESCALATED_DWELL_MS >= LIVE_DWELL_MS:  # pragma: no cover - a retune gone wrong
    raise AssertionError("escalated Balanced must not release faster than Live")
if not ESCALATED_OVERDUE_MS > ESCALATED_DWELL_MS + 1000:  # pragma: no cover
    raise AssertionError("the overdue release must not be a shorter dwell (one decode step)")
if not ESCALATE_AFTER_MS > ESCALATED_DWELL_MS >= LIVE_DWELL_MS:  # pragma: no cover
    raise AssertionError("escalation must wait out more than a dwell: it would be Live")
if not ESCALATE_AFTER_MS >= ESCALATE_BEFORE_ANY_MARK_MS > ESCALATED_DWELL_MS:  # pragma: no cover
    raise AssertionError("no window may be shorter than a dwell, nor the first one longer")
if not DE_ESCALATE_CLAUSE_ENDS >= 2:  # pragma: no cover
    raise AssertionError("one clause end is not evidence: DE_ESCALATE_CLAUSE_ENDS >= 2")
