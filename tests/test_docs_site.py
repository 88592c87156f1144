"""The documentation site, built from docs/ and served over HTTP, works with no network
(issue 54): no font, script or style from another host (mkdocs-material asks
fonts.googleapis.com unless told otherwise), and its search finds page words."""

from __future__ import annotations

import functools
import http.server
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from urllib.parse import urlparse

import pytest

from tests.conftest import REPO
from tests.offline_browser import offline_page

pytestmark = pytest.mark.system


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    out = tmp_path_factory.mktemp("site")
    subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(out)],
        cwd=REPO, check=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )  # fmt: skip
    handler = functools.partial(_Quiet, directory=str(out))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


def test_the_site_loads_nothing_from_another_host_and_search_finds_a_page(site: str) -> None:
    with offline_page(site) as (page, elsewhere):
        page.goto(site + "/")
        page.locator("input.md-search__input").focus()
        page.keyboard.type("diarization")
        first = page.locator(".md-search-result__item a").first
        first.wait_for(timeout=30_000)
        assert (
            urlparse(first.get_attribute("href") or "").path.rstrip("/").endswith("/diarization")
        ), page.locator(".md-search-result__list").inner_text()
        page.goto(site + "/diarization/")  # a page deeper in the site, its own assets
        assert page.locator("h1").first.inner_text().startswith("Diarization")
    assert elsewhere == []
