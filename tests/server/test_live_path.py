"""The one live path every socket's audio goes (issue 56): a recognizer's decode steps through
the token, the commits, the utterances, the stabilizer and the captions, to a codec; and the
client frames the codecs parse with pydantic models."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from heard.errors import InputError
from heard.live.conversation import Conversation
from heard.live.path import LiveOutput, LivePath
from heard.release.tracker import ReleaseUnit
from heard.server.frames import Malformed, SessionUpdate, parse_control, parse_event
from heard.transcript.events import EventKind
from heard.transcript.stabilizer import TranscriptStep
from heard.transcript.utterances import Decoded, Utterances

STEPS = [
    [Decoded(EventKind.PARTIAL, "we ship")],
    [Decoded(EventKind.FINAL, "we ship"), Decoded(EventKind.PARTIAL, "friday")],
    [Decoded(EventKind.FINAL, "friday.", endpoint=True)],
]


class Gate:
    def __init__(self, finals: int = 99) -> None:
        self.revoked = False
        self.finals = finals  # how many finals the token lives for

    async def admit_final(self) -> bool:
        self.finals -= 1
        self.revoked = self.finals < 0
        return not self.revoked


class Written(LiveOutput):
    def __init__(self) -> None:
        self.frames: list[tuple[str, str]] = []

    async def decoded(self, d: Decoded) -> None:
        self.frames.append(("decoded", d.text))

    def stabilized(self, step: TranscriptStep) -> None:
        self.frames.append((f"step {step.kind}", step.hypothesis.stable_prefix))

    def released(self, unit: ReleaseUnit) -> None:
        self.frames.append(("released", unit.text))


def captions(on_release: Callable[[ReleaseUnit], None]) -> Conversation:
    return Conversation(release_mode="relaxed", prefetch=False, on_release=on_release)


async def test_every_stage_reaches_the_codec_in_order() -> None:
    written = Written()
    path = LivePath("ana", written, Gate(), captions)
    for t_ms, found in enumerate(STEPS):
        await path.take(found, 1000 * (t_ms + 1))
    await path.conversation.settle_captions()
    kinds = [k for k, _ in written.frames]
    assert [t for k, t in written.frames if k == "decoded"] == ["we ship", "we ship", "friday",
                                                                 "friday."]  # fmt: skip
    # the commit and the partial after it are one utterance, shown once as a partial
    assert kinds.count("step partial") == 2
    assert written.frames[kinds.index("step final")] == ("step final", "we ship friday.")
    # relaxed captions release at the final, right after the step that released them
    assert kinds[kinds.index("step final") + 1] == "released"


async def test_a_revoked_token_stops_the_path_before_its_final() -> None:
    written = Written()
    path = LivePath("ana", written, Gate(finals=1))
    for t_ms, found in enumerate(STEPS):
        await path.take(found, 1000 * (t_ms + 1))
    assert ("decoded", "friday.") not in written.frames
    assert all(k != "step final" for k, _ in written.frames)


def test_the_utterances_of_a_step_are_its_events_decode_by_decode() -> None:
    whole, split = Utterances("ana"), Utterances("ana")
    for found in STEPS:
        assert whole.events(found, 0) == [e for _, made in split.step(found, 0) for e in made]


def test_client_frames_are_parsed_by_their_models() -> None:
    assert parse_control('{"type": "Configure", "keyterms": ["Lisbon"]}').type == "Configure"
    with pytest.raises(InputError, match="Reconfigure: KeepAlive"):
        parse_control('{"type": "Reconfigure"}')
    with pytest.raises(InputError, match="no type: KeepAlive"):
        parse_control("[1]")
    with pytest.raises(InputError, match="not a JSON control message"):
        parse_control('{"type": "KeepAlive", "type": "Finalize"}')
    asked = '{"turn_detection": null, "format": {"type": "audio/pcmu"}}'
    update = parse_event(
        '{"type": "session.update", "session": {"audio": {"input": ' + asked + "}}}"
    )
    assert isinstance(update, SessionUpdate)
    assert update.session is not None
    assert update.session.format == "audio/pcmu"
    assert update.session.turns() == (True, None)
    assert parse_event('{"type": "input_audio_buffer.append", "audio": 5}') == Malformed(
        "input_audio_buffer.append"
    )
    assert parse_event('{"type": "session.update", "session": {"audio": "pcm"}}') == Malformed(
        "session.update"
    )
