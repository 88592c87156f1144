from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from heard.errors import ProviderError
from heard.llm import ToolCall
from heard.memory.evidence import Evidence, EvidenceIndex
from heard.memory.recall import MemoryRecall
from heard.memory.selection import GATE_TOOL_NAME, run_gate
from heard.memory.workspace import load_workspace
from heard.testing import Answer, ScriptedProvider

WORKSPACE = Path(__file__).resolve().parents[1] / "data" / "memory"
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
    assert "rhea - product lead" in provider.calls[0].prompt


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
    evidence.add(Evidence("e1", "alice", "Rhea said the launch moves to Friday", "c"))
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
