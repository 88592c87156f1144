"""The live decoder and its service: short contexts, batches, rounds and the shared pace."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from heard.asr import decoder as decoder_module
from heard.asr.audio import SAMPLE_RATE, load_audio
from heard.asr.decoder import (
    MIN_AVG_LOGPROB,
    BufferDecoder,
    Request,
    _unlooped,
    context_seconds,
)
from heard.asr.service import (
    BUSY_ABOVE,
    NARROW_BELOW,
    PACE_STEPS_MS,
    DecodeService,
    SharedPace,
)
from heard.asr.whisper import WhisperOptions, load_model
from heard.speech import Segment
from tests.conftest import AUDIO
from tests.reading import assert_reads


def test_a_buffer_gets_the_shortest_context_that_leaves_silence_after_it() -> None:
    assert context_seconds(0.5) == 4
    assert context_seconds(1.0) == 4
    assert context_seconds(3.0) == 6
    assert context_seconds(3.1) == 8
    assert context_seconds(29.0) == 30


def texts(found: list[list[Segment]]) -> list[str]:
    return [" ".join(s.text for s in segments) for segments in found]


@pytest.fixture(scope="module")
def jfk() -> np.ndarray:
    return load_audio(AUDIO / "jfk.flac")


@pytest.mark.asr
def test_a_batch_gives_each_buffer_what_it_gets_alone(jfk: np.ndarray) -> None:
    """Issue 29: batching must not change what a stream hears. Buffers of one context length
    (and prompt) share a batch; the others are decoded apart."""
    decoder = BufferDecoder(load_model(WhisperOptions()), "en")
    second = SAMPLE_RATE
    requests = [
        Request(jfk[: 3 * second], word_timestamps=True),
        Request(jfk[4 * second : 7 * second], word_timestamps=True),  # the same context
        Request(jfk[8 * second :], prompt="what your country can do for you", word_timestamps=True),
        Request(jfk[: 9 * second]),  # a longer context, no word times
        Request(np.zeros(0, dtype=np.float32)),
    ]
    alone = [decoder.decode([r])[0] for r in requests]
    together = decoder.decode(requests)
    assert together == alone
    heard = texts(alone)
    assert len(set(heard[:4])) == 4, "four different buffers, four different readings"
    # the first 3 s; AVX2's "so am i fellow" for "so my fellow" is two words of five
    assert_reads(heard[0], "and so my fellow americans", max_wer=0.4)
    assert heard[4] == ""
    assert all(w.end <= 3.0 for s in alone[0] for w in s.words)


@pytest.mark.asr
def test_a_buffer_read_with_a_beam_is_decoded_apart_with_that_beam(jfk: np.ndarray) -> None:
    """A stream may read with Whisper's beam (``StreamOptions.beam_size``): its buffer is not
    batched with greedy ones of the same context, and the beam reaches the generator."""
    decoder = BufferDecoder(load_model(WhisperOptions()), "en")
    model = decoder._whisper.model
    beams: list[int] = []

    class Recorded:
        def generate(self, *args: object, **kwargs: object) -> object:
            beams.append(int(kwargs["beam_size"]))  # type: ignore[call-overload]
            return model.generate(*args, **kwargs)

        def __getattr__(self, name: str) -> object:  # the encoder and the rest, as they are
            return getattr(model, name)

    decoder._whisper.model = Recorded()
    try:
        second = SAMPLE_RATE
        requests = [Request(jfk[: 3 * second], word_timestamps=True),
                    Request(jfk[: 3 * second], word_timestamps=True, beam_size=5)]  # fmt: skip
        alone = [decoder.decode([r])[0] for r in requests]
        assert beams == [1, 5]
        assert decoder.decode(requests) == alone
        assert sorted(beams[2:]) == [1, 5], "the same context, two groups"
    finally:
        decoder._whisper.model = model


@pytest.mark.asr
def test_a_buffer_whisper_rates_as_no_speech_reads_nothing(
    jfk: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 58: Whisper's own rule for a reading of no speech, as files are read. A second and
    a half of line noise is "I'm a bit too much." to tiny.en (no speech likely, read with a
    mean log-probability under -1); the live decoder reads nothing there, and still reads
    speech, each segment carrying its reading's log-probability."""
    decoder = BufferDecoder(load_model(WhisperOptions()), "en")
    noise = (np.random.default_rng(0).standard_normal(24_000) * 0.05).astype(np.float32)
    speech = jfk[: 3 * SAMPLE_RATE]
    found = decoder.decode([Request(noise, word_timestamps=True), Request(speech)])
    assert found[0] == []
    assert_reads(texts(found[1:])[0], "and so my fellow americans", max_wer=0.4)
    assert all(s.avg_logprob is not None and s.avg_logprob > MIN_AVG_LOGPROB for s in found[1])
    monkeypatch.setattr(decoder_module, "NO_SPEECH_PROB", 1.0)
    made_up = decoder.decode([Request(noise, word_timestamps=True)])[0]
    assert made_up, "without the rule the noise reads as words"
    assert all(s.avg_logprob is not None and s.avg_logprob < MIN_AVG_LOGPROB for s in made_up)


