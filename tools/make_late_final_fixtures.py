"""Make the late-final cadence fixtures: heard's own ASR logs re-emitted as other recognizers
would send them.

heard's streaming ASR commits a final every few seconds, inside continuous speech. The
recognizers users bring do not: a LiveCap- or Deepgram-style recognizer without endpointing, or
Gemini Live, finalizes once per turn, and each partial carries the whole turn so far. This
script reads the five committed cadence logs (``tests/data/cadence/*.jsonl``, made by
``tools/make_cadence_fixtures.py`` from espeak-ng speech) and writes, under
``tests/data/cadence/late/``:

* ``{natural,continuous,unpunctuated,mixed,alternating}.jsonl``: the same recognition with one
  final per turn. A turn ends at a final after which the speaker's next event comes later (the
  speaker paused); finals inside a turn are dropped, and every partial is the turn's earlier
  finals followed by the original partial. The turn's final is all its finals, joined.
* ``gemini.jsonl``: the continuous monologue as one turn whose partials also *revise earlier
  words*: after each dropped final, the next two partials still show that stretch as the
  recognizer last read it otherwise before finalizing (its latest partial whose words differ
  from the final's, completed with the final's words), and the partials after them show the
  final's reading (Gemini Live's transcription changes its reading of words already sent,
  independently of turn boundaries).

Pure text transformation: no audio, no model; the same input gives the same files.

Usage: python tools/make_late_final_fixtures.py [CADENCE_DIR]
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from heard.transcript.events import EventKind, TranscriptEvent, read_events
from heard.transcript.words import normalized_key

NAMES = ["natural", "continuous", "unpunctuated", "mixed", "alternating"]
GEMINI_SOURCE = "continuous"


def _turn_ends(events: Sequence[TranscriptEvent]) -> set[int]:
    """Indexes of the finals that end a turn: the speaker's next event comes later, or never."""
    ends: set[int] = set()
    for i, e in enumerate(events):
        if e.kind is not EventKind.FINAL:
            continue
        later = next((n for n in events[i + 1 :] if n.speaker == e.speaker), None)
        if later is None or later.t_ms > e.t_ms:
            ends.add(i)
    return ends


def _join(parts: Sequence[str]) -> str:
    return " ".join(p for p in parts if p.strip())


STALE_PARTIALS = 2
"""How many partials after a dropped final still show the stretch's older reading."""


def _older_reading(guesses: Sequence[str], final: str) -> list[str] | None:
    """The stretch as its latest partial that read it otherwise, with the final's length."""
    words = final.split()
    for guess in reversed(guesses):
        read = guess.split()[: len(words)]
        if [normalized_key(w) for w in read] != [normalized_key(w) for w in words[: len(read)]]:
            return read + words[len(read) :]
    return None


def late_finals(
    events: Sequence[TranscriptEvent], *, revise: bool = False
) -> list[TranscriptEvent]:
    """``events`` with one final per turn; with ``revise``, earlier words revised (see above)."""
    ends = _turn_ends(events)
    done: dict[str, list[str]] = {}  # the turn's finals so far, per speaker
    guesses: dict[str, list[str]] = {}  # the partials since the latest final, per speaker
    stale: dict[str, tuple[str, int]] = {}  # an older reading of the latest dropped final
    out: list[TranscriptEvent] = []
    for i, e in enumerate(events):
        turn = done.setdefault(e.speaker, [])
        if e.kind is EventKind.PARTIAL:
            shown = list(turn)
            old, left = stale.pop(e.speaker, ("", 0))
            if revise and left and shown:
                shown[-1] = old
                if left > 1:
                    stale[e.speaker] = (old, left - 1)
            out.append(replace(e, text=_join([*shown, e.text])))
            guesses.setdefault(e.speaker, []).append(e.text)
            continue
        if i in ends:
            out.append(replace(e, text=_join([*turn, e.text])))
            done[e.speaker] = []
            stale.pop(e.speaker, None)
        else:
            turn.append(e.text)
            older = _older_reading(guesses.get(e.speaker, []), e.text)
            if older is not None:
                stale[e.speaker] = (" ".join(older), STALE_PARTIALS)
        guesses[e.speaker] = []
    return out


def write(path: Path, events: Sequence[TranscriptEvent]) -> None:
    path.write_text("".join(e.to_json() + "\n" for e in events), encoding="utf-8")
    finals = sum(e.kind is EventKind.FINAL for e in events)
    print(f"{path}: {len(events)} events, {finals} finals", file=sys.stderr)


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    cadence = Path(args[0]) if args else Path(__file__).parents[1] / "tests/data/cadence"
    out = cadence / "late"
    out.mkdir(parents=True, exist_ok=True)
    for name in NAMES:
        write(out / f"{name}.jsonl", late_finals(read_events(cadence / f"{name}.jsonl")))
    source = read_events(cadence / f"{GEMINI_SOURCE}.jsonl")
    write(out / "gemini.jsonl", late_finals(source, revise=True))


if __name__ == "__main__":
    main()
