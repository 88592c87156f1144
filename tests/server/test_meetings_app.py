"""The meetings page in Debian's Chromium, headless, on a real uvicorn server with the real
recognizer (tiny.en) and diarizer: a user uploads a real two-person meeting (AMI ES2003a,
CC BY 4.0, tests/data/diarization/README.md), watches it transcribe, reads it beside its
audio, renames a speaker, exports, searches, deletes; a bad file gets a clear message; in
local mode (``heard serve --local``) a meeting made by ``heard transcribe`` shows with no
token. Each view's screenshot is kept in test-artifacts/ (docs/meetings-*.png are copies,
shown by docs/meeting-app.md). tools/test.sh installs chromium (apt) and Playwright (pip)."""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from heard.asr.whisper import FasterWhisperTranscriber
from heard.server.app import ServerSettings, create_app
from heard.store.database import Database
from tests.conftest import AUDIO, DATA, REPO
from tests.server.threaded import served_for_a_user, serving

pytestmark = [pytest.mark.asr, pytest.mark.system]

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = REPO / "test-artifacts"
MEETING = DATA / "diarization" / "ami" / "ami-dev00.flac"
"""30 s of a real meeting's start: two people introduce themselves (ES2003a)."""


@pytest.fixture
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail(f"Chromium is not at {CHROMIUM}: tools/test.sh installs it (apt)")
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        launched = p.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--autoplay-policy=no-user-gesture-required"],
        )
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, str, Database]]:
    with served_for_a_user(tmp_path, transcriber=FasterWhisperTranscriber()) as served:
        yield served


def _offline(page: Any, url: str) -> list[str]:
    """Fail any request the page makes to another origin (no CDN): the ones tried."""
    foreign: list[str] = []

    def route(r: Any) -> None:
        if r.request.url.startswith(url):
            r.continue_()
        else:
            foreign.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    return foreign


