"""Whisper decoding of short live buffers: each in the shortest encoder context that holds
it, the buffers of many streams in one call.

faster-whisper pads every input to Whisper's 30 s window, so a live stream that re-decodes a
3 s buffer every second pays the encoder for 30 s each time (0.25 s of tiny.en on 2 cores).
The encoder takes shorter inputs: a buffer here is padded with silence to the next multiple
of ``CONTEXT_STEP_S`` that leaves at least ``TAIL_S`` after its speech, and only that is
encoded (a 3 s buffer: 6 s, a fifth of the cost). Whisper was trained on 30 s windows;
with less silence after the speech it may not see the end and loops or makes up a clause
("And so my fellow Americans. And so my fellow Americans."), so decoding is in timestamp
mode and what it says past the buffer's end is cut off, a segment repeating the one before
is dropped, and generation stops at ``TOKENS_PER_S`` of audio. A buffer Whisper itself
rates as no speech reads nothing (``NO_SPEECH_PROB``, the rule files are read by).

Buffers of the same context length are decoded together: one encoder call and one batched
generate. Each gets exactly what it would decoded alone (``tests/asr/test_decoder.py``):
the context depends on the buffer only, never on its neighbours. On a GPU the batch is where
the time goes; on 2 CPU cores a round's time grows about linearly with its size.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from heard.asr.audio import SAMPLE_RATE
from heard.speech import Segment, Word

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from heard.asr.whisper import LoadedModel

__all__ = [
    "CONTEXT_STEP_S",
    "MIN_AVG_LOGPROB",
    "NO_SPEECH_PROB",
    "TAIL_S",
    "BufferDecoder",
    "Request",
    "context_seconds",
]

CONTEXT_STEP_S = 2
"""Encoder contexts come in steps of 2 s: a buffer pays for at most 2 s it does not hold, and
streams' buffers share a context often enough to be batched."""

TAIL_S = 3.0
"""Silence after the buffer, at least, within its context. Measured on 48 buffers (JFK and the
capacity call, 1.5-11 s long at three offsets, ``bench/capacity.py``): decoded in 2 s steps
with 3 s after them, 29 read word for word as in Whisper's 30 s window and the others differ
by a word or two at the buffer's end or read better ("complaint against the wizard" where the
30 s window heard "plane to get to the wizard"); one reads 3 words more, all in the audio.
Without timestamps and these guards, 1-2 s of silence made tiny.en loop on 3 of 8 JFK
prefixes."""

TOKENS_PER_S = 12
"""Generation stops after this many tokens per second of audio the context holds (and 16
more): fast speech is about 4 words, 6 tokens, a second; a loop is cut off well before
Whisper's 224."""

_MAX_CONTEXT_S = 30
_FRAMES_PER_S = 100
_TIMESTAMP_S = 0.02
_PROMPT_TOKENS = 48
"""Of the text before the buffer, at most this many tokens go in the prompt: a sentence or
two, as whisper_streaming gives (200 characters). CTranslate2 batches only prompts of one
length, so a fixed cap lets most streams, once they have said that much, share a batch."""


def context_seconds(duration_s: float) -> int:
    """The encoder context for a buffer of ``duration_s``: ``TAIL_S`` after it, rounded up to
    a ``CONTEXT_STEP_S`` step, at most Whisper's 30 s."""
    steps = math.ceil((duration_s + TAIL_S) / CONTEXT_STEP_S)
    return min(_MAX_CONTEXT_S, CONTEXT_STEP_S * max(1, steps))


def _audio_s(context_s: int) -> float:
    """The most audio a buffer in ``context_s`` holds (the rest is the silence after it)."""
    return max(CONTEXT_STEP_S, context_s - TAIL_S)


@dataclass(frozen=True, slots=True)
class Request:
    """One buffer to decode: its audio (16 kHz mono), the text said before it (the prompt,
    for context and casing), whether to time its words, and Whisper's beam (1: greedy)."""

    audio: npt.NDArray[np.float32]
    prompt: str = ""
    word_timestamps: bool = False
    beam_size: int = 1

    @property
    def duration_s(self) -> float:
        return len(self.audio) / SAMPLE_RATE


