"""The play page and the leaderboard in a real browser: Playwright driving Debian's Chromium
against a `gridbots web` server started here (127.0.0.1, a free port) and stopped by its PID.

Skipped, with the reason shown by `-rs`, where Playwright or Chromium is missing (`.ci/run`
installs Chromium). GRIDBOTS_SCREENSHOTS=DIR keeps the pages' screenshots (the README's).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from engine import load_game

ROOT = Path(__file__).resolve().parents[1]


def _chromium() -> str | None:
    found = os.environ.get("GRIDBOTS_CHROMIUM") or shutil.which("chromium")
    return found or shutil.which("chromium-browser")


CHROMIUM = _chromium()
try:
    import playwright.sync_api as playwright_api
except ImportError:
    playwright_api = None
if CHROMIUM is None or playwright_api is None:  # one line under -rs for the whole module
    pytest.skip(
        "browser tests need Playwright and Chromium "
        "(apt-get install -y chromium; pip install -c constraints.txt playwright)",
        allow_module_level=True,
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """`gridbots web` in its own process group, with an empty registry; torn down by PID."""
    port = _free_port()
    folder = tmp_path_factory.mktemp("web-server")
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "MLFLOW_TRACKING_URI": f"sqlite:///{folder / 'mlflow.db'}",
    }
    command = [sys.executable, "-m", "flows.cli", "web", "--port", str(port), "--ms", "200"]
    log = (folder / "server.log").open("w")
    process = subprocess.Popen(
        command, cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                urllib.request.urlopen(f"{url}/api/games", timeout=1).close()
                break
            except OSError:
                if process.poll() is not None:
                    pytest.fail(f"gridbots web exited: {(folder / 'server.log').read_text()}")
                time.sleep(0.1)
        yield url
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        log.close()


@pytest.fixture(scope="module")
def page():
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield browser.new_page(viewport={"width": 390, "height": 844})  # a phone's width
        finally:
            browser.close()


def _shot(page, name: str) -> None:
    folder = os.environ.get("GRIDBOTS_SCREENSHOTS")
    if folder:
        page.screenshot(path=str(Path(folder) / name), full_page=True)


def test_a_full_connect4_game_by_clicking_against_a_bot(server, page):
    page.goto(f"{server}/?game=connect4&opponent=alphabeta:depth=2")
    page.wait_for_selector("#grid .cell.legal")
    assert page.locator("#grid .cell").count() == 42
    clicks = 0
    while page.locator("#result").is_hidden():
        plies = page.locator("#history li").count()
        page.locator("#grid .cell.legal").first.click()
        clicks += 1
        page.wait_for_function(
            f"document.querySelectorAll('#history li').length > {plies} + 1"
            " || !document.getElementById('result').hidden"
        )
        if clicks == 3:
            # the bot's thinking: a row per analysed column, values shown
            assert page.locator("#analysis tbody tr").count() == 7
            _shot(page, "web-play.png")
        assert clicks <= 21
    result = page.locator("#result").inner_text()
    assert result in ("you win", "you lose", "draw")
    status = page.locator("#status").inner_text()
    history = status.split("history ")[1].rstrip(")")
    game = load_game("connect4")
    state = game.state_from_history(game.parse_moves(history))  # every bot move was legal
    assert state.is_terminal()
    mine = state.returns()[0]
    assert result == {1.0: "you win", 0.0: "draw", -1.0: "you lose"}[mine]


def test_keyboard_plays_a_typed_move_and_undo_takes_it_back(server, page):
    page.goto(f"{server}/?game=connect4&opponent=random")
    page.wait_for_selector("#grid .cell.legal")
    page.fill("#move", "4")
    page.press("#move", "Enter")
    page.wait_for_function("document.querySelectorAll('#history li').length === 2")
    assert page.locator("#history li").first.inner_text() == "4"
    page.locator("#grid .cell").first.focus()
    page.keyboard.press("u")
    page.wait_for_function("document.querySelectorAll('#history li').length === 0")


def test_an_othello_pass_is_played_from_the_move_list(server, page):
    history = "c4 c3 e6 b4 a4 a5 c2 a3"  # black (X) has no move here: it must pass
    page.goto(f"{server}/?game=othello&opponent=alphabeta:depth=2&side=0&history={history}")
    page.wait_for_selector("#moves button")
    assert page.locator("#moves button").all_inner_texts() == ["pass"]
    assert (
        page.locator("#grid .cell.legal").count() == 0 and page.locator("#grid .cell").count() == 64
    )
    page.locator("#moves button", has_text="pass").click()
    page.wait_for_function("document.querySelectorAll('#history li').length >= 10")
    plies = page.locator("#history li")
    assert plies.nth(8).inner_text() == "pass" and "you" in plies.nth(8).get_attribute("class")
    assert "bot" in plies.nth(9).get_attribute("class")  # white answered


def test_the_smallest_sokoban_level_is_solved_with_the_arrow_keys(server, page):
    page.goto(f"{server}/?game=sokoban&opponent=planner&params=level=first")
    page.wait_for_selector("#grid .cell[data-piece='1']")
    page.locator("#grid .cell").first.focus()
    for ply in range(1, 5):
        page.keyboard.press("ArrowRight")
        page.wait_for_function(f"document.querySelectorAll('#history li').length === {ply}")
    page.wait_for_selector("#result:not([hidden])")
    assert page.locator("#result").inner_text() == "solved"


def test_a_lazerbike_steered_into_a_wall_crashes(server, page):
    page.goto(f"{server}/?game=lazerbike&opponent=random:guards=safe&pace=10")
    page.wait_for_selector("#grid .cell[data-piece='A']")
    assert page.locator("#grid .cell").count() == 15 * 15
    page.locator("#grid .cell").first.focus()
    page.keyboard.press("ArrowUp")  # bike A starts heading east on row 7: north is 7 laps away
    page.wait_for_selector("#result:not([hidden])", timeout=20_000)
    assert page.locator("#result").inner_text() == "you lose"
    crashed = page.locator("#grid .cell[data-piece='a']")
    assert crashed.count() == 1 and crashed.get_attribute("data-row") == "0"  # at the top wall


def test_the_leaderboard_loads(server, page):
    page.goto(f"{server}/leaderboard")
    page.wait_for_function("!document.getElementById('status').textContent.startsWith('loading')")
    assert "no registered models yet" in page.locator("#status").inner_text()
    _shot(page, "web-leaderboard.png")
