from __future__ import annotations

import json
from pathlib import Path

from tests.cli.run import heard
from tests.workspace import WORKSPACE

EVENTS = [
    {"t_ms": 0, "type": "partial", "text": "what does", "speaker": "ana"},
    {"t_ms": 300, "type": "partial", "text": "what does Rhea", "speaker": "ana"},
    {"t_ms": 600, "type": "partial", "text": "what does Rhea eat for", "speaker": "ana"},
    {"t_ms": 900, "type": "partial", "text": "what does Rhea eat for lunch", "speaker": "ana"},
    {"t_ms": 1200, "type": "partial", "text": "what does Rhea eat for lunch", "speaker": "ana"},
    {"t_ms": 1500, "type": "final", "text": "What does Rhea eat for lunch?", "speaker": "ana"},
    {"t_ms": 3000, "type": "final", "text": "And who eats there with her?", "speaker": "ben"},
]


def write_events(tmp_path: Path) -> Path:
    path = tmp_path / "talk.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in EVENTS))
    return path


def test_live_replays_and_reports_each_turn(tmp_path: Path) -> None:
    events = write_events(tmp_path)
    result = heard("live", str(events), "--memory", str(WORKSPACE), "--speed", "0",
                   cwd=tmp_path)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "ana#1: What does Rhea eat for lunch?" in result.stdout
    assert "(prefetched;" in result.stdout
    assert "page     rhea" in result.stdout
    # the second turn recalls the first turn's final, which became evidence
    assert "evidence talk:ana#1" in result.stdout
    assert "2 turns" in result.stdout


def test_live_json_without_prefetch_and_remembering(tmp_path: Path) -> None:
    events = write_events(tmp_path)
    result = heard("live", str(events), "--memory", str(WORKSPACE), "--speed", "0", "--json",
                   "--no-prefetch", "--remember", cwd=tmp_path)  # fmt: skip
    assert result.returncode == 0, result.stderr
    turns = [json.loads(line) for line in result.stdout.splitlines()]
    assert [t["turn"] for t in turns] == ["ana#1", "ben#1"]
    assert {t["source"] for t in turns} == {"final"}
    assert all(t["retrievals"] == 1 and t["wasted"] == 0 for t in turns)
    # --remember stored both finals; partials were never stored
    recalled = heard("memory", "recall", "lunch", "--json", cwd=tmp_path)
    assert recalled.returncode == 0, recalled.stderr
    items = json.loads(recalled.stdout)
    assert [i["id"] for i in items] == ["talk:ana#1", "talk:ben#1"]  # ben's by neighbourhood
    assert items[0]["text"] == "What does Rhea eat for lunch?"


def test_live_bad_input(tmp_path: Path) -> None:
    missing = heard("live", str(tmp_path / "nope.jsonl"), "--speed", "0", cwd=tmp_path)
    assert missing.returncode == 2
    assert "nope.jsonl" in missing.stderr
    (tmp_path / "bad.jsonl").write_text('{"t_ms": 0, "type": "partial", "text": "hi"}\n{oops\n')
    bad = heard("live", str(tmp_path / "bad.jsonl"), "--speed", "0", cwd=tmp_path)
    assert bad.returncode == 2
    assert "bad.jsonl:2" in bad.stderr
