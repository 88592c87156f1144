"""``/docs`` (Swagger UI) and ``/redoc`` render in headless Chromium with the network cut: their
scripts, styles and fonts come from heard's server (fastapi-offline's files), not from a CDN."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlparse

import pytest

from heard.server.app import ServerSettings, create_app
from heard.store.database import Database
from tests.server.threaded import serving

pytestmark = pytest.mark.system

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


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
    from playwright.sync_api import Route, sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail(
            f"Chromium is not at {CHROMIUM}: tools/test.sh installs it (apt-get install chromium)"
        )
    ours = urlparse(server).netloc
    elsewhere: list[str] = []

    def cut(route: Route) -> None:  # the network beyond heard's own server is gone
        if urlparse(route.request.url).netloc == ours:
            route.continue_()
        else:  # ReDoc's "by Redocly" logo is the one thing that tries (an image, not needed)
            elsewhere.append(f"{route.request.resource_type} {route.request.url}")
            route.abort("internetdisconnected")

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page()
            page.route("**/*", cut)
            page.goto(server + path)
            page.wait_for_selector(rendered, timeout=30_000)
            assert page.locator(rendered).count() > 10
        finally:
            browser.close()
    assert [e for e in elsewhere if not e.startswith("image ")] == []
