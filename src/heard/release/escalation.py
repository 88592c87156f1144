"""Balanced's escalation: has the recognizer stopped punctuating, and has it started again?

An ``Escalation`` follows one speaker for the release tracker (``heard.release.tracker``): it
reads the settled words of the utterance being heard (when each first settled, how many are
released) and the finals, and decides, as time passes, whether Balanced also releases on the
dwell. Escalation is decided on time inside the utterance: settled words have waited
``escalate_after_ms`` with no settled punctuation mark after the last one (commas count: they
show the recognizer punctuates), or ``escalate_before_any_mark_ms`` while the recognizer has
written no mark at all, and speech goes on; the finals, when they come, are a faster signal (a
long final with no mark, or ``escalate_after_words`` words of finals without one).
De-escalation takes ``de_escalate_clause_ends`` clause ends (``. ? !``, not commas; dwell
releases do not reset the count, a clause end a revision moves counts once). No two changes
fall within ``escalate_after_ms`` of each other, and silence never escalates. Pure: words and
times in, decisions out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from heard.release.policy import ReleaseConfig, ends_clause, punctuated

__all__ = ["Escalation", "ModeChange"]


@dataclass(frozen=True, slots=True)
class ModeChange:
    """Balanced switching to timed releases (``escalated``) or back to clauses, at ``t_ms``."""

    t_ms: int
    escalated: bool


class Escalation:
    """One speaker's escalation state; ``enabled`` is False outside Balanced (the measures
    are still kept)."""

    def __init__(self, config: ReleaseConfig, *, enabled: bool = True) -> None:
        self.config = config
        self.enabled = enabled
        self.escalated = False
        self.transitions: list[ModeChange] = []
        """Each time Balanced escalates or de-escalates."""
        self.unpunctuated_runs: list[int] = []
        """Words of the finals between punctuation marks, each run as it ended: what escalation
        on finals measures (tests/release/test_fixtures.py derives its threshold from them)."""
        self.boundary_free_waits: list[int] = []
        """How long settled words waited with no settled mark after the last one, each wait
        as it ended (ms): what escalation on time measures (same test)."""
        self.first_mark_wait_ms: int | None = None
        """How long settled words had waited when the recognizer's first mark settled (ms; 0
        if none waited): what the window before any mark measures (same test)."""
        self._final_run = 0  # words of the finals since their last punctuation mark
        self._clause_ends_while_escalated = 0
        self._last_change_ms: int | None = None
        self.start_utterance()

    def start_utterance(self) -> None:
        self._free_since: int | None = None  # when boundary-free waiting began
        self._clause_ends: set[int] = set()  # positions of the utterance's counted clause ends

    # -- what the tracker saw ---------------------------------------------------------------

    def track(
        self,
        t_ms: int,
        last_growth_ms: int | None,
        stable: list[str] | None = None,
        settled_at: Sequence[int | None] = (),
        released: int = 0,
        changed: int | None = None,
        final: list[str] | None = None,
    ) -> bool:
        """One step of the tracker at ``t_ms``, its one way in: the utterance's ``final``
        words (``on_final``: the utterance ends), or, when the settled words moved, ``stable``
        (``changed``: where they first read otherwise, see ``on_new_reading``; the rest as
        ``on_stable`` takes them); then, in Balanced, decide. Returns whether Balanced is
        escalated."""
        if final is not None:
            self.on_final(final, t_ms)
            return self.escalated
        if stable is not None:
            if changed is not None:
                self.on_new_reading(stable, changed)
            self.on_stable(stable, settled_at, released, t_ms)
        if self.enabled:
            self.decide(t_ms, last_growth_ms)
        return self.escalated

    def on_stable(
        self, stable: list[str], settled_at: Sequence[int | None], released: int, t_ms: int
    ) -> None:
        """The utterance's settled words (``settled_at``: when each first settled) and how many
        of them are released. Boundary-free waiting runs from when the first settled word
        after the last settled mark, and after the released words, settled. Marks on unsettled
        words do not count: Whisper ends most partials with a period it drops as the sentence
        goes on."""
        self._count_clause_ends(stable)
        last_mark = max((i for i, w in enumerate(stable) if punctuated(w)), default=-1)
        if last_mark >= 0:
            self._first_mark(t_ms)
        start = max(released, last_mark + 1)
        since = settled_at[start] if start < len(stable) else None
        if since is not None and self._last_change_ms is not None:
            since = max(since, self._last_change_ms)
        self._set_clock(since, t_ms)

    def on_new_reading(self, words: list[str], changed: int) -> None:
        """The settled words read otherwise from ``changed`` on: the clause ends counted there
        are the old reading's, moved, as many as that had (one counts once, wherever a
        revision puts it)."""
        moved = {i for i in self._clause_ends if i >= changed}
        self._clause_ends -= moved
        ends = [i for i in range(changed, len(words)) if ends_clause(words[i])]
        self._clause_ends |= set(ends[: len(moved)])

    def on_final(self, words: list[str], t_ms: int) -> None:
        """The finals are what the recognizer settled on: when one of ``bare_final_words`` or
        more holds no punctuation mark at all, or they run on for ``escalate_after_words``
        words without one, the recognizer is not punctuating. The utterance ends."""
        for word in words:
            self._final_run += 1
            if punctuated(word):
                self._first_mark(t_ms)
                self.unpunctuated_runs.append(self._final_run)
                self._final_run = 0
        self._count_clause_ends(words)
        bare = len(words) >= self.config.bare_final_words and not any(map(punctuated, words))
        if (
            self.enabled
            and not self.escalated
            and (bare or self._final_run >= self.config.escalate_after_words)
            and self._may_change(t_ms)
        ):
            self._change(True, t_ms)
        self._set_clock(None, t_ms)
        if self.enabled:
            self.decide(t_ms, None)
        self.start_utterance()

    # -- deciding -----------------------------------------------------------------------------

    def decide(self, t_ms: int, last_growth_ms: int | None) -> None:
        """Escalate on sustained boundary-free waiting while speech goes on (the recognizer
        last heard something new at ``last_growth_ms``); de-escalate on clause ends; never
        two changes inside one window."""
        window = self.config.escalate_after_ms
        pause_ms = self.config.pause_ms
        speaking = last_growth_ms is not None and (
            pause_ms is None or t_ms - last_growth_ms < pause_ms
        )
        waited = t_ms - self._free_since if self._free_since is not None and speaking else None
        proven = window is not None and waited is not None and waited >= window
        if not self.escalated:
            before_any = self.config.escalate_before_any_mark_ms
            if self.first_mark_wait_ms is None and before_any is not None and waited is not None:
                proven = proven or waited >= before_any
            if proven and self._may_change(t_ms):
                self._change(True, t_ms)
        elif proven:
            self._clause_ends_while_escalated = 0  # the marks did not last: still unpunctuated
        elif (
            self._clause_ends_while_escalated >= self.config.de_escalate_clause_ends
            and self._may_change(t_ms)
        ):
            self._change(False, t_ms)

    def _first_mark(self, t_ms: int) -> None:
        if self.first_mark_wait_ms is None:
            since = self._free_since
            self.first_mark_wait_ms = 0 if since is None else t_ms - since

    def _set_clock(self, since: int | None, t_ms: int) -> None:
        if since == self._free_since:
            return
        if self._free_since is not None:
            self.boundary_free_waits.append(t_ms - self._free_since)
        self._free_since = since

    def _count_clause_ends(self, words: list[str]) -> None:
        for i, word in enumerate(words):
            if ends_clause(word) and i not in self._clause_ends:
                self._clause_ends.add(i)
                if self.escalated:
                    self._clause_ends_while_escalated += 1

    def _may_change(self, t_ms: int) -> bool:
        window = self.config.escalate_after_ms or 0
        return self._last_change_ms is None or t_ms - self._last_change_ms >= window

    def _change(self, escalated: bool, t_ms: int) -> None:
        self.escalated = escalated
        self._clause_ends_while_escalated = 0
        self._last_change_ms = t_ms
        self.transitions.append(ModeChange(t_ms, escalated=escalated))
