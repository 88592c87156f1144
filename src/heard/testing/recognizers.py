"""Fakes of the recognizers: a file's transcriber, a recording's diarizer, a live stream's
streaming recognizer."""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping, Sequence
from pathlib import Path
from typing import Any

from heard.asr.streaming import Decoded
from heard.asr.transcriber import drained
from heard.diarize import Diarization, SpeakerTurn
from heard.speech import Segment, Transcription, Word
from heard.transcript.events import EventKind

__all__ = ["FakeDiarizer", "FakeTranscriber", "ScriptedRecognizer"]


class FakeTranscriber:
    """Canned segments (or a whole ``Transcription``) per track location (``"*"``: for any
    location not given, such as a server's spooled upload); an exception value is raised
    instead.

    ``before(location)`` runs first on every call (a test's way to crash or block there), and
    ``after(segment)`` after each segment is given (``segments`` streams them as the real one
    does: a test's way to hold the rest back); ``calls`` lists the locations asked for, in
    order, and ``languages`` the language asked with each. A language asked for is the
    transcription's, as a real recognizer's would be.
    """

    name = "fake"

    def __init__(
        self,
        by_location: Mapping[str, Sequence[Segment] | Transcription | BaseException],
        before: Callable[[str], None] | None = None,
        after: Callable[[Segment], None] | None = None,
    ) -> None:
        self.by_location = dict(by_location)
        self.calls: list[str] = []
        self.languages: list[str | None] = []
        self.before = before
        self.after = after

    def transcribe(
        self,
        audio: str | Path | Any,
        *,
        channel: int | None = None,
        language: str | None = None,
        on_progress: Callable[[float, float], None] | None = None,
    ) -> Transcription:
        return drained(self._canned(audio, language=language, on_progress=on_progress))

    def segments(
        self,
        audio: str | Path | Any,
        *,
        channel: int | None = None,
        language: str | None = None,
        on_progress: Callable[[float, float], None] | None = None,
    ) -> Generator[Segment, None, Transcription]:
        """Each canned segment in turn, the whole transcription as the return value (a
        subclass that overrides ``transcribe`` streams what its ``transcribe`` answers)."""
        if type(self).transcribe is not FakeTranscriber.transcribe:
            answered = self.transcribe(
                audio, channel=channel, language=language, on_progress=on_progress
            )
            yield from answered.segments
            return answered
        return (yield from self._canned(audio, language=language, on_progress=on_progress))

    def _canned(
        self,
        audio: str | Path | Any,
        *,
        language: str | None,
        on_progress: Callable[[float, float], None] | None,
    ) -> Generator[Segment, None, Transcription]:
        location = str(audio)
        self.calls.append(location)
        self.languages.append(language)
        if self.before is not None:
            self.before(location)
        result = self.by_location[location if location in self.by_location else "*"]
        if isinstance(result, BaseException):
            raise result
        if not isinstance(result, Transcription):
            result = Transcription(tuple(result))
        if language is not None:
            result = Transcription(result.segments, language, None)
        total = result.segments[-1].end if result.segments else 0.0
        for segment in result.segments:
            if on_progress is not None:  # after each segment, as whisper's
                on_progress(segment.end, total)
            yield segment
            if self.after is not None:
                self.after(segment)
        return result


class FakeDiarizer:
    """Canned turns ``(start, end, speaker)`` per recording location; an exception value is
    raised instead. With a number of speakers asked for, turns of speakers beyond it go to
    the last one, as a real diarizer finds no more than it is told. ``calls`` lists the
    locations and the number asked with each."""

    name = "fake-diarizer"

    def __init__(
        self, by_location: Mapping[str, Sequence[tuple[float, float, int]] | BaseException]
    ) -> None:
        self.by_location = dict(by_location)
        self.calls: list[tuple[str, int | None]] = []

    def diarize(
        self,
        audio: str | Path | Any,
        *,
        channel: int | None = None,
        speakers: int | None = None,
        on_progress: Callable[[float, float], None] | None = None,
    ) -> Diarization:
        location = str(audio)
        self.calls.append((location, speakers))
        result = self.by_location[location]
        if isinstance(result, BaseException):
            raise result
        cap = speakers - 1 if speakers is not None else None
        turns = tuple(
            SpeakerTurn(a, b, k if cap is None else min(k, cap)) for a, b, k in sorted(result)
        )
        return Diarization(turns, len({t.speaker for t in turns}))


class ScriptedRecognizer:
    """A streaming recognizer that hears ``words`` (at their times in the stream, seconds)
    once the audio pushed reaches them, whatever the audio holds. Each ``chunk_ms`` of audio
    it decodes once: words that ended ``commit_s`` before the audio's end go out as a final
    (committed inside speech), later ones as the partial; ``end_silence_s`` of audio past the
    last word heard makes the endpoint final; ``finish`` makes the rest final. ``pushed`` is
    the samples it was given, ``steps`` the decodes it ran."""

    def __init__(
        self,
        words: Sequence[Word],
        *,
        chunk_ms: int = 1000,
        commit_s: float = 1.0,
        end_silence_s: float = 0.8,
    ) -> None:
        self.words = sorted(words, key=lambda w: w.start)
        self.chunk_ms = chunk_ms
        self.commit_s, self.end_silence_s = commit_s, end_silence_s
        self.pushed = 0
        self.steps = 0
        self._decoded_to = 0
        self._done = 0  # words sent as final
        self._open = False  # finals sent since the last endpoint

    @property
    def decoded_to(self) -> int:
        return self._decoded_to

    def paced_step(self) -> tuple[int, float] | None:
        return None

    def push(self, samples: Any) -> list[Decoded]:
        self.pushed += len(samples)
        if self.pushed - self._decoded_to < 16 * self.chunk_ms:
            return []
        return self._step(self.pushed / 16_000, ending=False)

    def finish(self) -> list[Decoded]:
        return self._step(self.pushed / 16_000, ending=True)

    def _step(self, now_s: float, *, ending: bool) -> list[Decoded]:
        self.steps += 1
        self._decoded_to = self.pushed
        heard = [w for w in self.words[self._done :] if w.end <= now_s]
        if not ending and heard and now_s - heard[-1].end < self.end_silence_s:
            done = [w for w in heard if w.end <= now_s - self.commit_s]
            pending = heard[len(done) :]
            out = [self._decoded(EventKind.FINAL, done)] if done else []
            out += [self._decoded(EventKind.PARTIAL, pending)] if pending else []
            self._done += len(done)
            self._open = self._open or bool(done)
            return out
        if not heard and not (self._open and (ending or self._silent(now_s))):
            return []
        self._done += len(heard)
        self._open = False
        return [self._decoded(EventKind.FINAL, heard, endpoint=True)]

    def _silent(self, now_s: float) -> bool:
        said = self.words[: self._done]
        return not said or now_s - said[-1].end >= self.end_silence_s

    @staticmethod
    def _decoded(kind: EventKind, words: list[Word], *, endpoint: bool = False) -> Decoded:
        start, end = (words[0].start, words[-1].end) if words else (0.0, 0.0)
        text = " ".join(w.text for w in words)
        return Decoded(kind, text, start, end, tuple(words), endpoint)