@pytest.mark.asr
def test_the_service_hands_each_stream_its_own_reading(jfk: np.ndarray) -> None:
    """Streams on many threads, one service: each gets exactly its own buffer's reading, and a
    stream that stops sending holds nothing up (the rounds go on without it)."""
    model = load_model(WhisperOptions())
    service = DecodeService(model, workers=2)
    direct = BufferDecoder(model, "en")
    pieces = [jfk[i * SAMPLE_RATE : (i + 3) * SAMPLE_RATE] for i in range(0, 8, 2)]
    expected = [direct.decode([Request(p)])[0] for p in pieces]
    got: dict[int, list[list[Segment]]] = {}

    def stream(i: int) -> None:
        got[i] = [service.decode("en", [Request(pieces[i])])[0] for _ in range(2)]

    threads = [threading.Thread(target=stream, args=(i,)) for i in range(len(pieces))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert all(got[i] == [expected[i], expected[i]] for i in range(len(pieces)))
    # every stream has stopped: nothing waits, and one more stream is served at once
    rounds = service.rounds
    assert service.decode("en", [Request(pieces[0])]) == [expected[0]]
    assert service.rounds == rounds + 1
    service.close()


def test_the_shared_pace_sets_the_shortest_step_the_workers_keep_up_with() -> None:
    """The step is the rung at which the last window's load, scaled to it, stays under
    BUSY_ABOVE: reached in one window, not by doubling one window at a time; it narrows one
    rung per two light windows, never below the first."""
    pace = SharedPace(workers=2, window_s=2.0, _window_start=0.0)
    t = 0.0

    def window(load: float) -> int | None:
        """Two 1 s rounds that keep the two workers ``load`` busy."""
        nonlocal t
        moved = None
        for _ in range(2):
            t += 1.0
            moved = pace.observe(2 * load, t) or moved
        return moved

    assert pace.step_ms == PACE_STEPS_MS[0] == 500
    assert BUSY_ABOVE == 0.85
    assert window(0.8) is None, "under the mark: stay"
    assert window(1.0) == 750, "1.0 at 500 ms is 0.67 at 750 ms"
    assert window(1.0) == 1000
    assert window(1.0) == 1250, "one rung, not doubled: 2 s steps commit words at 4 s"
    assert window(1.0) == 1500
    pace.step_ms = 1000
    assert window(1.6) == 2000, "1.6 at 1 s is 0.8 at 2 s: straight there"
    assert window(1.0) == 3000
    assert window(1.0) == 4000
    assert window(1.0) is None, "at most 4 s"
    assert window(0.2) is None, "one light window is not enough"
    assert window(0.2) == 3000, "then one rung down"
    # 0.45 at 3 s is 0.675 at 2 s: over NARROW_BELOW, and 2 s would soon widen again
    assert window(0.45) is None
    assert window(0.45) is None
    assert window(0.35) is None
    assert window(0.35) == 2000
    for _ in range(12):  # two windows a rung: 1500, 1250, 1000, 750, 500
        window(0.1)
    assert pace.step_ms == 500
    assert window(0.0) is None
    assert window(0.0) is None, "never below the first step"


def test_a_step_narrows_only_where_it_would_not_widen_again() -> None:
    """At 1 s a load of 0.4 is 0.53 at 750 ms (narrow); 0.5 would be 0.67 there: over
    NARROW_BELOW, so it stays."""
    for load, expected in ((0.4, 750), (0.5, 1000)):
        pace = SharedPace(workers=2, window_s=1.0, step_ms=1000, _window_start=0.0)
        for k in range(1, 3):
            pace.observe(2 * load, float(k))
        assert pace.step_ms == expected
    assert 0.53 < NARROW_BELOW < 0.67


def test_only_a_repeat_that_runs_to_the_end_is_a_loop() -> None:
    loop = [7, 1, 2, 3, 1, 2, 3, 1, 2]  # "Americans. I'm not my fellow Americans. I'm not..."
    assert _unlooped(loop) == [7, 1, 2, 3]
    speech = [1, 2, 3, 1, 2, 3, 4, 5, 6]  # "I'm sorry, I'm sorry, I did not see you"
    assert _unlooped(speech) == speech
    assert _unlooped([1, 1, 1, 1]) == [1, 1, 1, 1], "a word said again is not a run"


class _SevenFails:
    """A decoder that reads each buffer as its length, and fails any round holding one of
    7 samples."""

    def decode(self, language: str, requests: list[Request]) -> list[list[Segment]]:
        if any(len(r.audio) == 7 for r in requests):
            raise ValueError("a bad buffer")
        return [[Segment(0.0, 1.0, f"{len(r.audio)} samples")] for r in requests]


def test_one_bad_buffer_fails_only_its_own_stream() -> None:
    """A round that raises is decoded again one buffer at a time: the others get their
    readings, the bad one its error, and the worker lives on."""

    service = DecodeService(load_model(WhisperOptions()), workers=1)
    service.direct = _SevenFails()  # type: ignore[assignment]
    jobs = [np.zeros(n, dtype=np.float32) for n in (5, 7, 9)]
    got: dict[int, object] = {}

    def stream(n: int, audio: np.ndarray) -> None:
        try:
            got[n] = service.decode("en", [Request(audio)])[0][0].text
        except ValueError as e:
            got[n] = e

    threads = [threading.Thread(target=stream, args=(len(a), a)) for a in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert got[5] == "5 samples"
    assert got[9] == "9 samples"
    assert isinstance(got[7], ValueError)
    assert service.decode("en", [Request(jobs[0])])[0][0].text == "5 samples", "still serving"
    service.close()


def test_a_failed_round_gives_the_bad_buffer_alone_its_error() -> None:
    """The same, with the three in one round for certain (above, the threads may race into
    separate rounds): the buffer after the bad one still gets its reading."""
    from heard.asr.service import _Job

    service = DecodeService(load_model(WhisperOptions()), workers=1)
    service.direct = _SevenFails()  # type: ignore[assignment]
    jobs = [_Job("en", Request(np.zeros(n, dtype=np.float32))) for n in (5, 7, 9)]
    service._round(jobs)
    assert jobs[0].done.result()[0].text == "5 samples"
    assert isinstance(jobs[1].done.exception(), ValueError)
    assert jobs[2].done.result()[0].text == "9 samples"
    service.close()
