"""Strong signals: cues in the stable text that make prefetching worth it at once.

Two kinds, both deterministic and cheap: a known entity (a vocabulary the memory
fills from page titles and aliases) and an explicit recall phrase ("do you
remember", "what did I tell you about", ...). Matching is on token sequences
(``tokenize``), so case, punctuation and spacing do not matter.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from heard.transcript.tokenize import tokenize

__all__ = [
    "DEFAULT_RECALL_PHRASES",
    "Match",
    "PrefixSignals",
    "SignalExtractor",
    "Signals",
    "resume_point",
]

DEFAULT_RECALL_PHRASES: tuple[str, ...] = (
    "do you remember",
    "you remember",
    "remember when",
    "remind me",
    "what did i tell you",
    "what did i say about",
    "did i tell you",
    "did i mention",
    "i told you",
    "you told me",
    "last time we",
    "last time i",
    "we talked about",
    "we discussed",
    "as i said",
    "as we said",
    "the other day",
)


@dataclass(frozen=True, slots=True)
class Signals:
    """Entities (canonical names) and recall phrases found in a text."""

    entities: tuple[str, ...] = ()
    recall_phrases: tuple[str, ...] = ()
    keys: frozenset[str] = field(init=False, repr=False, compare=False)
    """One key per signal, to tell new signals from ones already acted on."""

    def __post_init__(self) -> None:
        keys = [f"entity:{e}" for e in self.entities]
        keys += [f"recall:{p}" for p in self.recall_phrases]
        object.__setattr__(self, "keys", frozenset(keys))

    def __bool__(self) -> bool:
        return bool(self.entities or self.recall_phrases)


NO_SIGNALS = Signals()

_Phrase = tuple[str, ...]


class SignalExtractor:
    """Finds known entities and recall phrases in text.

    >>> ex = SignalExtractor({"Rhea": ["Rhea Sharma"]})
    >>> ex.extract("Do you remember what Rhea Sharma ordered?")
    Signals(entities=('Rhea',), recall_phrases=('do you remember',))
    """

    def __init__(
        self,
        entities: Mapping[str, Iterable[str]] | Iterable[str] = (),
        recall_phrases: Iterable[str] = DEFAULT_RECALL_PHRASES,
    ) -> None:
        # first token -> [(phrase tokens, label)], longest phrase first
        self._entities: dict[str, list[tuple[_Phrase, str]]] = {}
        self._recall: dict[str, list[tuple[_Phrase, str]]] = {}
        self._longest = 0
        if isinstance(entities, Mapping):
            for name, aliases in entities.items():
                self.add_entity(name, aliases)
        else:
            for name in entities:
                self.add_entity(name)
        for phrase in recall_phrases:
            self._add(self._recall, phrase, phrase)

    def add_entity(self, name: str, aliases: Iterable[str] = ()) -> None:
        """Recognize ``name`` and each alias as the entity ``name``."""
        for surface in (name, *aliases):
            self._add(self._entities, surface, name)

    def _add(self, table: dict[str, list[tuple[_Phrase, str]]], surface: str, label: str) -> None:
        tokens = tuple(tokenize(surface))
        if not tokens:
            return
        self._longest = max(self._longest, len(tokens))
        bucket = table.setdefault(tokens[0], [])
        if (tokens, label) not in bucket:
            bucket.append((tokens, label))
            bucket.sort(key=lambda entry: -len(entry[0]))

    @property
    def entity_count(self) -> int:
        return len({label for bucket in self._entities.values() for _, label in bucket})

    @property
    def longest_phrase(self) -> int:
        """Tokens in the longest entity or phrase (0 when there is none)."""
        return self._longest

    def extract(self, text: str) -> Signals:
        return self.extract_tokens(tokenize(text))

    def extract_tokens(self, tokens: list[str], start: int = 0) -> Signals:
        """Signals in already tokenized text, looking only at matches from ``start`` on."""
        entities, phrases = self.matches(tokens, start)
        return Signals(_labels(entities), _labels(phrases))

    def matches(self, tokens: list[str], start: int = 0) -> tuple[list[Match], list[Match]]:
        """Entity and recall-phrase matches from ``start`` on: the longest at each position,
        without overlaps, as a scan from ``start`` finds them."""
        return _scan(self._entities, tokens, start), _scan(self._recall, tokens, start)


@dataclass(frozen=True, slots=True)
class Match:
    start: int
    length: int
    label: str


def _labels(matches: Iterable[Match]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(m.label for m in matches))


def _scan(
    table: dict[str, list[tuple[_Phrase, str]]], tokens: list[str], start: int
) -> list[Match]:
    found: list[Match] = []
    if not table or table.keys().isdisjoint(tokens[start:]):
        return found
    i = start
    while i < len(tokens):
        for phrase, label in table.get(tokens[i], ()):
            if tuple(tokens[i : i + len(phrase)]) == phrase:
                found.append(Match(i, len(phrase), label))
                i += len(phrase)
                break
        else:
            i += 1
    return found


def resume_point(matches: Iterable[Match], limit: int) -> int:
    """Where a scan of tokens that grew past ``limit`` can resume and find what a full scan
    finds: ``limit``, or the start of an earlier match that it falls inside (a full scan
    never stops inside a match), repeated until no match holds it."""
    spans = sorted((m.start, m.start + m.length) for m in matches)
    point = max(0, limit)
    for start, end in reversed(spans):
        if start < point < end:
            point = start
    return point


class PrefixSignals:
    """The signals of a text that only grows (a turn's stable prefix), kept incrementally:
    each ``grow`` scans only the tail where a match may have changed, and finds what a scan
    of the whole text would (``resume_point``). ``reset`` starts a new text."""

    def __init__(self, extractor: SignalExtractor) -> None:
        self._extractor = extractor
        self.reset()

    def reset(self) -> None:
        self.signals = NO_SIGNALS
        self._tokens: list[str] = []
        self._entities: list[Match] = []
        self._phrases: list[Match] = []

    def grow(self, tokens: list[str]) -> Signals:
        """The text gained ``tokens``: its signals now."""
        if not tokens:
            return self.signals
        limit = len(self._tokens) - self._extractor.longest_phrase + 1
        self._tokens.extend(tokens)
        # resume where both scans would stand, and replace what they found from there on
        point = resume_point([*self._entities, *self._phrases], limit)
        entities, phrases = self._extractor.matches(self._tokens, point)
        self._entities = [m for m in self._entities if m.start < point] + entities
        self._phrases = [m for m in self._phrases if m.start < point] + phrases
        self.signals = Signals(_labels(self._entities), _labels(self._phrases))
        return self.signals
