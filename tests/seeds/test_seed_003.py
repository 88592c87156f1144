"""Seed 003 (a memory retrieval pass's selection gate, composed tree indexes and the capture of
each LLM call), rule by rule, against heard's own API: ``heard.memory.selection.run_gate``,
``heard.memory.recall.MemoryRecall``, ``heard.memory.workspace.compose_node_index`` and the
``CallRecord`` a capture sink receives (printed by ``heard memory simulate``).

Where heard words a rule its own way: the gate's "no tool use" is a provider that raises
(heard's providers raise ``ProviderError`` when the answer holds no call of the tool) or an
answer calling another tool; call sites are heard's ``memory_gate``, ``memory_filter`` and
``memory_descent``; a ``null`` selection counts as an absent one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from heard.errors import ProviderError
from heard.llm import ToolCall
from heard.memory.recall import DESCENT_CALL_SITE, FILTER_CALL_SITE, MemoryRecall, RecallOptions
from heard.memory.selection import GATE_CALL_SITE, GATE_TOOL_NAME, CallRecord, run_gate
from heard.memory.workspace import (
    ChildRef,
    Page,
    PageIndex,
    TreeIndex,
    TreeNode,
    compose_node_index,
    load_workspace,
)
from heard.testing import ScriptedProvider
from tests.cli.run import heard
from tests.workspace import WORKSPACE, Flat

EM_DASH = "\u2014"
CANDIDATES = ["rhea", "tokyo-office", "launch-plan"]


def gate_prompt(provider: ScriptedProvider) -> str:
    [call] = [c for c in provider.calls if c.tool == GATE_TOOL_NAME]
    return call.prompt


def section(prompt: str, tag: str) -> list[str]:
    """The lines between ``<tag>`` and ``</tag>`` in a gate prompt."""
    inner = prompt.split(f"<{tag}>\n", 1)[1].split(f"</{tag}>", 1)[0]
    return [line for line in inner.splitlines() if line]


# -- the gate's ordering -----------------------------------------------------------------------


def test_gate_keeps_the_model_order_restricted_to_candidates_deduplicated_sticky_after() -> None:
    """Rule: the selection is the model's order, only slugs from the candidate set, each once,
    then the sticky slugs the model left out."""
    provider = ScriptedProvider(
        {
            "decision": "ready",
            "selected_slugs": ["launch-plan", "not-a-candidate", "rhea", "launch-plan"],
        }
    )
    result = run_gate("q", CANDIDATES, sticky=["budget-review"], provider=provider)
    assert (result.decision, result.failed_open) == ("ready", None)
    assert result.selected == ["launch-plan", "rhea", "budget-review"]


def test_a_sticky_slug_the_model_picks_keeps_its_place_and_is_not_repeated() -> None:
    """Rule: de-duplication in first-seen order covers the sticky union too."""
    provider = ScriptedProvider({"decision": "ready", "selected_slugs": ["tokyo-office", "rhea"]})
    result = run_gate("q", CANDIDATES, sticky=["rhea", "rhea"], provider=provider)
    assert result.selected == ["tokyo-office", "rhea"]


def test_a_sticky_slug_outside_the_candidates_is_skipped_where_the_model_put_it() -> None:
    """Rule: the model picks from the candidate set only; a sticky slug that is not a candidate
    is skipped in the model's order and comes back after its picks, with the sticky slugs the
    model left out, in the sticky order."""
    provider = ScriptedProvider({"decision": "ready", "selected_slugs": ["boat-trip", "rhea"]})
    result = run_gate("q", CANDIDATES, sticky=["boat-trip"], provider=provider)
    assert result.selected == ["rhea", "boat-trip"]
    provider = ScriptedProvider(
        {
            "decision": "ready",
            "selected_slugs": ["boat-trip", "launch-plan", "rhea", "boat-trip", "launch-plan"],
        }
    )
    sticky = ["retired-page", "boat-trip", "tokyo-office", "launch-plan"]
    result = run_gate("q", CANDIDATES, sticky=sticky, provider=provider)
    # launch-plan: sticky and a candidate, placed by the model; tokyo-office: sticky, a
    # candidate the model left out; retired-page and boat-trip: sticky, not candidates
    assert result.selected == ["launch-plan", "rhea", "retired-page", "boat-trip", "tokyo-office"]


def test_the_enum_and_the_candidate_lines_hold_the_candidates_only() -> None:
    """Rule: the forced tool's selected_slugs enum is the candidate set, and the prompt's
    candidates are the candidates: a sticky slug outside them is shown in the sticky list
    alone, where the model cannot pick it."""
    provider = ScriptedProvider({"decision": "ready", "selected_slugs": ["rhea"]})
    records: list[CallRecord] = []
    run_gate("q", [*CANDIDATES, "rhea"], sticky=["boat-trip", "rhea"], provider=provider,
             capture=records.append)  # fmt: skip
    [record] = records
    enum = record.request["parameters"]["properties"]["selected_slugs"]["items"]["enum"]
    assert enum == CANDIDATES
    assert section(gate_prompt(provider), "candidates") == CANDIDATES
    assert section(gate_prompt(provider), "sticky_slugs") == ["boat-trip", "rhea"]


# -- sticky pages are never dropped ------------------------------------------------------------


def test_sticky_is_unioned_into_the_prompt_and_the_selection_even_if_not_a_candidate() -> None:
    """Rule: sticky pages are never dropped: the gate unions them into the prompt's sticky list
    and into the final selection, even when the model omits them and they are not candidates."""
    provider = ScriptedProvider({"decision": "ready", "selected_slugs": ["rhea"]})
    result = run_gate("q", CANDIDATES, sticky=["boat-trip", "retired-page"], provider=provider)
    assert section(gate_prompt(provider), "sticky_slugs") == ["boat-trip", "retired-page"]
    assert result.selected == ["rhea", "boat-trip", "retired-page"]


@pytest.mark.parametrize("with_provider", [False, True], ids=["failed-open", "model-omits"])
def test_recall_returns_a_sticky_page_the_workspace_no_longer_has(with_provider: bool) -> None:
    """Rule: sticky is never dropped, end to end: the recall loop hands the gate every sticky
    slug (a page deleted since it was injected included) and returns it whatever ``k``."""
    provider = (
        ScriptedProvider({"decision": "ready", "selected_slugs": ["rhea"]})
        if with_provider
        else None
    )
    memory = MemoryRecall(load_workspace(WORKSPACE), provider=provider)
    result = memory.recall("What does Rhea eat?", sticky=["retired-page", "boat-trip"], k=1)
    assert "retired-page" in result.pages
    assert "boat-trip" in result.pages
    assert result.pages[0] == "rhea"
    assert result.passes[0].sticky == ["retired-page", "boat-trip"]


def test_recall_without_a_workspace_still_returns_the_sticky_pages() -> None:
    """Rule: sticky is never dropped, even by a recall with no page workspace to gate."""
    result = MemoryRecall(None).recall("anything", sticky=["boat-trip", "boat-trip"])
    assert result.pages == ["boat-trip"]


# -- failing open ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        pytest.param(None, "no provider", id="no-provider"),
        pytest.param(RuntimeError("connection reset"), "provider error", id="provider-throws"),
        pytest.param(
            ProviderError(f"scripted: the answer holds no {GATE_TOOL_NAME} call"),
            "provider error",
            id="no-tool-use",
        ),
        pytest.param(
            ToolCall("select_pages_to_inject", {"decision": "ready", "selected_slugs": ["rhea"]}),
            f"no {GATE_TOOL_NAME} call",
            id="wrong-tool",
        ),
        pytest.param({"decision": "maybe"}, "schema mismatch", id="schema-bad-decision"),
        pytest.param({"selected_slugs": ["rhea"]}, "schema mismatch", id="schema-no-decision"),
        pytest.param(
            {"decision": "ready", "selected_slugs": "rhea"}, "schema mismatch", id="schema-not-list"
        ),
    ],
)
def test_the_gate_fails_open_to_every_candidate_then_sticky_ready(answer: Any, why: str) -> None:
    """Rule: no provider, a provider that throws, no (or the wrong) tool call, or arguments that
    do not match the schema: decision ready, every candidate selected, then the sticky ones."""
    provider = None if answer is None else ScriptedProvider(answer)
    result = run_gate("q", CANDIDATES, sticky=["rhea", "boat-trip"], provider=provider)
    assert result.decision == "ready"
    assert result.questions == []
    assert result.selected == [*CANDIDATES, "boat-trip"]
    assert (result.failed_open or "").startswith(why)


# -- a ready answer without a selection --------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [{"decision": "ready"}, {"decision": "ready", "selected_slugs": None}],
    ids=["absent", "null"],
)
def test_ready_without_a_selection_selects_the_sticky_pages_only(answer: dict[str, Any]) -> None:
    """Rule: the selection is the model's (here empty) selection plus the sticky pages; a ready
    answer with no selected_slugs is usable, so it does not fail open to every candidate."""
    provider = ScriptedProvider(answer)
    result = run_gate("q", CANDIDATES, sticky=["boat-trip"], provider=provider)
    assert result.decision == "ready"
    assert result.selected == ["boat-trip"]
    assert result.failed_open is None
    assert run_gate("q", CANDIDATES, provider=ScriptedProvider(answer)).selected == []


# -- "more" and its questions ------------------------------------------------------------------


def test_more_carries_the_generated_questions_without_blank_ones() -> None:
    """Rule: on "more" the follow-up questions are kept, blank ones filtered out; the selection
    follows the same ordering rule (model order, candidates only, sticky after)."""
    provider = ScriptedProvider(
        {
            "decision": "more",
            "questions": ["Who runs the Tokyo office?", "   ", "", "What did the budget say?"],
            "selected_slugs": ["tokyo-office"],
        }
    )
    result = run_gate("q", CANDIDATES, sticky=["boat-trip"], provider=provider)
    assert result.decision == "more"
    assert result.questions == ["Who runs the Tokyo office?", "What did the budget say?"]
    assert result.selected == ["tokyo-office", "boat-trip"]
    assert result.failed_open is None


@pytest.mark.parametrize(
    "questions", [None, [], ["  ", "\n"]], ids=["absent", "empty", "only-blank"]
)
def test_more_without_questions_has_none(questions: list[str] | None) -> None:
    """Rule: "more" with no non-blank question is a "more" decision carrying no questions."""
    answer: dict[str, Any] = {"decision": "more"}
    if questions is not None:
        answer["questions"] = questions
    result = run_gate("q", CANDIDATES, provider=ScriptedProvider(answer))
    assert (result.decision, result.questions, result.failed_open) == ("more", [], None)


def test_more_questions_are_ignored_on_ready() -> None:
    """Rule: questions seed another pass only on "more"; a ready answer carries none."""
    provider = ScriptedProvider(
        {"decision": "ready", "selected_slugs": ["rhea"], "questions": ["ignored?"]}
    )
    result = run_gate("q", CANDIDATES, provider=provider)
    assert (result.decision, result.questions) == ("ready", [])


# -- how candidates are shown to the model -----------------------------------------------------


def test_candidates_render_as_slug_em_dash_summary_or_the_bare_slug() -> None:
    """Rule: a candidate with a summary is shown as `slug — summary` (U+2014); one without
    (missing or empty) as the bare slug. The tool's enum stays slug-only and its
    selected_slugs description tells the model to answer with the slug left of the em-dash."""
    provider = ScriptedProvider({"decision": "ready", "selected_slugs": []})
    records: list[CallRecord] = []
    run_gate(
        "q",
        CANDIDATES,
        summaries={"rhea": "Rhea Sharma, product lead", "launch-plan": ""},
        provider=provider,
        capture=records.append,
    )
    assert section(gate_prompt(provider), "candidates") == [
        f"rhea {EM_DASH} Rhea Sharma, product lead",
        "tokyo-office",
        "launch-plan",
    ]
    [record] = records
    slugs = record.request["parameters"]["properties"]["selected_slugs"]
    assert slugs["items"]["enum"] == CANDIDATES
    assert "left of the em-dash" in slugs["description"]
    assert f"slug {EM_DASH} summary" in slugs["description"]


# -- the composed index of a tree node ---------------------------------------------------------


def tree_and_pages() -> tuple[TreeIndex, PageIndex]:
    nodes = [
        TreeNode(
            "root",
            routing_hints="  people questions go down  ",
            children=(
                ChildRef("node", "people"),
                ChildRef("page", "boat-trip"),
                ChildRef("node", "gone"),
                ChildRef("node", "notes"),
                ChildRef("page", "deleted-page"),
                ChildRef("node", "bare"),
                ChildRef("node", "blank"),
            ),
        ),
        TreeNode("people", summary="People the user works with", body="ignored body line"),
        TreeNode("notes", body="\n   \n  First real line  \nsecond line"),
        TreeNode("bare"),
        TreeNode("blank", summary="   ", body="Body stands in for a blank summary"),
        TreeNode("leaf", children=(ChildRef("page", "deleted-page"),)),
        TreeNode("hinted", routing_hints="ask about trips here"),
    ]
    tree = TreeIndex({n.id: n for n in nodes})
    pages = PageIndex({"boat-trip": Page("boat-trip", "Boat trip on the lake")})
    return tree, pages


def test_composed_index_renders_each_child_in_authored_order_with_routing_hints() -> None:
    """Rules: a node child is `[node:id] summary`, its summary falling back to its body's first
    non-empty line (whitespace is no summary) and to the bare header; a page child is
    `[page:slug] summary`; a ref that does not resolve is skipped; the node's routing hints
    come last under `Routing hints:`; lines are joined with no trailing newline."""
    tree, pages = tree_and_pages()
    assert compose_node_index("root", tree, pages) == "\n".join(
        [
            "[node:people] People the user works with",
            "[page:boat-trip] Boat trip on the lake",
            "[node:notes] First real line",
            "[node:bare]",
            "[node:blank] Body stands in for a blank summary",
            "Routing hints: people questions go down",
        ]
    )


def test_composed_index_of_a_node_with_nothing_to_say_is_empty() -> None:
    """Rules: no resolvable children and no routing hints compose to the empty string (an
    unknown node too); routing hints alone compose to the trailer alone."""
    tree, pages = tree_and_pages()
    assert compose_node_index("leaf", tree, pages) == ""
    assert compose_node_index("bare", tree, pages) == ""
    assert compose_node_index("no-such-node", tree, pages) == ""
    assert compose_node_index("hinted", tree, pages) == "Routing hints: ask about trips here"


def test_composed_index_is_read_from_the_children_as_they_are_now() -> None:
    """Rule: nothing is stored: the index reflects the children's current summaries."""
    tree, pages = tree_and_pages()
    pages.by_slug["boat-trip"] = Page("boat-trip", "Boat trip moved to August")
    assert "[page:boat-trip] Boat trip moved to August" in compose_node_index("root", tree, pages)


