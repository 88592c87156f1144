"""Issue 28: one user's heavy work (encoding evidence) stalls no one, themselves included,
nor the server's shutdown.

The decisions, not timings: encoding holds no lock a reader needs, a user's second store
while one runs is refused at once (429) instead of waiting on a request thread, and so is
more text a minute than the budget allows; a server told to stop ends the encoding at its
next batch.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path

import httpx
import numpy as np
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from heard import limits
from heard.errors import BusyError
from heard.memory.factory import STOP_CHECK_TEXTS, MemoryParts
from heard.memory.users import Memories
from heard.server.app import ServerSettings, create_app
from heard.store.database import Database
from heard.store.models import EvidenceRow
from heard.store.users import add_user
from heard.testing import FakeTranscriber, HashingEmbedder
from heard.utterance import Evidence
from tests.server.threaded import serving


class SlowEmbedder(HashingEmbedder):
    """Encodes evidence only when the test lets it (``go``); queries at once."""

    def __init__(self) -> None:
        super().__init__()
        self.encoding = threading.Event()
        self.go = threading.Event()

    def embed(self, texts: list[str]) -> np.ndarray:  # type: ignore[override]
        if len(texts) >= 3:  # the batch the test holds up
            self.encoding.set()
            assert self.go.wait(30)
        return super().embed(texts)


def said(n: int, prefix: str = "u") -> list[Evidence]:
    return [
        Evidence(id=f"{prefix}{i}", speaker="ana", text=f"the ferry to island {i} leaves at noon")
        for i in range(n)
    ]


@pytest.fixture
def memories(db: Database, tmp_path: Path) -> tuple[Memories, SlowEmbedder]:
    embedder = SlowEmbedder()
    return Memories(db, lambda owner: tmp_path / owner, MemoryParts(embedder=embedder)), embedder


def test_while_a_user_encodes_their_memory_answers_and_a_second_store_is_refused(
    memories: tuple[Memories, SlowEmbedder],
) -> None:
    store, embedder = memories
    store.store("ana", said(2, "first"))
    first = threading.Thread(target=store.store, args=("ana", said(3)))
    first.start()
    try:
        assert embedder.encoding.wait(30)
        memory = store.of("ana")
        # the lock recall takes is free while the batch is encoded
        assert memory.lock.acquire(timeout=5)
        memory.lock.release()
        hits = memory.recall.recall("when does the ferry leave", k=5).evidence
        assert [h.id for h in hits][:2] == ["first0", "first1"]
        with pytest.raises(BusyError, match="storing evidence already"):
            store.store("ana", said(2, "again"))
        store.store("bob", said(1, "bob"))  # another user is not held up by ana's
    finally:
        embedder.go.set()
        first.join(30)
    assert {"u0", "u1", "u2"} <= {
        h.id for h in store.of("ana").recall.recall("ferry", k=10).evidence
    }


@pytest.fixture
def budgeted(
    db: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Callable[[int, int], AbstractContextManager[tuple[TestClient, dict[str, str]]]]:
    """A server whose users may store ``burst`` bytes of evidence, ``per_s`` more a second;
    a client of it, and ana's headers."""

    @contextlib.contextmanager
    def serve(burst: int, per_s: int) -> Iterator[tuple[TestClient, dict[str, str]]]:
        monkeypatch.setattr(limits, "EVIDENCE_BURST", burst)
        monkeypatch.setattr(limits, "EVIDENCE_BYTES_PER_S", per_s)
        _, token = add_user(db, "ana")
        with TestClient(create_app(ServerSettings(db, tmp_path / "uploads"))) as client:
            yield client, {"Authorization": f"Bearer {token}"}

    return serve


def test_more_text_a_minute_than_the_budget_is_a_429_with_when_to_retry(
    budgeted: Callable[[int, int], AbstractContextManager[tuple[TestClient, dict[str, str]]]],
) -> None:
    with budgeted(2000, 10) as (client, headers):
        utterance = {"speaker": "ana", "text": "ferry " * 250}
        first = client.post("/v1/memory/evidence", headers=headers,
                            json={"utterances": [{"id": "a", **utterance}]})  # fmt: skip
        assert first.status_code == 201, first.text
        second = client.post("/v1/memory/evidence", headers=headers,
                             json={"utterances": [{"id": "b", **utterance}]})  # fmt: skip
        assert second.status_code == 429
        assert "MiB of evidence a minute" in second.json()["detail"]
        assert int(second.headers["Retry-After"]) >= 100
        recalled = client.post("/v1/memory/recall", headers=headers, json={"query": "ferry"}).json()
        assert [r["id"] for r in recalled] == ["a"]