class BufferDecoder:
    """Decodes live buffers in one language with one loaded model; ``decode`` takes many."""

    def __init__(self, model: LoadedModel, language: str) -> None:
        from faster_whisper.tokenizer import Tokenizer

        self.model = model
        self.language = language
        self._whisper = model.whisper
        self._tokenizer = Tokenizer(
            model.whisper.hf_tokenizer, model.multilingual, task="transcribe", language=language
        )

    def decode(self, requests: Sequence[Request]) -> list[list[Segment]]:
        """Each request's segments, times in seconds from the start of its buffer."""
        out: list[list[Segment]] = [[] for _ in requests]
        groups: dict[tuple[int, bool, int, int], list[int]] = {}
        prompts = [self._prompt(r.prompt) for r in requests]
        for i, r in enumerate(requests):
            if len(r.audio):
                key = (context_seconds(r.duration_s), r.word_timestamps, len(prompts[i]),
                       r.beam_size)  # fmt: skip
                groups.setdefault(key, []).append(i)
        for (context_s, timed, _, beam), members in groups.items():
            decoded = self._decode_group(
                context_s, [requests[i] for i in members], [prompts[i] for i in members],
                timed=timed, beam_size=beam,
            )  # fmt: skip
            for i, segments in zip(members, decoded, strict=True):
                out[i] = segments
        return out

    # -- one context length -----------------------------------------------------------------

    def _prompt(self, text: str) -> list[int]:
        t = self._tokenizer
        previous = t.encode(" " + text.strip())[-_PROMPT_TOKENS:] if text.strip() else []
        return ([t.sot_prev, *previous] if previous else []) + list(t.sot_sequence)

    def _decode_group(
        self,
        context_s: int,
        requests: list[Request],
        prompts: list[list[int]],
        *,
        timed: bool,
        beam_size: int = 1,
    ) -> list[list[Segment]]:
        import numpy as np

        frames = context_s * _FRAMES_PER_S
        window = np.zeros((len(requests), context_s * SAMPLE_RATE), dtype=np.float32)
        for row, r in zip(window, requests, strict=True):
            row[: len(r.audio)] = r.audio
        extract = self._whisper.feature_extractor
        features = np.stack([extract(row)[:, :frames] for row in window])
        encoded = self._whisper.encode(np.ascontiguousarray(features))
        results = self._whisper.model.generate(
            encoded,
            prompts,
            beam_size=beam_size,
            # the prompt counts, in CTranslate2's length; Whisper's text context is 448. From the
            # group's context and prompt length, so a batch generates what each would alone;
            # only the audio part of the context (not the silence after it) is budgeted: what
            # Whisper says past the buffer's end is cut off anyway, and on real conversation it
            # made up clauses there, 12% of the decoding time (bench/capacity.py)
            max_length=min(448, len(prompts[0]) + 16 + round(TOKENS_PER_S * _audio_s(context_s))),
            suppress_blank=True,
            suppress_tokens=[-1],
            max_initial_timestamp_index=50,
            return_scores=True,
            return_no_speech_prob=True,
        )
        logprobs = [_avg_logprob(result) for result in results]
        pieces = [
            [] if _silent(result, logprob) else self._pieces(result.sequences_ids[0], r.duration_s)
            for result, logprob, r in zip(results, logprobs, requests, strict=True)
        ]
        if not timed:
            return [[Segment(s, e, self._text(tokens), (), logprob) for s, e, tokens in p]
                    for p, logprob in zip(pieces, logprobs, strict=True)]  # fmt: skip
        return self._timed(encoded, requests, pieces, logprobs)

    def _text(self, tokens: list[int]) -> str:
        return str(self._tokenizer.decode(tokens)).strip()

    def _pieces(self, tokens: list[int], duration_s: float) -> list[tuple[float, float, list[int]]]:
        """Timestamp-mode tokens as (start, end, text tokens) within the buffer: nothing said
        past its end, no segment repeating the one before."""
        t = self._tokenizer
        pieces: list[tuple[float, float, list[int]]] = []
        start: float | None = None
        last_end = 0.0
        text: list[int] = []

        def close(end: float) -> None:
            begin = last_end if start is None else start
            said = self._text(text)
            repeats = bool(pieces) and self._text(pieces[-1][2]) == said
            if begin < duration_s - _TIMESTAMP_S and said and not repeats:
                pieces.append((round(begin, 3), round(min(end, duration_s), 3), text))

        for token in tokens:
            if token >= t.timestamp_begin:
                at = (token - t.timestamp_begin) * _TIMESTAMP_S
                if text:
                    close(at)
                    last_end, start, text = at, None, []
                else:
                    start = at
                if at >= duration_s:
                    break  # all that follows is past the buffer
            elif token < t.eot:
                text.append(token)
        if text:
            close(duration_s)
        return [(start, end, _unlooped(tokens)) for start, end, tokens in pieces]

    def _timed(
        self,
        encoded: Any,
        requests: list[Request],
        pieces: list[list[tuple[float, float, list[int]]]],
        logprobs: list[float],
    ) -> list[list[Segment]]:
        """Word times from the cross-attention alignment (faster-whisper's), segment by
        segment in order."""
        aligned = self._whisper.find_alignment(
            self._tokenizer,
            [[tok for _, _, tokens in p for tok in tokens] for p in pieces],
            encoded,
            [max(1, round(r.duration_s * _FRAMES_PER_S)) for r in requests],
        )
        out: list[list[Segment]] = []
        for p, words, r, logprob in zip(pieces, aligned, requests, logprobs, strict=True):
            segments: list[Segment] = []
            queue = list(words)
            for start, end, tokens in p:
                mine: list[Word] = []
                taken = 0
                while queue and taken < len(tokens):
                    w = queue.pop(0)
                    taken += len(w["tokens"])
                    _join(mine, str(w["word"]).strip(), float(w["start"]), float(w["end"]),
                          float(w["probability"]), r.duration_s)  # fmt: skip
                segments.append(Segment(start, end, self._text(tokens), tuple(mine), logprob))
            out.append(segments)
        return out


