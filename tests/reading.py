"""What a test may assert of a model's reading of speech, on any CPU.

CTranslate2 picks its kernels by the processor, and its int8 matrix products go to Intel's MKL
on Intel processors and to oneDNN on others, each choosing its own instruction set: the same
tiny.en reads the same audio a little differently on AVX-512, AVX2 and AVX (on AVX2 JFK's "And
so my fellow Americans" is "And so am I fellow Americans", issue 70). A test of recognized
speech therefore checks what heard promises of any reading (within a bound of the words said,
at most a word lost, no stretch said twice) or compares two of heard's paths on the same
machine, never one CPU's exact words. docs/getting-started.md says how to run the suite as
another processor would.
"""

from __future__ import annotations

from collections import Counter
from itertools import pairwise

import jiwer

JFK = (
    "and so my fellow americans ask not what your country can do for you "
    "ask what you can do for your country"
)
"""What JFK says in tests/data/audio/jfk.flac, lower case and without punctuation."""

JFK_WER = 0.15
"""How far tiny.en's reading of JFK may stray on any CPU: three words of 22 (AVX2's "so am i
fellow" for "so my fellow" is two, beam 5's "asked not" one more)."""


def normalize(text: str) -> str:
    """Lower case, no punctuation, one space between words."""
    return " ".join(jiwer.RemovePunctuation()(text.lower()).split())


def wer(reference: str, hypothesis: str) -> float:
    """Word error rate of ``hypothesis`` against ``reference``, both normalized."""
    reference, hypothesis = normalize(reference), normalize(hypothesis)
    if not reference:
        return float(bool(hypothesis))
    return float(jiwer.wer(reference, hypothesis))


def doubled(reference: str, hypothesis: str) -> list[str]:
    """What ``hypothesis`` says more often than ``reference`` does: a word pair of the reference
    said again (a stretch committed twice) or a word straight after itself ("country country").

    >>> doubled("ask not what your country", "Ask not, ask not what your country.")
    ['ask not']
    >>> doubled("for your country", "for your country country")
    ['country country']
    >>> doubled("and so my fellow", "And so am I fellow")  # a misreading, not a repeat
    []
    """
    said, meant = normalize(hypothesis).split(), normalize(reference).split()
    pairs, meant_pairs = Counter(pairwise(said)), Counter(pairwise(meant))
    return [
        f"{a} {b}"
        for (a, b), n in pairs.items()
        if n > meant_pairs[(a, b)] > 0 or (a == b and not meant_pairs[(a, b)])
    ]


def assert_reads(
    hypothesis: str, reference: str = JFK, *, max_wer: float = JFK_WER, max_lost: int = 1
) -> None:
    """``hypothesis`` is a reading of ``reference``: within ``max_wer`` of its words, with at
    most ``max_lost`` of them missing, and no stretch of it said twice.

    >>> assert_reads("And so am I fellow Americans, ask not what your country can do for you.",
    ...              "and so my fellow americans ask not what your country can do for you")
    >>> assert_reads("ask not what your", "ask not what your country can", max_wer=0.5)
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    AssertionError: 2 words lost > 1: 'ask not what your'...
    """
    found = wer(reference, hypothesis)
    assert found <= max_wer, f"WER {found:.3f} > {max_wer}: {normalize(hypothesis)!r}"
    lost = jiwer.process_words(normalize(reference), normalize(hypothesis)).deletions
    assert lost <= max_lost, f"{lost} words lost > {max_lost}: {normalize(hypothesis)!r}"
    assert not doubled(reference, hypothesis), (
        f"said twice: {doubled(reference, hypothesis)} in {normalize(hypothesis)!r}"
    )


def assert_hears(text: str, reference: str, *, at_least: float = 0.6, what: str = "") -> None:
    """``text`` holds most of ``reference``'s words (a share ``at_least`` of them, in any order):
    for a reading of part of a recording, or one with more said around it; ``what`` names it in
    a failure.

    >>> assert_hears("And so am I fellow Americans, ask", "and so my fellow americans")
    """
    meant = set(normalize(reference).split())
    found = meant & set(normalize(text).split())
    assert len(found) >= at_least * len(meant), (
        f"{what}: {sorted(meant - found)} missing from {text!r}"
    )