def test_upload_watch_read_play_rename_export_search_delete(  # type: ignore[no-untyped-def]
    browser, server
) -> None:
    from playwright.sync_api import expect

    url, token, _ = server
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    foreign = _offline(page, url)
    page.goto(url + "/meetings")
    page.fill("#token", token)
    page.click("#load")
    expect(page.locator("#status")).to_have_text("no meetings yet")

    page.fill("#title", "Kick-off")
    page.set_input_files("#recording", str(MEETING))
    # any number the server takes can be given, up to heard.diarize.MAX_SPEAKERS (issue 55)
    offered = page.locator("#speakers option").all_inner_texts()
    assert offered == ["find out", *map(str, range(1, 17))]
    page.select_option("#speakers", "auto")
    page.click("#send")
    # the progress bars fill from the server's events; the page opens the meeting when done
    expect(page.locator("#job-status")).to_have_text(re.compile(r"transcribing|complete"))
    page.screenshot(path=str(ARTIFACTS / "meetings-upload.png"))
    expect(page.locator("#job-status")).to_have_text(re.compile(r"^complete: \d+ phrases$"),
                                                     timeout=180_000)  # fmt: skip
    assert page.locator("#run-progress").evaluate("e => e.value") == 1
    assert page.locator("#upload-progress").evaluate("e => e.value") == 1
    expect(page.locator("#meeting")).to_be_visible()

    # two speakers, each with phrases of their own, on one timeline
    speakers = page.locator("#speaker-list .speaker .who")
    expect(speakers).to_have_text(["Speaker 1", "Speaker 2"])
    phrases = page.locator("#timeline .phrase")
    whos = phrases.locator(".who").all_inner_texts()
    assert set(whos) == {"Speaker 1", "Speaker 2"}, whos

    # a click on a phrase puts the audio there, and that phrase is the one highlighted
    player = page.locator("#player")
    later = phrases.nth(phrases.count() - 1)
    start = _seconds(later.locator(".time").inner_text())
    later.click()
    expect(later).to_have_class(re.compile(r"\bplaying\b"))
    page.wait_for_function(
        f"() => Math.abs(document.getElementById('player').currentTime - {start}) < 1.5"
    )
    # as the audio plays on, the highlight follows it to the phrase being heard
    before = phrases.nth(phrases.count() - 2)
    before.click()
    expect(before).to_have_class(re.compile(r"\bplaying\b"))
    expect(later).to_have_class(re.compile(r"\bplaying\b"), timeout=30_000)
    expect(before).not_to_have_class(re.compile(r"\bplaying\b"))
    player.evaluate("e => e.pause()")
    assert player.evaluate("e => e.src").startswith(url + "/v1/meetings/")
    assert "sig=" in player.evaluate("e => e.src")  # a signed link: no token in the page's URL
    page.screenshot(path=str(ARTIFACTS / "meetings-transcript.png"), full_page=True)

    # rename a speaker: the page, and the SRT export, call them by the new name
    page.get_by_role("button", name="Rename Speaker 2").click()
    page.get_by_label("New name for Speaker 2").fill("Marketing")
    card = page.locator("section.card", has=page.locator("#speaker-list"))
    card.screenshot(path=str(ARTIFACTS / "meetings-rename.png"))
    page.get_by_role("button", name="Save").click()
    expect(speakers).to_have_text(["Speaker 1", "Marketing"])
    with page.expect_download() as download:
        page.locator("#exports").get_by_role("button", name="srt").click()
    assert download.value.suggested_filename == "Kick-off.srt"
    srt = Path(download.value.path()).read_text()
    assert "Marketing: " in srt
    assert "Speaker 2" not in srt

    # search a word said in the meeting: the hit opens the meeting at its phrase
    said = phrases.nth(phrases.count() - 1).locator(".said").inner_text()
    word = max(re.findall(r"[A-Za-z]{5,}", said), key=len)
    page.fill("#query", word)
    page.get_by_role("button", name="Search", exact=True).click()
    hit = page.locator("#found .hit a").first
    expect(hit).to_contain_text("Kick-off")
    page.screenshot(path=str(ARTIFACTS / "meetings-search.png"), full_page=True)
    hit.click()
    current = page.locator("#timeline .phrase.playing")
    expect(current).to_have_count(1)
    expect(current.locator(".said")).to_contain_text(word)

    # delete it: gone from the list, and from search
    page.once("dialog", lambda d: d.accept())
    page.click("#delete")
    expect(page.locator("#meetings tbody tr")).to_have_count(0)
    expect(page.locator("#status")).to_have_text('deleted "Kick-off"; no meetings yet')
    assert foreign == []


def test_one_file_per_participant_plays_each_track_at_its_offset(  # type: ignore[no-untyped-def]
    browser, server
) -> None:
    from playwright.sync_api import expect

    url, token, _ = server
    page = browser.new_page()
    page.goto(url + "/meetings")
    page.fill("#token", token)
    page.click("#load")
    page.fill("#title", "Two tracks")
    page.check("input[name=mode][value=tracks]")
    rows = page.locator("#track-rows tbody tr")
    expect(rows).to_have_count(2)
    for row, (name, audio, offset) in zip(
        rows.all(), [("Ana", "jfk.flac", "0"), ("Bob", "jfk.flac", "20")], strict=True
    ):
        row.locator(".track-file").set_input_files(str(AUDIO / audio))
        row.locator(".track-name").fill(name)
        row.locator(".track-offset").fill(offset)
    page.click("#send")
    expect(page.locator("#job-status")).to_have_text(re.compile(r"^complete"), timeout=180_000)
    expect(page.locator("#speaker-list .speaker .who")).to_have_text(["Ana", "Bob"])
    bob = page.locator("#timeline .phrase", has=page.locator(".who", has_text="Bob")).first
    start = _seconds(bob.locator(".time").inner_text())
    assert start >= 20
    bob.click()
    # Bob's own track, at the phrase's time less his offset
    page.wait_for_function(
        "() => document.getElementById('player').src.includes('/tracks/Bob/audio')"
        f" && Math.abs(document.getElementById('player').currentTime - {start - 20}) < 1.5"
    )


def _seconds(clock: str) -> float:
    total = 0.0
    for part in clock.split(":"):
        total = total * 60 + float(part)
    return total


