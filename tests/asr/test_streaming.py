"""The streaming recognizer itself: the re-decode loop, its commits and its buffer, on tiny.en."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pytest

from heard.asr.audio import SAMPLE_RATE, load_audio
from heard.asr.decoder import Request
from heard.asr.service import PACE_STEPS_MS
from heard.asr.streaming import (
    CONTEXT_S,
    Decoded,
    SpareRule,
    StreamOptions,
    WhisperStreamingRecognizer,
    stream_events,
    strip_punctuation,
)
from heard.transcript.events import EventKind
from tests.conftest import AUDIO
from tests.reading import assert_reads

FRAME = SAMPLE_RATE // 10  # 100 ms, as a microphone or a socket sends audio


def frames(samples: np.ndarray) -> list[np.ndarray]:
    return [samples[i : i + FRAME] for i in range(0, len(samples), FRAME)]


def finals(decoded: list[Decoded]) -> str:
    return " ".join(d.text for d in decoded if d.kind is EventKind.FINAL)


def test_options_and_punctuation_rules() -> None:
    with pytest.raises(ValueError, match="chunk_ms must be > 0"):
        StreamOptions(chunk_ms=0)
    assert strip_punctuation("Hello, World. It's here!") == "hello world it's here"


@pytest.mark.asr
def test_the_steps_fall_on_the_same_audio_whatever_the_frame_sizes() -> None:
    """A client's frame size (20, 50, 100 ms) or a resampler's delay (32 samples short in the
    first frame) moves no step: each decodes up to a whole number of steps from the start, the
    rest waits. Steps that moved with the frames made tiny.en hear "am i fellow america s"."""
    jfk = load_audio(AUDIO / "jfk.flac")
    cuts = [1568, 3200, *range(4768, len(jfk), 800)]  # a resampled 8 kHz call's frames
    pieces = np.split(jfk, cuts)

    def decoded(parts: list[np.ndarray]) -> list[tuple[str, str, int]]:
        recognizer = WhisperStreamingRecognizer()
        out = []
        for part in parts:
            out += [(d.kind.value, d.text, recognizer.decoded_to) for d in recognizer.push(part)]
        return out

    odd = decoded(pieces)
    assert odd == decoded(frames(jfk))
    assert all(at % SAMPLE_RATE == 0 for _, _, at in odd)


@pytest.mark.asr
def test_frames_are_decoded_once_a_chunk_has_arrived_and_the_final_says_it_all() -> None:
    jfk = load_audio(AUDIO / "jfk.flac")
    recognizer = WhisperStreamingRecognizer(options=StreamOptions(chunk_ms=1000))
    out: list[Decoded] = []
    steps = 0
    for frame in frames(jfk):
        got = recognizer.push(frame)
        # a step runs only on a whole chunk of new audio; between steps nothing is decoded
        assert recognizer.received - recognizer.decoded_to < SAMPLE_RATE
        steps += recognizer.decoded_to == recognizer.received
        out += got
    out += recognizer.finish()
    assert steps == len(jfk) // SAMPLE_RATE
    assert recognizer.decoded_to == recognizer.received == len(jfk)
    assert out[0].kind is EventKind.PARTIAL
    assert out[-1].kind is EventKind.FINAL
    assert_reads(finals(out))


@pytest.mark.asr
def test_silence_costs_no_event_and_keeps_no_buffer() -> None:
    recognizer = WhisperStreamingRecognizer()
    for frame in frames(np.zeros(5 * SAMPLE_RATE, dtype=np.float32)):
        assert recognizer.push(frame) == []
    assert recognizer.finish() == []
    # what is kept of silence is a short tail and the context before it, however long it lasts
    assert len(recognizer._audio) <= (CONTEXT_S + 0.5) * SAMPLE_RATE + FRAME


@pytest.mark.asr
def test_words_are_committed_inside_the_sentence_and_none_is_said_twice() -> None:
    """Issue 29: what two decodes agree on is final at once, word by word, inside continuous
    speech (no pause long enough to end the utterance), and the buffer is cut behind it."""
    jfk = load_audio(AUDIO / "jfk.flac")
    recognizer = WhisperStreamingRecognizer(options=StreamOptions(end_silence_ms=5000))
    decoded: list[tuple[int, Decoded]] = []
    longest = 0
    for frame in frames(jfk):
        decoded += [(recognizer.received, d) for d in recognizer.push(frame)]
        longest = max(longest, recognizer.received - recognizer._utt_start)
    decoded += [(recognizer.received, d) for d in recognizer.finish()]
    commits = [(at, d) for at, d in decoded if d.kind is EventKind.FINAL]
    assert len(commits) >= 4, "words are committed before the speech ends"
    assert all(not d.endpoint for _, d in commits[:-1])
    assert commits[0][0] <= 3 * SAMPLE_RATE
    assert longest < 8 * SAMPLE_RATE, "the buffer is cut behind committed words"
    # every word once (at most one lost), none twice
    assert_reads(" ".join(d.text for _, d in commits))


@pytest.mark.asr
def test_a_sentence_of_commits_is_one_final_event() -> None:
    """``stream_events`` gathers the commits of a sentence into one final: evidence is kept
    per sentence or turn, not per two words."""
    jfk = load_audio(AUDIO / "jfk.flac")
    events = list(stream_events(jfk, options=StreamOptions(end_silence_ms=5000)))
    finals = [e for e in events if e.kind is EventKind.FINAL]
    assert 1 <= len(finals) <= 3
    assert_reads(" ".join(e.text for e in finals))
    partials = [e.text for e in events if e.kind is EventKind.PARTIAL]
    # committed words lead the partials that follow them
    first = strip_punctuation(finals[0].text).split()[:3]
    assert any(strip_punctuation(p).split()[:3] == first for p in partials)


@pytest.mark.asr
@pytest.mark.parametrize("step_ms", PACE_STEPS_MS)
@pytest.mark.parametrize("lead_s", [0.0, 0.5])
def test_no_word_is_doubled_at_any_step_the_pace_sets(step_ms: int, lead_s: float) -> None:
    """The shared pace sets steps from 0.5 to 4 s: the cuts then fall elsewhere in the speech.
    No word comes twice, and at most one is lost (tiny.en misses a word at a forced cut)."""

    jfk = load_audio(AUDIO / "jfk.flac")
    samples = np.concatenate([np.zeros(int(lead_s * SAMPLE_RATE), dtype=np.float32), jfk])
    recognizer = WhisperStreamingRecognizer(options=StreamOptions(chunk_ms=step_ms))
    said: list[Decoded] = []
    for frame in frames(samples):
        said += recognizer.push(frame)
    said += recognizer.finish()
    assert_reads(finals(said))  # at most one word lost, none twice, on any CPU's reading


def test_the_silence_after_the_last_committed_words_ends_the_utterance(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A buffer cut behind an utterance's last committed words holds only silence: that
    silence, not the stream's end, sends the endpoint (a final for /v1/live, speech_final for
    /v1/listen)."""
    import heard.asr.streaming as streaming
    from heard.speech import Word

    recognizer = WhisperStreamingRecognizer()
    said = [Word(0.1, 0.5, "hello"), Word(0.6, 1.0, "there")]
    recognizer._commits.agree(said)
    assert recognizer._commits.agree(said)[0] == said  # committed, then cut behind them
    recognizer.append(np.zeros(3 * SAMPLE_RATE, dtype=np.float32))
    recognizer._utt_start = SAMPLE_RATE
    monkeypatch.setattr(streaming, "_speech", lambda audio: [])
    assert recognizer.step(int(1.5 * SAMPLE_RATE)) == [], "500 ms of silence: not yet"
    [end] = recognizer.step(2 * SAMPLE_RATE)
    assert (end.kind, end.text, end.endpoint) == (EventKind.FINAL, "", True)
    assert recognizer.step(3 * SAMPLE_RATE) == [], "once"
    assert recognizer.finish() == []


