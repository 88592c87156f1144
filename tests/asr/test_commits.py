"""Word commits (``heard.asr.commits``): no word lost or said twice where the buffer is cut.

The decodes here are a fake recognizer that reads the speech's own words back (the offline
alignment of the audio), as Whisper would reread a buffer: the words whose audio the buffer
holds, times jittered by the alignment's tens of milliseconds, the word the buffer cuts
through misheard, and sometimes the end of the word before the cut heard again.
"""

from __future__ import annotations

import random
from itertools import pairwise

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from heard.asr.commits import (
    CONFIDENT,
    CONFIDENT_SETTLED_S,
    OVERLAP_S,
    SETTLED_S,
    CommitRule,
    WordCommits,
)
from heard.speech import Word

VOCABULARY = "the plan is to ship it on friday so we can test with ten users first".split()


def speech(rng: random.Random, n: int) -> list[Word]:
    """``n`` words, 0.15-0.6 s each, with gaps of 0-0.5 s. A word said twice in a row goes
    after a pause: "with with" run together, the second shorter than the alignment's error,
    reads the same as "with" heard twice (the module's documented limit)."""
    words: list[Word] = []
    t = 0.0
    for _ in range(n):
        gap = rng.choice([0.0, 0.0, 0.05, 0.2, 0.5])
        text = rng.choice(VOCABULARY)
        if words and words[-1].text == text:
            gap = 0.5
        t += gap
        length = rng.uniform(0.15, 0.6)
        words.append(Word(round(t, 3), round(t + length, 3), text))
        t += length
    return words


def reread(truth: list[Word], start: float, end: float, rng: random.Random) -> list[Word]:
    """What a decode of the audio from ``start`` to ``end`` says."""
    out = []
    for w in truth:
        if w.end <= start or w.start >= end:
            continue
        jitter = rng.uniform(-0.05, 0.05)
        sure = rng.choice([0.5, 0.95])  # how sure Whisper is of it (commits.CONFIDENT)
        if w.end > end:  # cut through by the buffer's end: heard wrong, or not at all
            if rng.random() < 0.5:
                out.append(Word(w.start + jitter, end, f"{w.text[:2]}~{end:.1f}", sure))
            continue
        if w.start < start:  # the end of a word the cut went through (its audio was dropped)
            if rng.random() < 0.3:
                out.append(Word(start, w.end + jitter, w.text, sure))
            continue
        out.append(Word(max(start, w.start + jitter), w.end + jitter, w.text, sure))
    return out


def pauses(truth: list[Word], start: float, end: float) -> list[tuple[float, float]]:
    """The silences of at least 0.3 s in the buffer, as VAD finds them (whole)."""
    gaps = [(a.end, b.start) for a, b in pairwise(truth)]
    return [(a, b) for a, b in gaps if b - a >= 0.3 and start <= a and b <= end]


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 40))
@example(seed=274, n=39)  # "on on on" with pauses: the third heard again across the line
@example(seed=183, n=15)  # "is test is the": the line moved past "test" to the second "is"
def test_the_committed_words_are_the_speech_each_once(seed: int, n: int) -> None:
    rng = random.Random(seed)
    truth = speech(rng, n)
    commits = WordCommits()
    said: list[Word] = []
    start, end = 0.0, 0.0
    stop = truth[-1].end + 0.5
    while end < stop:
        end += rng.choice([0.5, 1.0, 1.0, 2.0])  # the step, as the pacer sets it
        settled = end if rng.random() < 0.7 else None  # as a stream decodes, or agreement only
        done, _ = commits.agree(reread(truth, start, end, rng), heard_to=settled)
        said += done
        assert all(a.text == b.text for a, b in zip(said, truth, strict=False)), "in order"
        # a buffer long enough to cut anyway (FORCE_TRIM_S) sometimes
        found = commits.cut_at(pauses(truth, start, end), force=rng.random() < 0.3)
        if found is not None and rng.random() < 0.6:
            start = max(start, found[0])  # the recognizer drops the audio before the cut
    said += commits.endpoint(reread(truth, start, stop, rng))
    assert [w.text for w in said] == [w.text for w in truth]