# -- capture records ---------------------------------------------------------------------------


def test_every_lane_emits_a_record_with_its_own_call_site_and_the_pass() -> None:
    """Rule: with a sink, each LLM call (dense filter, each descent, the gate) emits one record
    carrying its lane, call site, pass, the request it sent, the response it got and its time;
    the descent's record names the node it judged."""
    provider = ScriptedProvider(
        {"decision": "ready", "selected_slugs": ["rhea"]},
        per_tool={
            "keep_pages": [{"slugs": []}],
            "choose_children": [{"children": []}, {"children": []}, {"children": []}],
        },
    )
    memory = MemoryRecall(
        load_workspace(WORKSPACE),
        provider=provider,
        embedder=Flat(),
        options=RecallOptions(page_scouts=2),
    )
    result = memory.recall("Tell me about Rhea", capture=True)
    sites = {c.lane: c.call_site for c in result.calls}
    assert sites == {
        "filter": FILTER_CALL_SITE,
        "descent": DESCENT_CALL_SITE,
        "gate": GATE_CALL_SITE,
    }
    assert len(set(sites.values())) == 3
    for call in result.calls:
        assert call.pass_number == 1
        assert call.ms >= 0
        assert call.request["tool"] in {"keep_pages", "choose_children", GATE_TOOL_NAME}
        assert call.request["prompt"]
        assert call.response is not None
    assert {c.node for c in result.calls if c.lane == "descent"} == {"root"}
    [gate] = [c for c in result.calls if c.lane == "gate"]
    assert gate.response == {"decision": "ready", "selected_slugs": ["rhea"]}


