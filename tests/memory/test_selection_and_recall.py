from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from heard.errors import ProviderError
from heard.llm import ToolCall
from heard.memory.evidence import Evidence, EvidenceIndex
from heard.memory.recall import MemoryRecall, RecallOptions
from heard.memory.selection import GATE_TOOL_NAME, CallRecord, run_gate
from heard.memory.workspace import load_workspace
from heard.testing import Answer, ScriptedProvider
from tests.workspace import WORKSPACE, Flat

CANDIDATES = ["rhea", "tokyo-office", "launch-plan"]


def scripted(*answers: Answer, descents: Sequence[list[str]] = ()) -> ScriptedProvider:
    """Gate calls take the answers in turn; tree descents take ``descents`` and, when none is
    left, fail (the walk falls back to words)."""
    return ScriptedProvider(
        *answers, per_tool={"choose_children": [{"children": d} for d in descents]}
    )


def test_ready_keeps_the_model_order_restricted_to_candidates_with_sticky_unioned() -> None:
    provider = scripted(
        {"decision": "ready", "selected_slugs": ["launch-plan", "invented", "rhea", "rhea"]}
    )
    result = run_gate("q", CANDIDATES, sticky=["budget-review"], provider=provider,
                      summaries={"rhea": "product lead"})  # fmt: skip
    assert result.decision == "ready"
    assert result.selected == ["launch-plan", "rhea", "budget-review"]
    assert result.failed_open is None
    # seed 003: a candidate with a summary is shown as `slug — summary` (an em-dash)
    assert "rhea \u2014 product lead" in provider.calls[0].prompt


def test_more_carries_the_generated_questions() -> None:
    provider = scripted({"decision": "more", "questions": ["Who leads the Tokyo office?", "  "]})
    result = run_gate("q", CANDIDATES, provider=provider)
    assert (result.decision, result.questions) == ("more", ["Who leads the Tokyo office?"])


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        (None, "no provider"),
        (ProviderError("timeout"), "provider error"),
        (RuntimeError("sdk bug"), "provider error"),
        (ToolCall("something_else", {"decision": "ready"}), f"no {GATE_TOOL_NAME} call"),
        ({"decision": "maybe"}, "schema mismatch"),
        ({"selected_slugs": ["rhea"]}, "schema mismatch"),
    ],
)
def test_the_gate_fails_open(answer: Any, why: str) -> None:
    provider = None if answer is None else scripted(answer)
    result = run_gate("q", CANDIDATES, sticky=["budget-review"], provider=provider)
    assert result.decision == "ready"
    assert result.selected == [*CANDIDATES, "budget-review"]
    assert result.failed_open is not None
    assert result.failed_open.startswith(why)


def test_recall_without_a_provider_unions_scouts_tree_edges_and_sticky() -> None:
    memory = MemoryRecall(load_workspace(WORKSPACE))
    result = memory.recall("What does Rhea eat?", sticky=["boat-trip"])
    assert result.pages[0] == "rhea"
    assert "tokyo-office" in result.pages  # an edge of rhea
    assert "budget-review" in result.pages  # two hops away
    assert "boat-trip" in result.pages  # sticky: never dropped
    assert "ghost-page" not in result.pages  # a dangling edge is skipped
    assert len(result.passes) == 1
    assert result.passes[0].gate is not None
    assert result.passes[0].gate.failed_open == "no provider"


def test_recall_gives_the_gate_its_sticky_pages_as_candidates_for_the_model_to_place() -> None:
    """The gate lets the model pick candidates only (seed 003), so the loop makes the sticky
    pages candidates (after the others): the model may put one first."""
    provider = scripted({"decision": "ready", "selected_slugs": ["retired-page", "rhea"]})
    memory = MemoryRecall(load_workspace(WORKSPACE), provider=provider)
    result = memory.recall("What does Rhea eat?", sticky=["retired-page"], k=1, capture=True)
    [gate] = [c for c in result.calls if c.lane == "gate"]
    enum = gate.request["parameters"]["properties"]["selected_slugs"]["items"]["enum"]
    assert enum[-1] == "retired-page"
    assert enum.count("retired-page") == 1
    assert result.pages == ["retired-page", "rhea"]


def test_the_tree_walk_finds_pages_the_words_lead_to() -> None:
    memory = MemoryRecall(load_workspace(WORKSPACE))
    assert "launch-plan" in memory._walk("what are the plans for the projects")
    assert memory._walk("zebra") == []


def test_more_runs_another_pass_on_the_gate_questions_and_stops_at_three() -> None:
    provider = scripted(
        {"decision": "more", "questions": ["budget numbers"]},
        {"decision": "more", "questions": ["lake trip"]},
        {"decision": "more", "questions": ["never asked"]},
    )
    memory = MemoryRecall(load_workspace(WORKSPACE), provider=provider)
    result = memory.recall("Tell me about Rhea", capture=True)
    assert [p.queries for p in result.passes] == [
        ["Tell me about Rhea"],
        ["budget numbers"],
        ["lake trip"],
    ]
    assert "boat-trip" in result.passes[2].scouted
    gate_calls = [c for c in result.calls if c.lane == "gate"]
    assert [c.pass_number for c in gate_calls] == [1, 2, 3]
    assert all(c.error for c in result.calls if c.lane == "descent")  # none scripted: fallback
    assert provider.answers == []


def test_evidence_comes_with_pages() -> None:
    evidence = EvidenceIndex()
    evidence.add(
        Evidence(
            id="e1", speaker="alice", text="Rhea said the launch moves to Friday", conversation="c"
        )
    )
    memory = MemoryRecall(load_workspace(WORKSPACE), evidence)
    result = memory.recall("When is the launch?")
    items = result.items(memory.workspace)
    assert {i.kind for i in items} == {"page", "evidence"}
    assert items[-1].id == "e1"


