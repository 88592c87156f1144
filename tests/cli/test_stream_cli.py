from __future__ import annotations

import json
from pathlib import Path

import pytest

from heard.transcript.events import EventKind, read_events
from tests.cli.run import heard
from tests.conftest import AUDIO
from tests.reading import assert_reads

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "cadence"


@pytest.mark.asr
def test_stream_writes_replayable_events(tmp_path: Path) -> None:
    out = tmp_path / "jfk.jsonl"
    result = heard("stream", str(AUDIO / "jfk.flac"), "--chunk-ms", "2000",
                   "--strip-punctuation", "--speaker", "jfk", "-o", str(out))  # fmt: skip
    assert result.returncode == 0, result.stderr
    events = read_events(out)
    assert events[-1].kind is EventKind.FINAL
    assert {e.speaker for e in events} == {"jfk"}
    partial_times = [e.t_ms for e in events if e.kind is EventKind.PARTIAL]
    assert partial_times[:3] == [2000, 4000, 6000]
    text = " ".join(e.text for e in events if e.kind is EventKind.FINAL)
    assert_reads(text)
    assert not any(ch in text for ch in ".,?!")


@pytest.mark.asr
def test_stream_captions_release_every_final_word_once(tmp_path: Path) -> None:
    events, units = tmp_path / "events.jsonl", tmp_path / "units.jsonl"
    jfk = str(AUDIO / "jfk.flac")
    assert heard("stream", jfk, "-o", str(events)).returncode == 0
    result = heard("stream", jfk, "--captions", "balanced", "-o", str(units))
    assert result.returncode == 0, result.stderr
    caption: list[str] = []
    for line in units.read_text().splitlines():
        unit = json.loads(line)
        caption[unit["position"] : unit["position"] + unit["replaces"]] = unit["text"].split()
    finals = [e.text for e in read_events(events) if e.kind is EventKind.FINAL]
    assert " ".join(caption) == " ".join(finals)
    live = heard("stream", jfk, "--captions", "live")
    assert live.returncode == 2
    assert "unknown caption mode 'live'; choose one of: balanced, relaxed" in live.stderr


@pytest.mark.asr
def test_stream_compute_clock_stamps_later_than_audio_time(tmp_path: Path) -> None:
    result = heard("stream", str(AUDIO / "jfk.flac"), "--clock", "compute")
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    partials = [e for e in lines if e["type"] == "partial"]
    assert partials[0]["t_ms"] > 1000  # decoding took time
    assert [e["t_ms"] for e in lines] == sorted(e["t_ms"] for e in lines)


def test_stream_rejects_bad_input(tmp_path: Path) -> None:
    bad = tmp_path / "bad.wav"
    bad.write_text("not audio")
    for path, problem in [(tmp_path / "none.wav", "no such file"), (bad, "cannot read as audio")]:
        result = heard("stream", str(path))
        assert result.returncode == 2
        assert problem in result.stderr
    result = heard("stream", str(AUDIO / "jfk.flac"), "--clock", "wall")
    assert result.returncode == 2
    assert "unknown stream clock 'wall'; choose one of: compute, simulated" in result.stderr


def test_cadence_table_and_json() -> None:
    paths = [str(FIXTURES / f"{name}.jsonl") for name in ("natural", "unpunctuated")]
    table = heard("cadence", *paths)
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].split()[:3] == ["fixture", "mode", "units"]
    assert len(lines) == 1 + 2 * 3
    rows = json.loads(heard("cadence", *paths, "--json").stdout)
    assert {(r["fixture"], r["mode"]) for r in rows} == {
        (f, m) for f in ("natural", "unpunctuated") for m in ("relaxed", "balanced", "live")
    }
    assert all(r["x_relaxed"] == 1.0 for r in rows if r["mode"] == "relaxed")
    natural = next(r for r in rows if (r["fixture"], r["mode"]) == ("natural", "balanced"))
    assert natural["words"] == sum(len(f["text"].split()) for f in natural["finals"]) == 43
    assert {u["reason"] for u in natural["released"]} <= {"boundary", "pause", "finalize"}
    assert natural["escalations"] == 0


def test_cadence_rejects_a_bad_log(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{nope\n")
    result = heard("cadence", str(bad))
    assert result.returncode == 2
    assert f"{bad}:1: malformed JSON" in result.stderr