def test_context_is_given_back_as_the_decoders_load_rises() -> None:
    rule = SpareRule(context_s=4.0, full_below=0.4, none_above=0.7)
    assert rule.before_s(None) == 4.0  # a stream decoding alone
    assert rule.before_s(0.2) == rule.before_s(0.4) == 4.0
    assert [rule.before_s(x) for x in (0.5, 0.6, 0.7, 0.95)] == [2.5, 1.0, 0.0, 0.0]
    assert SpareRule().before_s(None) == 0.0
    with pytest.raises(ValueError, match="full_below < none_above"):
        SpareRule(full_below=0.8, none_above=0.7)


def test_spare_beam_and_buffers_start_below_one_load_and_stop_above_another() -> None:
    rule = SpareRule.wide()
    assert rule.spends(None, spending=False), "a stream decoding alone always spends"
    assert rule.spends(0.4, spending=False)
    assert not rule.spends(0.5, spending=False), "not yet spending: starts only below 0.4"
    assert rule.spends(0.65, spending=True), "spending: stops only above 0.7"
    assert not rule.spends(0.75, spending=True)
    with pytest.raises(ValueError, match="beam_size >= 1"):
        SpareRule(beam_size=0)
    with pytest.raises(ValueError, match="force_trim_s >= trim_s"):
        SpareRule(trim_s=15.0)


def _decodes(recognizer: WhisperStreamingRecognizer) -> list[tuple[list[Request], float]]:
    """Record, for each decode, what was asked of the decoder and how long the stream's
    buffer was then (seconds)."""
    seen: list[tuple[list[Request], float]] = []
    decode = recognizer._decoder.decode

    def spy(language: str, requests: list[Request]) -> list:  # type: ignore[type-arg]
        seen.append((list(requests), (recognizer.received - recognizer._utt_start) / SAMPLE_RATE))
        return decode(language, requests)

    recognizer._decoder.decode = spy  # type: ignore[method-assign]
    return seen


def _spans(seen: list[tuple[list[Request], float]]) -> list[tuple[float, float]]:
    """How much audio each decode got and how long its buffer was (seconds)."""
    return [(len(requests[0].audio) / SAMPLE_RATE, buffer_s) for requests, buffer_s in seen]