def test_the_llm_descender_chooses_the_branches() -> None:
    # root -> work (chosen by the model although no query word matches it) -> budget-review
    provider = scripted(
        {"decision": "ready", "selected_slugs": ["budget-review"]},
        descents=[["node:work", "page:invented"], ["page:budget-review"]],
    )
    memory = MemoryRecall(load_workspace(WORKSPACE), provider=provider)
    result = memory.recall("zebra", capture=True)
    assert result.passes[0].tree == ["budget-review"]
    assert result.pages == ["budget-review"]
    lanes = [(c.lane, c.pass_number) for c in result.calls]
    assert lanes == [("descent", 1), ("descent", 1), ("gate", 1)]


def test_a_failed_descent_falls_back_to_words() -> None:
    provider = scripted({"decision": "ready", "selected_slugs": []})  # no descents scripted
    memory = MemoryRecall(load_workspace(WORKSPACE), provider=provider)
    result = memory.recall("what are the plans for the projects", capture=True)
    assert "launch-plan" in result.passes[0].tree
    assert all(c.error for c in result.calls if c.lane == "descent")


def many_pages(tmp_path: Path, n: int) -> Path:
    pages = tmp_path / "ws" / "pages"
    pages.mkdir(parents=True)
    for i in range(n):
        (pages / f"note-{i:02d}.md").write_text(
            f"---\nsummary: launch note {i}\n---\nlaunch plan {i}\n"
        )
    return tmp_path / "ws"


@pytest.mark.parametrize("k", [1, 2, 10])
def test_sticky_pages_are_returned_whatever_k_and_the_gate_order(tmp_path: Path, k: int) -> None:
    workspace = load_workspace(many_pages(tmp_path, 29))
    sticky = ["note-28", "note-27"]
    # the gate keeps every candidate it was given, sticky last (as a failed-open gate does)
    everything = sorted(workspace.pages.by_slug)
    provider = scripted({"decision": "ready", "selected_slugs": everything})
    memory = MemoryRecall(workspace, provider=provider, options=RecallOptions(page_scouts=29))
    result = memory.recall("the launch plan", sticky=sticky, k=k)
    assert set(sticky) <= set(result.pages)
    assert len(result.pages) == k + len(sticky)


def test_every_gate_pass_sees_the_turn_the_conversation_and_its_questions() -> None:
    provider = scripted(
        {"decision": "more", "questions": ["budget numbers"]},
        {"decision": "ready", "selected_slugs": ["budget-review"]},
    )
    memory = MemoryRecall(load_workspace(WORKSPACE), provider=provider)
    memory.recall("Tell me about Rhea", context=["ana: we met Rhea in Tokyo"], capture=True)
    gates = [c.prompt for c in provider.calls if c.tool == GATE_TOOL_NAME]
    assert len(gates) == 2
    for prompt in gates:
        assert "<turn>\nTell me about Rhea\n</turn>" in prompt
        assert "ana: we met Rhea in Tokyo" in prompt
    assert "budget numbers" in gates[1]
    assert "budget numbers" not in gates[0]


def test_the_gate_timeout_is_enforced_and_the_gate_fails_open() -> None:
    provider = ScriptedProvider(  # it ignores the timeout it is given
        {"decision": "ready", "selected_slugs": ["rhea"]}, delay_s=2.0, hangs=True
    )
    started = time.monotonic()
    result = run_gate("q", CANDIDATES, provider=provider, timeout_s=0.2)
    assert time.monotonic() - started < 1.5
    assert result.decision == "ready"
    assert result.selected == CANDIDATES
    assert "no answer within 0.2 s" in (result.failed_open or "")


def test_ready_with_a_null_selection_selects_the_sticky_pages_only() -> None:
    """Seed 003: a ready answer's selection is the model's (here none) plus the sticky pages;
    it is a usable answer, so the gate does not fail open to every candidate."""
    provider = scripted({"decision": "ready", "selected_slugs": None})
    result = run_gate("q", CANDIDATES, sticky=["budget-review"], provider=provider)
    assert result.selected == ["budget-review"]
    assert result.failed_open is None


def test_capture_records_every_lane_with_its_pass_node_raw_response_and_error() -> None:
    raw = object()  # the SDK's own response object
    provider = ScriptedProvider(
        ToolCall(GATE_TOOL_NAME, {"decision": "ready", "selected_slugs": ["rhea"]}, raw),
        per_tool={"choose_children": [{"children": ["node:people"]}], "keep_pages": []},
    )
    memory = MemoryRecall(
        load_workspace(WORKSPACE), provider=provider, embedder=Flat(),
        options=RecallOptions(page_scouts=2),  # the dense scout brings what BM25 leaves
    )  # fmt: skip
    result = memory.recall("Tell me about Rhea", capture=True)
    lanes = {c.lane for c in result.calls}
    assert lanes == {"filter", "descent", "gate"}
    assert all(c.pass_number == 1 for c in result.calls)
    descents = [c for c in result.calls if c.lane == "descent"]
    assert descents[0].node == "root"
    assert descents[0].response == {"children": ["node:people"]}
    assert all(c.error for c in descents[1:])  # the script ran out: they failed, and say why
    [gate] = [c for c in result.calls if c.lane == "gate"]
    assert gate.raw is raw
    assert gate.ms >= 0
    [filtered] = [c for c in result.calls if c.lane == "filter"]
    assert filtered.error == "keep_pages: nothing scripted"
    # run_gate called on its own records the pass it is told
    records: list[CallRecord] = []
    run_gate("q", CANDIDATES, provider=scripted({"decision": "ready", "selected_slugs": []}),
             pass_number=2, capture=records.append)  # fmt: skip
    assert [r.pass_number for r in records] == [2]
