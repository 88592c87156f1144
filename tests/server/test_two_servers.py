"""Two `heard serve` processes on one PostgreSQL database stay in step: what one stores, the
other recalls within a second, and one id posted to both is stored once."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

from heard.store.database import Database
from heard.store.users import add_user
from tests.server.threaded import free_port


def start(url: str, uploads: Path, token: str) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {**os.environ, "HEARD_DATABASE_URL": url}
    server = subprocess.Popen(
        [sys.executable, "-m", "heard", "serve", "--port", str(port), "--uploads", str(uploads)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            httpx.get(f"{base}/v1/me", headers={"Authorization": f"Bearer {token}"})
            return server, base
        except httpx.ConnectError:
            assert server.poll() is None, "heard serve exited"
            assert time.monotonic() < deadline, "heard serve did not start"
            time.sleep(0.2)


def within_a_second(check: object) -> None:
    deadline = time.monotonic() + 1.0
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, "not seen by the other server within 1 s"
        time.sleep(0.05)


def test_two_servers_on_one_database_recall_what_either_stored(
    postgres_schema_url: str, tmp_path: Path
) -> None:
    schema_url = postgres_schema_url
    db = Database(schema_url)
    db.migrate()
    _, token = add_user(db, "ana")
    db.dispose()
    headers = {"Authorization": f"Bearer {token}"}
    uploads = tmp_path / "uploads"  # both on one volume: pages are files beside the uploads
    a, url_a = start(schema_url, uploads, token)
    b, url_b = start(schema_url, uploads, token)
    try:
        with httpx.Client(headers=headers) as client:

            def recalled(base: str, query: str) -> list[str]:
                hits = client.post(f"{base}/v1/memory/recall", json={"query": query})
                assert hits.status_code == 200, hits.text
                return [h["id"] for h in hits.json()]

            assert recalled(url_b, "Lisbon office") == []  # b has loaded the (empty) memory
            one = {"id": "e1", "speaker": "Maya", "text": "The Lisbon office opens in April."}
            assert client.post(f"{url_a}/v1/memory/evidence",
                               json={"utterances": [one]}).status_code == 201  # fmt: skip
            within_a_second(lambda: recalled(url_b, "Lisbon office") == ["e1"])
            page = {"summary": "Rhea Sharma, product lead", "aliases": [], "edges": [], "body": ""}
            assert client.put(f"{url_a}/v1/memory/pages/rhea", json=page).status_code == 200
            within_a_second(lambda: "rhea" in recalled(url_b, "Rhea product lead"))
            # the same new id posted to both: stored once, the other told it is taken
            two = {"id": "e2", "speaker": "Omar", "text": "Lunch is at noon."}
            codes = sorted(
                client.post(f"{base}/v1/memory/evidence", json={"utterances": [two]}).status_code
                for base in (url_a, url_b)
            )
            assert codes == [201, 409]
    finally:
        for server in (a, b):
            server.terminate()
            server.wait(timeout=20)