def test_words_two_decodes_agree_on_are_committed_and_the_rest_waits() -> None:
    commits = WordCommits()
    first = [Word(0.0, 0.4, "ask"), Word(0.4, 0.7, "not"), Word(0.7, 0.9, "wha")]
    assert commits.agree(first) == ([], first)
    second = [Word(0.0, 0.41, "Ask"), Word(0.41, 0.7, "not,"), Word(0.7, 1.0, "what")]
    done, pending = commits.agree(second)
    assert [w.text for w in done] == ["Ask", "not,"], "the normalized word rule"
    assert [w.text for w in pending] == ["what"]
    assert commits.cut_s == 0.7


def test_a_word_heard_with_a_second_after_it_is_committed_from_one_decode() -> None:
    """A loaded server's 2 s steps: agreement alone would commit "ask" at the second decode,
    4 s after it was said; it ends 1.2 s before the first decode's end, so that decode commits
    it, and "not", 0.8 s before the end, waits. The next decode reads it otherwise ("knot"):
    no agreement, but it has heard 2.8 s after it."""
    commits = WordCommits()
    first = [Word(0.4, 0.8, "ask", 0.6), Word(1.0, 1.2, "not", 0.6), Word(1.3, 1.9, "what", 0.6)]
    assert commits.agree(first, heard_to=2.0) == (first[:1], first[1:])
    assert SETTLED_S == 1.0
    second = [Word(0.4, 0.8, "ask", 0.6), Word(1.0, 1.2, "knot", 0.6),
              Word(1.3, 1.9, "what", 0.6), Word(3.2, 3.5, "your", 0.6)]  # fmt: skip
    assert commits.agree(second, heard_to=4.0) == (second[1:3], second[3:])
    assert WordCommits().agree(first)[0] == [], "without heard_to: agreement only"


def test_a_confident_word_is_committed_with_less_heard_after_it() -> None:
    """A decode of 1.6 s: "ask", unsure and heard with 0.8 s after it, waits, and "not" after
    it, though sure and heard with 0.4 s after it, waits too: commits are a prefix. Read
    sure, "ask" needs only ``CONFIDENT_SETTLED_S`` after it, and so does "not"; "what", as
    sure, ends after the audio's end less that, and waits."""
    commits = WordCommits()
    words = [Word(0.4, 0.8, "ask", 0.5), Word(1.0, 1.2, "not", 0.95),
             Word(1.3, 1.9, "what", 0.99)]  # fmt: skip
    assert commits.agree(words, heard_to=1.6) == ([], words)
    assert CONFIDENT_SETTLED_S == 0.3
    assert CONFIDENT == 0.9
    commits = WordCommits()
    words[0] = Word(0.4, 0.8, "ask", 0.95)
    assert commits.agree(words, heard_to=1.6) == (words[:2], words[2:])
    unsure = [Word(0.4, 0.8, "ask", 0.9), Word(1.0, 1.2, "not", 0.89)]
    assert WordCommits().agree(unsure, heard_to=1.6)[0] == unsure[:1], "0.9 is sure"
    with pytest.raises(ValueError, match="over 0 s"):
        CommitRule(confident_settled_s=0.0)


def test_the_end_of_a_cut_word_heard_again_is_not_said_twice() -> None:
    commits = WordCommits()
    words = [Word(0.0, 0.5, "see"), Word(0.6, 1.0, "you")]
    commits.agree(words)
    assert [w.text for w in commits.agree([*words, Word(1.1, 1.3, "soon")])[0]] == ["see", "you"]
    # cut at 1.05: the next buffer hears "you" again, ending later than it did
    again = [Word(1.05, 1.2, "you"), Word(1.2, 1.5, "soon"), Word(1.6, 1.8, "then")]
    assert commits.agree(again) == (again[1:2], again[2:]), "soon agrees; you is not new"
    # but a word said again after a pause is new speech
    commits = WordCommits()
    commits.agree([Word(0.0, 0.4, "no")])
    commits.agree([Word(0.0, 0.4, "no"), Word(0.5, 0.6, "n")])
    assert [w.text for w in commits.endpoint([Word(1.4, 1.8, "no")])] == ["no"]


