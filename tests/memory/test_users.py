"""Each user's memory in a long-running process (heard.memory.users): kept in step with the
store at the cost of what changed."""

from __future__ import annotations

from pathlib import Path

import pytest

from heard.memory import users
from heard.memory.evidence import Evidence
from heard.memory.factory import MemoryParts
from heard.memory.users import Memories
from heard.store.database import Database
from heard.store.evidence import replace_conversation


def meeting(n: int, speaker: str, conversation: str = "meeting:m1") -> list[Evidence]:
    return [
        Evidence(id=f"{conversation}:{i}:{speaker}", speaker=speaker, conversation=conversation,
                 text=f"the ferry to island {i} leaves at noon" if i else "the budget is approved")
        for i in range(n)
    ]  # fmt: skip


def test_a_renamed_meeting_is_caught_up_without_making_the_memory_again(
    db: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 57: a rename replaced a meeting's evidence, and the next search made the user's
    whole memory again (50,000 utterances, each time, on every parallel search)."""
    memories = Memories(db, lambda owner: tmp_path / owner, MemoryParts())
    builds: list[str] = []
    build = memories._build
    monkeypatch.setattr(memories, "_build", lambda owner: builds.append(owner) or build(owner))
    replace_conversation(db, meeting(40, "Speaker 1"), conversation="meeting:m1", owner="ana")
    replace_conversation(db, meeting(400, "bo", "meeting:m2"), conversation="meeting:m2",
                         owner="ana")  # fmt: skip
    before = memories.current("ana")
    assert {h.speaker for h in before.index.recall("budget approved", k=2)} == {"Speaker 1", "bo"}
    for _ in range(3):  # renamed, and back, and again: each replaces the meeting's evidence
        renamed = meeting(40, "Ana")
        replace_conversation(db, renamed, conversation="meeting:m1", owner="ana")
        memory = memories.current("ana")
        hits = memory.index.recall("budget approved", k=2)
        assert {h.id for h in hits} == {"meeting:m1:0:Ana", "meeting:m2:0:bo"}
        replace_conversation(db, meeting(40, "Speaker 1"), conversation="meeting:m1", owner="ana")
        back = memories.current("ana").index.recall("budget approved", k=2)
        assert {h.id for h in back} == {"meeting:m1:0:Speaker 1", "meeting:m2:0:bo"}
    assert builds == ["ana"]  # made once, at first use


def test_a_memory_mostly_forgotten_is_made_again_once(
    db: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    memories = Memories(db, lambda owner: tmp_path / owner, MemoryParts())
    builds: list[str] = []
    build = memories._build
    monkeypatch.setattr(memories, "_build", lambda owner: builds.append(owner) or build(owner))
    replace_conversation(db, meeting(10, "Speaker 1"), conversation="meeting:m1", owner="ana")
    memories.current("ana")
    replace_conversation(db, meeting(10, "Ana"), conversation="meeting:m1", owner="ana")
    memory = memories.current("ana")
    assert users.REMAKE_SHARE <= 0.5
    assert memory.index.forgotten == 0.0  # half of it forgotten: made again, from the store
    assert len(memory.index) == 10
    assert builds == ["ana", "ana"]


def test_catching_up_reads_only_what_changed(
    db: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 57: catching up with a rename loaded every stored utterance to find the 40 new
    ones (a second of the GIL at 50,000, which stalled every other user's requests)."""
    from heard.memory import utterances

    memories = Memories(db, lambda owner: tmp_path / owner, MemoryParts())
    replace_conversation(db, meeting(40, "Speaker 1"), conversation="meeting:m1", owner="ana")
    replace_conversation(db, meeting(400, "bo", "meeting:m2"), conversation="meeting:m2",
                         owner="ana")  # fmt: skip
    memories.current("ana")
    loaded: list[int] = []
    load = utterances.load_utterances

    def counted(*args: object, **kwargs: object) -> object:
        found = load(*args, **kwargs)  # type: ignore[arg-type]
        loaded.append(len(found))
        return found

    monkeypatch.setattr(utterances, "load_utterances", counted)
    replace_conversation(db, meeting(40, "Ana"), conversation="meeting:m1", owner="ana")
    hits = memories.current("ana").index.recall("budget approved", k=2)
    assert {h.id for h in hits} == {"meeting:m1:0:Ana", "meeting:m2:0:bo"}
    assert loaded == [40]
