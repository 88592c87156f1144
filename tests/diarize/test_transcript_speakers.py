"""The transcript a user reads takes its speakers from the diarizer, word by word, on a real
call where Whisper's segments run across a change of speaker; its JSON carries the words."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from heard.cli import app
from heard.diarize import speaker_words
from heard.diarize.turns import TurnIndex

CALL = Path(__file__).resolve().parents[1] / "data" / "diarization" / "test55"
CALL /= "pyannote_sample_call.flac"  # two women on a telephone line (MIT: its folder's README)


@pytest.mark.asr
def test_the_transcripts_speakers_are_the_diarizers_word_by_word(tmp_path: Path) -> None:
    from heard.asr.whisper import FasterWhisperTranscriber
    from heard.diarize.onnx import OnnxDiarizer

    found = OnnxDiarizer().diarize(CALL, speakers=2)
    heard = FasterWhisperTranscriber().transcribe(CALL).segments
    index = TurnIndex(found.turns)
    spanning = [s for s in heard if len({index.speaker_of(w) for w in s.words} - {None}) > 1]
    assert spanning, "no Whisper segment runs across a change of speaker: the test tests nothing"

    db = f"sqlite:///{tmp_path / 'm.db'}"
    result = CliRunner().invoke(app, ["transcribe", str(CALL), "--speakers", "2", "--db", db,
                                      "-f", "json"])  # fmt: skip
    assert result.exit_code == 0, result.output
    phrases = json.loads(result.stdout)
    words = [w for p in phrases for w in p["words"]]
    assert sorted(w["word"] for w in words) == sorted(
        w.text.strip() for s in heard for w in s.words if w.text.strip()
    )  # every word once
    for p in phrases:
        assert all(w["speaker"] == p["participant"] for w in p["words"])
        assert all(p["start"] <= w["start"] <= w["end"] <= p["end"] for w in p["words"])
    # each exported word is under the participant of the diarizer's speaker of that word, as
    # the diarizer's turns give it from Whisper's own word times
    heard_by = {}
    for (placed, _), said in zip(speaker_words(heard, found),
                                 [w for s in heard for w in s.words], strict=True):  # fmt: skip
        heard_by[(round(placed.start, 3), placed.text.strip())] = index.speaker_of(said)
    pairs = [(w["speaker"], heard_by[(w["start"], w["word"])]) for w in words]
    named = {k: name for name, k in pairs if k is not None}
    assert len(named) == 2
    assert len(set(named.values())) == 2
    wrong = [(name, k) for name, k in pairs if k is not None and named[k] != name]
    assert not wrong, f"{len(wrong)} of {len(pairs)} words under another speaker"
