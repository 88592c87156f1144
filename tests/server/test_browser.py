"""The captions page in Debian's Chromium, headless, with real speech as the microphone.

Chromium's fake capture device plays a WAV file (JFK's inaugural line, from the shared
data) into getUserMedia; the page streams it as PCM16 to /v1/live on a real uvicorn
server, and the recognized words must appear as captions. A screenshot of the page is
kept in test-artifacts/. tools/test.sh installs chromium (apt) and Playwright (pip).
"""

from __future__ import annotations

import re
import shutil
import wave
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from heard.asr.audio import load_audio
from heard.store.database import Database
from tests.conftest import AUDIO, REPO
from tests.server.threaded import served_for_a_user

pytestmark = [pytest.mark.asr, pytest.mark.system]

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = REPO / "test-artifacts"


@pytest.fixture
def live_server(tmp_path: Path) -> Iterator[tuple[str, str, Database]]:
    with served_for_a_user(tmp_path) as served:
        yield served


def speech_wav(tmp_path: Path) -> Path:
    """JFK, then 3 s of silence (the recognizer's turn ends; the file loops after)."""
    samples = load_audio(AUDIO / "jfk.flac")
    samples = np.concatenate([samples, np.zeros(16_000 * 3, dtype=np.float32)])
    path = tmp_path / "mic.wav"
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16_000)
        w.writeframes((samples * 32767).astype("<i2").tobytes())
    return path


def test_microphone_speech_appears_as_captions(live_server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from playwright.sync_api import expect, sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail(
            f"Chromium is not at {CHROMIUM}: tools/test.sh installs it (apt-get install chromium)"
        )
    url, token, _ = live_server
    wav = speech_wav(tmp_path)
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--use-fake-ui-for-media-stream",
                "--use-fake-device-for-media-stream",
                f"--use-file-for-fake-audio-capture={wav}",
                "--autoplay-policy=no-user-gesture-required",
                "--no-sandbox",
            ],
        )
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 720})
            page.goto(url + "/")
            page.fill("#token", token)
            page.fill("#speaker", "jfk")
            assert page.locator("#mode option").all_inner_texts() == ["Relaxed", "Balanced"]
            page.select_option("#mode", "balanced")
            page.click("#start")
            expect(page.locator("#status")).to_have_text("listening", timeout=20_000)
            captions = page.locator("#captions")
            expect(captions).to_contain_text("country", timeout=90_000, ignore_case=True)
            expect(captions.locator(".who").first).to_have_text("jfk:")
            # release units reached the released caption and the translation column (identity:
            # no translator configured)
            expect(page.locator("#released")).to_contain_text("country", timeout=60_000,
                                                              ignore_case=True)  # fmt: skip
            expect(page.locator("#translations .tr").first).to_be_visible(timeout=30_000)
            # once the turn ends, the words settle
            settled = captions.locator(".settled", has_text=re.compile("country", re.IGNORECASE))
            expect(settled.first).to_be_visible(timeout=60_000)
            page.screenshot(path=str(ARTIFACTS / "captions-page.png"), full_page=True)
        finally:
            browser.close()
