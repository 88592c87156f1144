"""An English-only model on speech in another language says so: in the track's warnings, on
the CLI and in ``heard status``; English speech gets no such warning."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from heard.asr.whisper import ENGLISH_CONFIDENCE, UNSURE_WORDS, english_only_warnings
from heard.cli import app
from heard.speech import Segment, Word

DATA = Path(__file__).resolve().parents[1] / "data"
GERMAN = DATA / "diarization" / "heldout" / "pyaudioanalysis" / "paa_german_prompts_6spk.flac"
"""Six people reading German smart-home prompts (real speech; its folder's README)."""


def said(*sure: float) -> list[Segment]:
    words = tuple(Word(i * 0.5, i * 0.5 + 0.4, f"w{i}", p) for i, p in enumerate(sure))
    return [Segment(0.0, len(sure) * 0.5, " ".join(w.text for w in words), words)]


def test_unsure_words_warn_and_name_the_model_to_use() -> None:
    (warning,) = english_only_warnings("tiny.en", said(*[0.3] * UNSURE_WORDS))
    assert "may not be English" in warning
    assert "'tiny.en'" in warning
    assert "--model base" in warning
    assert "heard[multilingual]" in warning


def test_sure_words_or_too_few_to_tell_do_not_warn() -> None:
    assert english_only_warnings("tiny.en", said(*[ENGLISH_CONFIDENCE] * 40)) == ()
    assert english_only_warnings("tiny.en", said(*[0.1] * (UNSURE_WORDS - 1))) == ()


@pytest.mark.asr
def test_german_through_tiny_en_warns_and_english_does_not(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'm.db'}"
    runner = CliRunner()
    german = runner.invoke(app, ["transcribe", f"anna={GERMAN}", "--db", db])
    assert german.exit_code == 0, german.output
    assert "warning: anna: this speech may not be English" in german.stderr
    assert "--model base" in german.stderr
    status = runner.invoke(app, ["status", german.stderr.split()[1], "--db", db])
    assert "warning: this speech may not be English" in status.stdout
    exported = runner.invoke(app, ["export", german.stderr.split()[1], "--db", db, "-f", "md"])
    assert "> Warning, anna: this speech may not be English" in exported.stdout
    english = runner.invoke(app, ["transcribe", f"jfk={DATA / 'audio' / 'jfk.flac'}", "--db", db])
    assert english.exit_code == 0, english.output
    assert "warning" not in english.stderr