@pytest.mark.asr
@pytest.mark.parametrize("context_s", [0.0, 4.0])
def test_each_decode_hears_the_audio_before_its_buffer_and_no_word_twice(
    context_s: float,
) -> None:
    """Issue 58: with CPU to spare a decode hears the committed audio before its buffer again
    (its words dropped), so that what follows reads as in the whole recording."""
    jfk = load_audio(AUDIO / "jfk.flac")
    options = StreamOptions(end_silence_ms=5000, spare=SpareRule(context_s=context_s))
    recognizer = WhisperStreamingRecognizer(options=options)
    seen = _decodes(recognizer)
    said: list[Decoded] = []
    for frame in frames(jfk):
        said += recognizer.push(frame)
    said += recognizer.finish()
    assert_reads(finals(said))
    heard_before = [audio_s - buffer_s for audio_s, buffer_s in _spans(seen)]
    if context_s:  # once the buffer was cut, decodes begin up to 4 s before it
        assert max(heard_before) > 1.0
    assert max(heard_before) <= context_s + 0.15  # a frame of audio may arrive meanwhile


@pytest.mark.asr
def test_a_stream_reads_with_the_beam_and_buffer_length_it_was_given() -> None:
    """Issue 58's measured options (greedy and 3 s ship): each decode asks for the stream's
    beam, and a buffer grows to ``trim_s`` before it is cut in a pause; every word once."""
    jfk = load_audio(AUDIO / "jfk.flac")
    options = StreamOptions(end_silence_ms=5000, beam_size=5, trim_s=15.0, force_trim_s=20.0)
    recognizer = WhisperStreamingRecognizer(options=options)
    seen = _decodes(recognizer)
    said: list[Decoded] = []
    for frame in frames(jfk):
        said += recognizer.push(frame)
    said += recognizer.finish()
    # beam 5 reads "asked not" where greedy reads "ask not": each word once all the same
    assert_reads(finals(said))
    assert {r.beam_size for requests, _ in seen for r in requests} == {5}
    assert max(buffer_s for _, buffer_s in seen) > 8.0, "not cut at 3 s, nor forced at 8"
    with pytest.raises(ValueError, match="beam_size >= 1"):
        StreamOptions(beam_size=0)
    with pytest.raises(ValueError, match="force_trim_s >= trim_s"):
        StreamOptions(trim_s=10.0)


@pytest.mark.asr
def test_a_loaded_service_decodes_each_buffer_alone() -> None:
    from heard.asr.service import DecodeService
    from heard.asr.whisper import WhisperOptions, load_model

    service = DecodeService(load_model(WhisperOptions()))
    try:
        recognizer = WhisperStreamingRecognizer(
            options=StreamOptions(
                end_silence_ms=5000, chunk_ms=1000, spare=SpareRule(context_s=4.0)
            ),
            decoder=service,
        )
        recognizer.chunk_ms = 1000
        seen = _decodes(recognizer)
        service.pace.last_load = 0.9  # busier than SpareRule's none_above
        for frame in frames(load_audio(AUDIO / "jfk.flac")):
            recognizer.push(frame)
            service.pace.last_load = 0.9
        assert seen
        assert max(audio_s - buffer_s for audio_s, buffer_s in _spans(seen)) <= 0.15
    finally:
        service.close()


@pytest.mark.asr
def test_a_stream_spends_spare_cpu_on_its_reading_and_gives_it_back_under_load() -> None:
    """Issue 58: on a shared service a stream reads with the spare rule's beam and longer
    buffers while the workers are idle, reads greedy with short buffers once they are busy,
    and does not flap in between (the load its own beam adds keeps it on, the load it gave
    back keeps it off); every word once throughout."""
    from heard.asr.service import DecodeService
    from heard.asr.whisper import WhisperOptions, load_model

    service = DecodeService(load_model(WhisperOptions()))
    try:
        options = StreamOptions(end_silence_ms=5000, spare=SpareRule.wide())
        recognizer = WhisperStreamingRecognizer(options=options, decoder=service)
        recognizer.chunk_ms = 1000
        seen = _decodes(recognizer)
        # the workers' load, by seconds of the stream: idle, between, busy, between, idle
        loads = [(4.0, 0.2), (6.0, 0.55), (8.0, 0.9), (9.5, 0.55), (99.0, 0.3)]
        beams: dict[float, set[int]] = {}
        said: list[Decoded] = []
        for frame in frames(load_audio(AUDIO / "jfk.flac")):
            load = next(x for until, x in loads if recognizer.received / SAMPLE_RATE < until)
            service.pace.last_load = load
            before = len(seen)
            said += recognizer.push(frame)
            beams.setdefault(load, set()).update(r.beam_size for rs, _ in seen[before:] for r in rs)
        said += recognizer.finish()
    finally:
        service.close()
    # 0.55 read with beam 5 after idle, greedy after busy
    assert beams == {0.2: {5}, 0.55: {1, 5}, 0.9: {1}, 0.3: {5}}
    order = [r.beam_size for rs, _ in seen for r in rs]
    switches = sum(a != b for a, b in pairwise(order))
    assert switches == 2, f"beam 5, then greedy under load, then beam 5 again: {order}"
    assert_reads(finals(said))
