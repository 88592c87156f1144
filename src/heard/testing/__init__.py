"""Fakes for heard's seams, for heard's own tests and for the tests of code that embeds heard.

Each stands where real I/O would (a model, an LLM, a translation service, a memory index, the
time of day) and behaves as the real part does at its interface, with what it was asked
recorded for the test to look at:

* ``FakeTranscriber``: canned segments (or a whole ``Transcription``) per track, or an
  exception to raise (``Transcriber``);
* ``FakeDiarizer``: canned speaker turns per recording, or an exception (``diarize.Diarizer``);
* ``ScriptedRecognizer``: a live stream's words at the audio times they were said, decoded as
  the audio reaches them (``asr.StreamingRecognizer``);
* ``ScriptedProvider``: scripted tool-call answers, failures and delays (``llm.Provider``);
* ``ScriptedTranslator``: tags the text with the target language; delays and failures on cue
  (``release.Translator``);
* ``ScriptedRetriever``: answers with the query itself; delays and failures on cue
  (``live.Retriever``);
* ``HashingEmbedder``: deterministic bag-of-words vectors, no model (``memory.Embedder``);
* ``FakeClock``: a time of day that moves only when told (the pipeline's clock);
* ``silent_audio`` and ``forge_length``: files of silence, small for hours of audio, and the
  same with a header that lies about their length (a server's input limits, tested).

    from heard.testing import FakeTranscriber
    from heard.speech import Segment

    fake = FakeTranscriber({"alice.wav": [Segment(0.0, 2.0, "hello")]})
    run_pipeline(meeting_id, db=db, transcriber=fake)
    assert fake.calls == ["alice.wav"]

Each group of fakes has its module (``recognizers``, ``providers``, ``memory``, ``clock``,
``audio``); every name is here, so ``from heard.testing import ...`` is all a test needs.
"""

from __future__ import annotations

from heard.testing.audio import forge_length, silent_audio
from heard.testing.clock import FakeClock
from heard.testing.memory import HashingEmbedder, ScriptedRetriever
from heard.testing.providers import Answer, ProviderCall, ScriptedProvider, ScriptedTranslator
from heard.testing.recognizers import FakeDiarizer, FakeTranscriber, ScriptedRecognizer

__all__ = [
    "Answer",
    "FakeClock",
    "FakeDiarizer",
    "FakeTranscriber",
    "HashingEmbedder",
    "ProviderCall",
    "ScriptedProvider",
    "ScriptedRecognizer",
    "ScriptedRetriever",
    "ScriptedTranslator",
    "forge_length",
    "silent_audio",
]