def test_the_gate_record_is_emitted_with_the_pass_it_is_told() -> None:
    """Rule: the gate emits one record per call, stamped with its pass; a failed call's record
    carries no response (heard also keeps the error)."""
    records: list[CallRecord] = []
    run_gate("q", CANDIDATES, pass_number=2, capture=records.append,
             provider=ScriptedProvider(RuntimeError("boom")))  # fmt: skip
    [record] = records
    assert (record.lane, record.call_site, record.pass_number) == ("gate", GATE_CALL_SITE, 2)
    assert (record.response, record.error) == (None, "boom")
    assert record.request["tool"] == GATE_TOOL_NAME


def test_simulate_prints_each_call_with_its_call_site(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rule: the simulate path shows what each call saw and returned: lane, call site, pass,
    time, request and response."""
    provider = ScriptedProvider(  # descents find nothing scripted: they fail, and fall back
        {"decision": "ready", "selected_slugs": ["rhea"]}, per_tool={"choose_children": []}
    )
    monkeypatch.setattr("heard.llm.providers.provider_from_env", lambda *a, **k: provider)
    ran = heard("memory", "simulate", "what does Rhea eat", "--memory", str(WORKSPACE),
                "--lexical", cwd=tmp_path)  # fmt: skip
    assert f"descent ({DESCENT_CALL_SITE}, node root)" in ran.stdout
    assert ran.returncode == 0, ran.stderr
    assert f"== LLM call: pass 1, gate ({GATE_CALL_SITE})" in ran.stdout
    printed = ran.stdout.split(f"gate ({GATE_CALL_SITE})", 1)[1].split("\n", 1)[1]
    record = json.loads(printed.split("\n== ", 1)[0])
    assert record["call_site"] == GATE_CALL_SITE
    assert (record["lane"], record["pass"]) == ("gate", 1)
    assert record["response"] == {"decision": "ready", "selected_slugs": ["rhea"]}
    assert record["request"]["tool"] == GATE_TOOL_NAME
    assert record["ms"] >= 0
