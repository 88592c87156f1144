"""The commits stage: what a streaming recognizer decoded, gathered into utterance events.

A live recognizer (``heard.asr.streaming``) hands on ``Decoded`` steps: words committed
inside continuous speech, the endpoint that ends an utterance, and the partial (the words not
committed yet). ``Utterances`` turns them into heard's transcript events: committed words
gather into the utterance (shown as a partial) until a sentence ends, so a final is a
sentence or a turn, as evidence wants it, not two words. What ends a sentence is the same
rule the release stage reads clause ends with (``heard.release.policy``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from heard.speech import Word
from heard.transcript.events import DEFAULT_SPEAKER, EventKind, TranscriptEvent

__all__ = [
    "CLOSING_MARKS",
    "SENTENCE_MARKS",
    "SENTENCE_RUN_WORDS",
    "Decoded",
    "Utterances",
    "ends_sentence",
]

SENTENCE_MARKS = ".!?\u2026\u3002\uff01\uff1f"
"""Marks that end a sentence: . ! ? the ellipsis, and the CJK full-width forms."""
CLOSING_MARKS = "\"'\u201d\u2019\u00bb\u300d\u300f)\\]"
"""Closing quotes and brackets that may follow a sentence's or a clause's mark (regex-escaped,
for a character class)."""
_SENTENCE_END = re.compile(f"[{SENTENCE_MARKS}][{CLOSING_MARKS}]*$")

SENTENCE_RUN_WORDS = 30
"""``Utterances`` closes a run of committed words that no sentence end closed at this many
words (about 10 s of speech): a recognizer that does not punctuate still gets finals."""


def ends_sentence(word: str) -> bool:
    """Whether a recognizer word closes a sentence ("friday." "so?" "完了。")."""
    return bool(_SENTENCE_END.search(word))


@dataclass(frozen=True, slots=True)
class Decoded:
    """What one decode step heard: the utterance so far (a partial) or its final text."""

    kind: EventKind
    text: str
    start_s: float = 0.0
    """Where its speech starts in the stream (seconds of audio received)."""
    end_s: float = 0.0
    words: tuple[Word, ...] = ()
    """Its words, at their times in the stream (with ``StreamOptions.word_timestamps``)."""
    endpoint: bool = False
    """A final that ends an utterance (silence after it, or the stream's end); a final
    committed inside continuous speech is not one."""


class Utterances:
    """One speaker's decoded steps as transcript events (see the module doc): a commit joins
    the utterance's committed words, which lead every partial after it, until a sentence
    ends (or ``SENTENCE_RUN_WORDS`` gather); then they go out as one final."""

    def __init__(self, speaker: str = DEFAULT_SPEAKER) -> None:
        self.speaker = speaker
        self._run: list[str] = []  # committed words not yet sent as a final

    def events(self, found: Sequence[Decoded], t_ms: int) -> list[TranscriptEvent]:
        """The events of one recognizer step's ``found``, stamped ``t_ms``."""
        return [event for _, made in self.step(found, t_ms) for event in made]

    def step(
        self, found: Sequence[Decoded], t_ms: int
    ) -> list[tuple[Decoded, list[TranscriptEvent]]]:
        """Each of one recognizer step's decoded things with the events it made. A commit
        that ends no sentence is shown as a partial, once, after the step's last."""
        out: list[tuple[Decoded, list[TranscriptEvent]]] = []
        shown = True
        for d in found:
            words = d.text.split()
            made: list[TranscriptEvent] = []
            out.append((d, made))
            if d.kind is EventKind.PARTIAL:
                made.append(self._event(EventKind.PARTIAL, self._run + words, t_ms))
                shown = True
                continue
            self._run += words
            if d.endpoint or (self._run and (
                ends_sentence(self._run[-1]) or len(self._run) >= SENTENCE_RUN_WORDS
            )):  # fmt: skip
                if self._run:
                    made.append(self._event(EventKind.FINAL, self._run, t_ms))
                self._run, shown = [], True
            else:
                shown = False
        if not shown and self._run:
            out[-1][1].append(self._event(EventKind.PARTIAL, self._run, t_ms))
        return out

    def _event(self, kind: EventKind, words: list[str], t_ms: int) -> TranscriptEvent:
        return TranscriptEvent(t_ms, kind, " ".join(words), self.speaker)
