"""A headless Chromium page cut off from every host but the one under test: the pages heard
serves (/docs, /redoc) and the documentation site must render with no network."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@contextmanager
def offline_page(site: str) -> Iterator[tuple[Any, list[str]]]:
    """A page that reaches only ``site``'s host, and the requests it tried elsewhere (each as
    "resource-type url"), refused as if the network were gone."""
    from playwright.sync_api import Route, sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail(
            f"Chromium is not at {CHROMIUM}: tools/test.sh installs it (apt-get install chromium)"
        )
    ours = urlparse(site).netloc
    elsewhere: list[str] = []

    def cut(route: Route) -> None:
        if urlparse(route.request.url).netloc == ours:
            route.continue_()
        else:
            elsewhere.append(f"{route.request.resource_type} {route.request.url}")
            route.abort("internetdisconnected")

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page()
            page.route("**/*", cut)
            yield page, elsewhere
        finally:
            browser.close()
