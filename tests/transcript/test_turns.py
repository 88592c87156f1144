from __future__ import annotations

from heard.transcript.turns import TurnId, TurnTracker


def test_turns_are_numbered_per_speaker() -> None:
    turns = TurnTracker()
    assert turns.speech_started("alice") == TurnId("alice", 1)
    assert turns.speech_started("bob") == TurnId("bob", 1)
    assert turns.speech_started("alice") == TurnId("alice", 1)  # still open
    assert turns.turn_completed("alice") == TurnId("alice", 1)
    assert turns.current("alice") is None
    assert turns.current("bob") == TurnId("bob", 1)
    assert turns.speech_started("alice") == TurnId("alice", 2)
    assert turns.turn_completed("carol") is None
    assert turns.turns_started == 3
    assert str(TurnId("alice", 2)) == "alice#2"
