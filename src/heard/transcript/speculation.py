"""The speculation gate: is this revision worth a speculative retrieval?

Recognizers revise far more often than a retrieval can usefully run, and most
revisions change nothing a query would key on. Two cheap gates stand in front
of speculation: a debounce window and a minimum number of new content tokens
(stopwords removed) in the stable prefix. A final always passes, and so does a
*new* strong signal (an entity or recall phrase not yet acted on in this turn).

Defaults (``GateConfig``) and why:

* ``debounce_ms = 300``: re-decode ASR (heard's, whisper_streaming) revises every
  500-1000 ms, so the window never hides one of its revisions; streaming
  recognizers (Gemini Live, Deepgram) revise every 50-150 ms, and the window
  folds such a burst into one retrieval.
* ``min_new_content_tokens = 2``: speech carries about one content word a
  second, and one more rarely changes what a lexical query finds. On the
  bundled real logs (``python bench/gate.py``; table in BENCHMARKS.md) a
  minimum of 2 fires 2 and 8 speculations over 21 and 32 partials, against 5
  and 14 with a minimum of 1, while the last speculative query still holds 4/6
  and 22/26 of the final's content tokens (5/6 and 22/26 with 1). A minimum of
  3 saves little more (1 and 7) and loses freshness on the short turn (3/6).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from heard.transcript.accumulator import Hypothesis
from heard.transcript.signals import NO_SIGNALS, Signals

__all__ = ["GateConfig", "GateDecision", "SpeculationGate"]


@dataclass(frozen=True, slots=True)
class GateConfig:
    """Speculation gate settings; see the module docstring for the defaults' reasons."""

    debounce_ms: int = 300
    """No two speculations on partials closer than this, unless a new strong signal."""
    min_new_content_tokens: int = 2
    """Content tokens the stable prefix must have gained since the last speculation."""

    def __post_init__(self) -> None:
        if self.debounce_ms < 0:
            raise ValueError(f"debounce_ms must be >= 0, got {self.debounce_ms}")
        if self.min_new_content_tokens < 0:
            raise ValueError(
                f"min_new_content_tokens must be >= 0, got {self.min_new_content_tokens}"
            )


class GateDecision(StrEnum):
    FIRE = "fire"
    FIRE_FINAL = "fire_final"
    """A final: always worth a retrieval, whatever the debounce says."""
    FIRE_SIGNAL = "fire_signal"
    """A new strong signal bypassed debounce and the new-content minimum."""
    DEBOUNCED = "debounced"
    INSUFFICIENT_NEW_CONTENT = "insufficient_new_content"
    NOTHING_STABLE = "nothing_stable"

    @property
    def fires(self) -> bool:
        return self in (GateDecision.FIRE, GateDecision.FIRE_FINAL, GateDecision.FIRE_SIGNAL)


class SpeculationGate:
    """Decides, per revision, whether to speculate; ``reset`` between turns.

    Time is injected: ``now_ms`` comes from the caller's clock (event times on
    replay, a monotonic clock live).
    """

    def __init__(self, config: GateConfig | None = None) -> None:
        self.config = config or GateConfig()
        self.reset()

    def reset(self) -> None:
        self._last_fired_ms: int | None = None
        self._acted_signals: frozenset[str] = frozenset()
        self.last_query_tokens: tuple[str, ...] = ()
        """The content tokens of the last speculation fired."""

    def consider(
        self,
        hypothesis: Hypothesis,
        now_ms: int,
        query_tokens: Sequence[str],
        signals: Signals = NO_SIGNALS,
    ) -> GateDecision:
        """Decide on ``hypothesis`` at ``now_ms``; ``query_tokens`` are the content tokens of
        its stable prefix (``TranscriptStabilizer`` keeps them incrementally)."""
        if hypothesis.stable_word_count == 0:
            return GateDecision.NOTHING_STABLE
        new_signals = signals.keys - self._acted_signals if signals else frozenset()
        if hypothesis.final:
            decision = GateDecision.FIRE_FINAL
        elif new_signals:
            decision = GateDecision.FIRE_SIGNAL
        elif (
            self._last_fired_ms is not None
            and now_ms - self._last_fired_ms < self.config.debounce_ms
        ):
            return GateDecision.DEBOUNCED
        else:
            decision = GateDecision.FIRE
        tokens = query_tokens
        if decision is GateDecision.FIRE:
            old = self.last_query_tokens
            if tuple(tokens[: len(old)]) == old:
                common = len(old)
            else:
                common = 0
                for a, b in zip(old, tokens, strict=False):
                    if a != b:
                        break
                    common += 1
            if len(tokens) - common < self.config.min_new_content_tokens:
                return GateDecision.INSUFFICIENT_NEW_CONTENT
        self._last_fired_ms = now_ms
        self.last_query_tokens = tuple(tokens)
        self._acted_signals |= new_signals
        return decision