NO_SPEECH_PROB = 0.6
MIN_AVG_LOGPROB = -1.0
"""Whisper's own rule for a reading of no speech, as files are read (``heard.asr.whisper``'s
defaults are these):
a buffer the model rates more likely than ``NO_SPEECH_PROB`` to hold no speech, read with a
mean token log-probability under ``MIN_AVG_LOGPROB``, reads nothing. On real calls such
readings are what tiny.en makes of a breath or a line's noise ("I'm not going to be able to
do anything.", no speech 0.62, log-probability -1.6)."""


def _avg_logprob(result: Any) -> float:
    """A generated sequence's mean log-probability per token, as faster-whisper counts it (the
    end of text included)."""
    n = len(result.sequences_ids[0])
    return round(float(result.scores[0]) * n / (n + 1), 3)


def _silent(result: Any, logprob: float) -> bool:
    return float(result.no_speech_prob) > NO_SPEECH_PROB and logprob < MIN_AVG_LOGPROB


_EDGE_S = 0.1

_APPEND = "\"'.\u3002,\uff0c!\uff01?\uff1f:\uff1a\u201d)]}\u3001"
"""Marks Whisper may time as words of their own, that belong to the word before (the set
faster-whisper merges)."""


def _join(words: list[Word], text: str, start: float, end: float, p: float, limit: float) -> None:
    """Add one aligned word; a lone closing mark joins the word before it. A word the alignment
    starts in the buffer's last ``_EDGE_S`` was not heard whole (or at all: what Whisper goes
    on saying past the audio is aligned to its end); the next decode will have it."""
    if not text or (start >= limit - _EDGE_S and not all(c in _APPEND for c in text)):
        return
    end = min(end, limit)
    if words and all(c in _APPEND for c in text):
        last = words[-1]
        joined = last.text + text
        words[-1] = Word(last.start, round(max(last.end, end), 3), joined, last.probability)
        return
    words.append(Word(round(min(start, end), 3), round(end, 3), text, round(p, 4)))


_LOOP_TOKENS = 3
"""A run of at least this many tokens said again and again to the end of what Whisper
generated is a loop, not speech (the words it repeats at a buffer's end, "Americans. I'm not
my fellow Americans. I'm not"); "I'm sorry, I'm sorry, I did not see you" is speech."""


def _unlooped(tokens: list[int]) -> list[int]:
    """``tokens`` up to the end of the first run that repeats, copy after copy, to their end."""
    n = len(tokens)
    for i in range(n):
        for k in range(_LOOP_TOKENS, (n - i) // 2 + 1):
            run = tokens[i : i + k]
            rest = tokens[i + k :]
            if rest[:k] == run and all(t == run[j % k] for j, t in enumerate(rest)):
                return tokens[: i + k]
    return tokens