def test_a_bad_file_gets_a_clear_message_and_leaves_nothing(  # type: ignore[no-untyped-def]
    browser, server, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    url, token, _ = server
    notes = tmp_path / "notes.mp3"
    notes.write_text("these are meeting notes, not audio\n" * 20)
    page = browser.new_page()
    page.goto(url + "/meetings")
    page.fill("#token", token)
    page.click("#load")
    page.fill("#title", "Not audio")
    page.set_input_files("#recording", str(notes))
    page.click("#send")
    error = page.locator("#upload-error")
    expect(error).to_be_visible()
    expect(error).to_contain_text("notes.mp3: not decodable audio")
    page.screenshot(path=str(ARTIFACTS / "meetings-bad-file.png"))
    page.click("#load")
    expect(page.locator("#status")).to_have_text("no meetings yet")  # nothing half-made


def test_local_mode_shows_a_meeting_made_by_heard_transcribe(  # type: ignore[no-untyped-def]
    browser, tmp_path: Path
) -> None:
    from playwright.sync_api import expect
    from typer.testing import CliRunner

    from heard.cli import app as cli

    url_db = f"sqlite:///{tmp_path / 'heard.db'}"
    made = CliRunner().invoke(
        cli, ["transcribe", str(AUDIO / "jfk.flac"), "--title", "JFK", "--db", url_db]
    )
    assert made.exit_code == 0, made.output
    db = Database(url_db)
    settings = ServerSettings(db, tmp_path / "uploads", local=True)
    try:
        with serving(create_app(settings)) as host:
            page = browser.new_page()
            page.goto(f"http://{host}/meetings")
            expect(page.locator("#token")).to_be_hidden()  # no token asked for
            row = page.locator("#meetings tbody tr")
            expect(row).to_have_count(1)
            expect(row).to_contain_text("JFK")
            row.get_by_role("button", name="Open").click()
            expect(page.locator("#timeline")).to_contain_text("country")
            page.locator("#timeline .phrase").first.click()
            page.wait_for_function("() => document.getElementById('player').readyState >= 1")
            page.screenshot(path=str(ARTIFACTS / "meetings-local.png"))
    finally:
        db.dispose()


def test_a_meeting_whose_run_was_lost_offers_to_run_it_again(  # type: ignore[no-untyped-def]
    browser, tmp_path: Path
) -> None:
    """Issue 57: a run accepted by a server that was killed before it ran reads interrupted on
    the page, which offers to run it again, and shows the transcript once it has run."""
    from playwright.sync_api import expect

    from heard.speech import Segment
    from heard.store.meetings import TrackSpec, create_meeting
    from heard.store.runs import accept_run
    from heard.store.users import authenticate
    from heard.testing import FakeTranscriber

    jfk = str(AUDIO / "jfk.flac")
    fake = FakeTranscriber({jfk: [Segment(0.0, 2.0, "and so my fellow americans")]})
    with served_for_a_user(tmp_path, transcriber=fake, resume=False) as (url, token, db):
        user = authenticate(db, token)
        assert user is not None
        meeting_id = create_meeting(db, title="Cut short", tracks=[TrackSpec("jfk", jfk)],
                                    owner=user.owner)  # fmt: skip
        killed = subprocess.Popen([sys.executable, "-c", "pass"])
        killed.wait()
        accept_run(db, meeting_id, f"{socket.gethostname()}:{killed.pid}:-")  # a server, killed
        page = browser.new_page()
        page.goto(f"{url}/meetings")
        page.fill("#token", token)
        page.click("#load")
        row = page.locator("#meetings tbody tr")
        expect(row.locator(".status-interrupted")).to_have_text("interrupted")
        row.get_by_role("button", name="Open").click()
        expect(page.locator("#meeting-info")).to_contain_text("interrupted")
        expect(page.locator("#timeline")).to_contain_text("Run again finishes it")
        page.screenshot(path=str(ARTIFACTS / "meetings-interrupted.png"))
        page.get_by_role("button", name="Run again").click()
        expect(page.locator("#timeline")).to_contain_text("fellow americans")
        expect(page.locator("#meeting-info")).to_contain_text("complete")
        expect(page.locator("#run")).to_be_hidden()
    assert fake.calls == [jfk]
