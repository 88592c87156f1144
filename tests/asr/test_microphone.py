"""The microphone behind any StreamingRecognizer (issue 41): heard.testing's scripted one here,
so the microphone's own rules run without a model: what it hands on, in order, once each; the
flush; the pacing of a recognizer that paces itself."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

import numpy as np

from heard.asr.microphone import Microphone
from heard.asr.streaming import Decoded, StreamingRecognizer
from heard.speech import Word
from heard.testing import ScriptedRecognizer
from heard.transcript.events import EventKind, TranscriptEvent
from heard.transcript.utterances import Utterances

SAID = [Word(0.2, 0.5, "we"), Word(0.6, 0.9, "ship"), Word(1.0, 1.4, "friday."),
        Word(3.0, 3.3, "okay.")]  # fmt: skip
FRAME = b"\x00\x00" * 1600  # 100 ms of PCM16 at 16 kHz


def test_the_scripted_recognizer_is_a_streaming_recognizer() -> None:
    recognizer: StreamingRecognizer = ScriptedRecognizer(SAID)
    steps = [recognizer.push(np.zeros(1600, np.float32)) for _ in range(40)]
    decoded = [d for step in steps for d in step] + recognizer.finish()
    finals = [d for d in decoded if d.kind is EventKind.FINAL]
    assert " ".join(d.text for d in finals) == "we ship friday. okay."
    assert [d.endpoint for d in finals][-1] is True
    assert decoded[0].kind is EventKind.PARTIAL  # words are heard before they are final
    assert recognizer.decoded_to == 40 * 1600
    assert recognizer.paced_step() is None


async def test_the_microphone_hands_on_each_decoded_step_in_order_and_flushes() -> None:
    decoded: list[Decoded] = []
    events: list[TranscriptEvent] = []
    made: list[ScriptedRecognizer] = []

    def scripted(speaker: str) -> StreamingRecognizer:
        made.append(ScriptedRecognizer(SAID))
        return made[-1]

    async def on_decoded(found: Sequence[Decoded], t_ms: int) -> None:
        decoded.extend(found)

    raw = Microphone("ana", on_decoded, lambda ms, rtf: None, scripted)
    for _ in range(20):
        raw.add(FRAME)
    await raw.flush()
    assert made[0].pushed == 20 * 1600
    assert " ".join(d.text for d in decoded if d.kind is EventKind.FINAL) == "we ship friday."
    await raw.close()

    utterances = Utterances("ana")

    async def on_event(found: Sequence[Decoded], t_ms: int) -> None:
        events.extend(utterances.events(found, t_ms))

    sentences = Microphone("ana", on_event, lambda ms, rtf: None, scripted)
    for _ in range(40):
        sentences.add(FRAME)
    await sentences.close()
    finals = [e.text for e in events if e.kind is EventKind.FINAL]
    assert finals == ["we ship friday.", "okay."]  # committed words gather into sentences
    assert all(e.speaker == "ana" for e in events)


async def test_a_recognizer_slower_than_its_audio_gets_wider_steps() -> None:
    """A recognizer that paces itself (``paced_step`` None): steps slower than the audio they
    cover widen the step, and the client is told."""
    told: list[int] = []

    class Slow(ScriptedRecognizer):
        def _step(self, now_s: float, *, ending: bool) -> list[Decoded]:
            time.sleep(0.03)  # 30 ms to decode each 20 ms step: slower than the audio
            return super()._step(now_s, ending=ending)

    microphone = Microphone("ana", None, lambda ms, rtf: told.append(ms),
                            lambda speaker: Slow(SAID, chunk_ms=20))  # fmt: skip
    for _ in range(30):
        microphone.add(b"\x00\x00" * 320)  # 20 ms, as a client sends it
        await asyncio.sleep(0.02)
    await microphone.close()
    assert told[:1] == [2000]  # the pacer doubles its 1 s step


async def test_a_microphone_whose_recognizer_failed_never_makes_a_flush_wait() -> None:
    def broken(speaker: str) -> StreamingRecognizer:
        raise RuntimeError("no model")

    microphone = Microphone("ana", None, lambda ms, rtf: None, broken)
    microphone.add(FRAME)
    await asyncio.sleep(0.2)  # its task failed making the recognizer
    await asyncio.wait_for(microphone.flush(), 5)