def test_a_store_that_fails_spends_none_of_the_budget(
    budgeted: Callable[[int, int], AbstractContextManager[tuple[TestClient, dict[str, str]]]],
) -> None:
    with budgeted(3500, 1) as (client, headers):

        def store(i: str) -> int:
            body = {"utterances": [{"id": i, "speaker": "ana", "text": "ferry " * 250}]}
            return client.post("/v1/memory/evidence", headers=headers, json=body).status_code

        assert store("a") == 201  # 1,500 of the 3,500 bytes
        assert store("a") == 409  # taken: nothing stored, nothing spent
        assert store("a") == 409  # (had the last spent 1,500, this would be a 429)
        assert store("b") == 201


class CountingEmbedder(HashingEmbedder):
    """Each batch of evidence takes a while; counts the batches begun after ``stopping``."""

    def __init__(self, stopping: threading.Event) -> None:
        super().__init__()
        self.stopping = stopping
        self.encoding = threading.Event()
        self.after_stop = 0

    def embed(self, texts: list[str]) -> np.ndarray:  # type: ignore[override]
        if len(texts) > 1:
            self.after_stop += self.stopping.is_set()
            self.encoding.set()
            time.sleep(0.2)
        return super().embed(texts)


def test_a_server_told_to_stop_ends_its_heavy_work_and_keeps_none_of_it(
    db: Database, tmp_path: Path
) -> None:
    """SIGTERM during a long store: the encoding stops at its next batch (instead of holding
    the shutdown to the end), the caller gets a 503 saying why, and nothing was stored."""
    settings = ServerSettings(db, tmp_path / "uploads", workspaces=tmp_path / "memory")
    embedder = CountingEmbedder(settings.stopping)
    settings.memory = MemoryParts(embedder=embedder)
    _, token = add_user(db, "ana")
    replies: list[httpx.Response] = []
    batches = 40  # 8 s of encoding
    with serving(create_app(settings)) as host:

        def post() -> None:
            body = {"utterances": [{"id": u.id, "speaker": u.speaker, "text": u.text}
                                   for u in said(batches * STOP_CHECK_TEXTS)]}  # fmt: skip
            auth = {"Authorization": f"Bearer {token}"}
            url = f"http://{host}/v1/memory/evidence"
            replies.append(httpx.post(url, json=body, headers=auth, timeout=60))

        posting = threading.Thread(target=post)
        posting.start()
        assert embedder.encoding.wait(30)
    # out of the block: the server was told to stop, as a signal tells heard serve
    posting.join(60)
    assert embedder.after_stop <= 1
    assert [r.status_code for r in replies] == [503]
    assert "shutting down" in replies[0].json()["detail"]
    with db.session() as s:
        assert s.scalar(select(func.count()).select_from(EvidenceRow)) == 0


def test_meetings_run_on_their_own_threads_four_per_user_at_most(
    db: Database, tmp_path: Path
) -> None:
    """Issue 28: one user running many meetings takes none of the request threads (before, a
    run was a background task on them: 40 runs and nobody was answered) and may have four
    waiting or running; a fifth is a 429 at once, another user's is taken."""
    release = threading.Event()
    threads: list[str] = []

    def hold(_: str) -> None:
        threads.append(threading.current_thread().name)
        assert release.wait(30)

    audio = str(Path(__file__).parents[1] / "data" / "audio" / "jfk.flac")
    fake = FakeTranscriber({}, before=hold)  # (what it does after the hold is not the point)
    settings = ServerSettings(db, tmp_path / "uploads", transcriber=fake)
    app = create_app(settings)
    tokens = {name: add_user(db, name)[1] for name in ("ana", "ben")}
    with TestClient(app) as client:

        def meeting(name: str) -> str:
            auth = {"Authorization": f"Bearer {tokens[name]}"}
            made = client.post("/v1/meetings", headers=auth,
                               json={"title": "t", "participants": [{"name": "a"}]})  # fmt: skip
            with open(audio, "rb") as f:
                put = client.put(f"/v1/meetings/{made.json()['id']}/tracks/a", content=f.read(),
                                 headers=auth)  # fmt: skip
            assert put.status_code == 200, put.text
            return str(made.json()["id"])

        def run(name: str, mid: str) -> int:
            auth = {"Authorization": f"Bearer {tokens[name]}"}
            return client.post(f"/v1/meetings/{mid}/run", headers=auth).status_code

        anas = [meeting("ana") for _ in range(5)]
        assert [run("ana", m) for m in anas[:4]] == [202] * 4
        assert run("ana", anas[0]) == 202  # the same meeting again: nothing new
        assert run("ana", anas[4]) == 429
        assert run("ben", meeting("ben")) == 202
        assert client.get("/v1/me", headers={"Authorization": f"Bearer {tokens['ben']}"}).is_success
        deadline = time.monotonic() + 30
        while not threads and time.monotonic() < deadline:
            time.sleep(0.05)
        release.set()
    assert threads
    assert all(name.startswith("heard-run") for name in threads)
