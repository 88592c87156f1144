"""Peers that heard's benchmarks measure against, re-implemented from their descriptions.

* ``LocalAgreement2``: the commit policy of whisper_streaming (Machacek, Dabre and
  Bojar, "Turning Whisper into Real-Time Transcription System", 2023): after each
  re-decode, commit the longest common prefix of the last two hypotheses beyond
  what is already committed, comparing words exactly. Applied here to whole-text
  hypotheses (no timestamps), as heard's events carry none.
"""

from __future__ import annotations


class LocalAgreement2:
    """whisper_streaming's LocalAgreement-2 commit policy, on whole-text hypotheses."""

    def __init__(self) -> None:
        self.committed: list[str] = []
        self.previous: list[str] = []

    def insert(self, text: str) -> list[str]:
        words = text.split()
        new = words[len(self.committed) :]
        prev = self.previous[len(self.committed) :] if self.previous else []
        agreed = 0
        for a, b in zip(prev, new, strict=False):
            if a != b:
                break
            agreed += 1
        self.committed.extend(new[:agreed])
        self.previous = words
        return new[:agreed]

    def finish(self, text: str) -> None:
        self.committed = []
        self.previous = []
