"""``/docs`` (Swagger UI) and ``/redoc`` render in headless Chromium with the network cut: their
scripts, styles and fonts come from heard's server (fastapi-offline's files), not from a CDN."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from heard.server.app import ServerSettings, create_app
from heard.store.database import Database
from tests.offline_browser import offline_page
from tests.server.threaded import serving

pytestmark = pytest.mark.system


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    db = Database(f"sqlite:///{tmp_path / 'heard.db'}")
    try:
        with serving(create_app(ServerSettings(db, tmp_path / "uploads"))) as host:
            yield f"http://{host}"
    finally:
        db.dispose()


@pytest.mark.parametrize(("path", "rendered"), [
    ("/docs", ".swagger-ui .opblock-summary-path"),  # an operation of the spec, drawn
    ("/redoc", "[data-section-id^='operation/']"),
])  # fmt: skip
def test_the_api_docs_render_with_no_network(server: str, path: str, rendered: str) -> None:
    # ReDoc's "by Redocly" logo is the one thing that tries another host (an image, not needed)
    with offline_page(server) as (page, elsewhere):
        page.goto(server + path)
        page.wait_for_selector(rendered, timeout=30_000)
        assert page.locator(rendered).count() > 10
    assert [e for e in elsewhere if not e.startswith("image ")] == []