def test_a_forced_cut_keeps_committed_words_before_the_next_one() -> None:
    """Issue 58: eight seconds of a sales pitch with no pause ("...gross domestic product on
    travel"): a cut at the committed words' end went through "travel", which starts as "on"
    ends, and the next buffer, starting on it, never read it. The cut goes before the
    committed word starting ``OVERLAP_S`` before their end; the next decode reads the
    committed words again, and they are skipped."""

    def unsure(*words: tuple[float, float, str]) -> list[Word]:
        return [Word(start, end, text, 0.5) for start, end, text in words]

    commits = WordCommits()
    said = unsure((8.2, 9.0, "Brazil's"), (9.0, 9.3, "gross"), (9.3, 9.8, "domestic"),
                  (9.8, 10.25, "product"), (10.25, 10.56, "on"),
                  (10.5, 10.9, "travel"))  # fmt: skip
    pending = commits.agree(said, heard_to=11.6)[1]
    assert [w.text for w in pending] == ["travel"]
    assert commits.cut_at([]) is None, "no pause, not long enough to force"
    assert OVERLAP_S == 1.0
    assert commits.cut_at([], force=True) == (9.3, True)
    again = unsure((9.32, 9.8, "domestic"), (9.8, 10.26, "product"), (10.26, 10.55, "on"),
                   (10.55, 10.9, "travel"), (11.0, 11.3, "a"), (11.3, 11.5, "lot"))  # fmt: skip
    assert [w.text for w in commits.agree(again, heard_to=12.6)[0]] == ["travel", "a", "lot"]


def test_the_endpoint_only_rule_commits_nothing_before_the_utterance_ends() -> None:
    """The bound ``bench/stream_policy.py`` compares against: no agreement, nothing settled."""
    commits = WordCommits(CommitRule.endpoint_only())
    words = [Word(0.0, 0.4, "ask", 0.99), Word(0.4, 0.7, "not", 0.99)]
    assert commits.agree(words, heard_to=10.0) == ([], words)
    assert commits.agree(words, heard_to=20.0) == ([], words)
    assert commits.endpoint(words) == words


PHRASE = "my name's andrew we are here because of real reaction".split()


def _committed_phrase() -> tuple[WordCommits, list[Word]]:
    said = [Word(i * 0.5, i * 0.5 + 0.4, t) for i, t in enumerate(PHRASE)]
    commits = WordCommits()
    commits.agree(said[:8], heard_to=10.0)  # "... because of" committed, ends at 3.9 s
    return commits, said


@pytest.mark.parametrize("late_s", [0.0, 0.6, 1.0, 1.5])
def test_committed_words_read_again_late_are_not_said_twice(late_s: float) -> None:
    """Issue 73: a phrase released three times. A buffer cut behind the committed words reads
    them again, and Whisper may time the copy later than they were; a copy running across
    the time line word for word is that tail again (before: "because of" was released again
    from 1 s late on)."""
    commits, said = _committed_phrase()
    again = [Word(w.start + late_s, w.end + late_s, w.text) for w in said[3:]]
    assert [w.text for w in commits._new(again)] == ["real", "reaction"]


def test_words_a_speaker_says_again_after_the_committed_ones_are_kept() -> None:
    commits, said = _committed_phrase()
    repeated = [*said[:8], Word(4.0, 4.3, "here"), Word(4.35, 4.6, "because"),
                Word(4.65, 4.9, "of"), Word(5.0, 5.3, "real")]  # fmt: skip
    assert [w.text for w in commits._new(repeated)] == ["here", "because", "of", "real"]


def test_a_word_said_a_third_time_right_after_the_committed_ones_is_kept() -> None:
    """ "on on on": the copy runs across the line word for word, but the decode also holds the
    committed words where they were said, so the third "on" is new speech."""
    said = [Word(0.0, 0.4, "go"), Word(0.9, 1.2, "on"), Word(1.7, 2.0, "on")]
    commits = WordCommits()
    commits.agree(said, heard_to=5.0)
    decode = [*said, Word(2.5, 2.8, "on")]
    assert [w.text for w in commits._new(decode)] == ["on"]
