"""Helpers shared by the transcript tests."""

from __future__ import annotations

from heard.transcript.accumulator import Hypothesis
from heard.transcript.signals import NO_SIGNALS, Signals
from heard.transcript.speculation import GateDecision, SpeculationGate
from heard.transcript.tokenize import content_tokens


def consider(
    gate: SpeculationGate, hypothesis: Hypothesis, now_ms: int, signals: Signals = NO_SIGNALS
) -> GateDecision:
    """The gate's decision given the stable prefix's content tokens, as the stabilizer
    hands them to it."""
    tokens = tuple(content_tokens(hypothesis.stable_prefix))
    return gate.consider(hypothesis, now_ms, tokens, signals)
