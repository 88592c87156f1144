"""Peers that heard's benchmarks measure against, re-implemented from their descriptions.

* ``LocalAgreement2``: the commit policy of whisper_streaming (Machacek, Dabre and
  Bojar, "Turning Whisper into Real-Time Transcription System", 2023): after each
  re-decode, commit the longest common prefix of the last two hypotheses beyond
  what is already committed, comparing words exactly. Applied here to whole-text
  hypotheses (no timestamps), as heard's events carry none.
* ``OnlineLocalAgreement``: whisper_streaming's whole online processor (buffer, prompt,
  timed words, LocalAgreement-2, trimming at segment ends), for ``bench/capacity.py``.

``faster_whisper_reads_files`` lets raw faster-whisper decode files on PyAV 19.
"""

from __future__ import annotations

from typing import Any


def faster_whisper_reads_files() -> None:
    """faster-whisper 1.2.1 (the newest release) opens a file with ``av.open(...,
    metadata_errors="ignore")``, a keyword PyAV 19 dropped (it decodes tags either way), so its
    ``decode_audio`` and ``transcribe(path)`` fail there. In a peer's own process, where the
    installed PyAV rejects the keyword, ``av.open`` drops it: the peer decodes as ever."""
    import av

    from heard.asr.audio import tag_options

    if tag_options(av.open):  # this PyAV takes the keyword: nothing to do
        return
    real = av.open

    def open_without_tag_errors(*args: Any, metadata_errors: str = "", **kwargs: Any) -> Any:
        return real(*args, **kwargs)

    av.open = open_without_tag_errors


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


class OnlineLocalAgreement:
    """whisper_streaming's online processor, re-implemented from its description (Machacek et
    al. 2023 and its README): the audio buffer is re-transcribed with faster-whisper (beam 5,
    word timestamps, the last 200 committed characters as the prompt) each time at least
    ``min_chunk_s`` of new audio has arrived; the words two consecutive transcriptions agree
    on are committed (the hypothesis buffer drops words before the last commit, less 0.1 s,
    and the first 1-5 words repeating the committed tail); once the buffer is over
    ``trim_s`` (15 s) it is cut at the end of the last committed Whisper segment but one."""

    def __init__(self, model: object, *, trim_s: float = 15.0) -> None:
        import numpy as np

        self.model = model
        self.trim_s = trim_s
        self.audio = np.zeros(0, dtype=np.float32)
        self.offset = 0.0  # seconds of stream before the buffer
        self.committed: list[tuple[float, float, str]] = []
        self._buffer: list[tuple[float, float, str]] = []  # the last transcription's new words
        self._last_end = 0.0

    def _prompt(self) -> str:
        before = [t for _, e, t in self.committed if e <= self.offset]
        return " ".join(before)[-200:]

    def _new(self, words: list[tuple[float, float, str]]) -> list[tuple[float, float, str]]:
        new = [w for w in words if w[0] > self._last_end - 0.1]
        if new and self.committed and abs(new[0][0] - self._last_end) < 1:
            for n in range(min(5, len(new), len(self.committed)), 0, -1):
                tail = [t for _, _, t in self.committed[-n:]]
                if tail == [t for _, _, t in new[:n]]:
                    return new[n:]
        return new

    def step(self, audio: object) -> tuple[list[tuple[float, float, str]], list[str]]:
        """Add audio and transcribe the buffer: (words committed now, the uncommitted rest)."""
        import numpy as np

        self.audio = np.concatenate([self.audio, np.asarray(audio, dtype=np.float32)])
        segments, _ = self.model.transcribe(  # type: ignore[attr-defined]
            self.audio, language="en", initial_prompt=self._prompt(), beam_size=5,
            word_timestamps=True, condition_on_previous_text=True,
        )  # fmt: skip
        segments = [s for s in segments if s.no_speech_prob <= 0.9]
        words = [(self.offset + w.start, self.offset + w.end, w.word.strip())
                 for s in segments for w in (s.words or ())]  # fmt: skip
        new = self._new(words)
        agreed = 0
        while (
            agreed < min(len(new), len(self._buffer)) and new[agreed][2] == self._buffer[agreed][2]
        ):
            agreed += 1
        done, self._buffer = new[:agreed], new[agreed:]
        if done:
            self.committed += done
            self._last_end = done[-1][1]
        if len(self.audio) / 16_000 > self.trim_s and self.committed and len(segments) > 1:
            ends = [self.offset + s.end for s in segments]
            t = self.committed[-1][1]
            e = ends[-2]
            while len(ends) > 2 and e > t:
                ends.pop()
                e = ends[-2]
            if e <= t:
                cut = int((e - self.offset) * 16_000)
                self.audio = self.audio[cut:]
                self.offset = e
        return done, [t for _, _, t in self._buffer]

    def finish(self) -> list[tuple[float, float, str]]:
        """The stream ended: the uncommitted words are committed as they stand."""
        done, self._buffer = self._buffer, []
        self.committed += done
        return done
