"""The play page and the leaderboard in a real browser: Playwright driving Debian's Chromium
against a `gridbots web` server started here (127.0.0.1, a free port) and stopped by its PID.

The server's registry holds a tiny Connect 4 HMM really trained and registered here, and the
real tournament that played it (test_web_registry.TRAIN_AND_PLAY), so the play page meets a
registry bot and the leaderboard shows real rows. Where Playwright or Chromium is missing: skipped
with one line at a desk, a failed run under CI=true (`.ci/run` installs Chromium).

GRIDBOTS_SCREENSHOTS=DIR keeps the play page's and the leaderboard's screenshots (64 colours,
small PNGs): `make screenshots` writes the README's into docs/screenshots.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from browser import chromium, free_port, shot, stop_group
from test_tracking import mlflow_sandbox
from test_web_registry import registered_hmm

from engine import load_game

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow
BOT = "registry:connect4-hmm@web"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """`gridbots web` in its own process group, its registry holding a really trained bot
    (BOT) and the tournament that played it; torn down by PID."""
    folder = tmp_path_factory.mktemp("web-server")
    with mlflow_sandbox(folder, tmp_path_factory.getbasetemp()):
        registered_hmm()
        yield from _serve(folder)


def _serve(folder: Path):
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # the sandbox's MLFLOW_TRACKING_URI
    command = [sys.executable, "-m", "flows.cli", "web", "--port", str(port), "--ms", "200",
               "--root", str(folder), "--mlflow-url", "http://127.0.0.1:5000"]  # fmt: skip
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
        stop_group(process, 10)
        log.close()


@pytest.fixture(scope="module")
def browser():
    with chromium() as launched:
        yield launched


@pytest.fixture(scope="module")
def page(browser):
    return browser.new_page(viewport={"width": 390, "height": 844})  # a phone's width


def test_a_full_connect4_game_by_clicking_against_a_bot(server, page):
    page.goto(f"{server}/?game=connect4&opponent={BOT}")
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
        if clicks == 2:  # no threat yet, so no guard forced the model's reply
            # the model's thinking: its policy over the 7 columns, in the table and on the board
            assert page.locator("#analysis tbody tr").count() == 7
            shares = [t for t in page.locator("#grid .cell .label").all_inner_texts() if t]
            assert len(shares) == 7 and all(t.endswith("%") for t in shares)  # one per column
            assert "connect4-hmm@web" in page.locator("#summary").inner_text()
            shot(page, "web-play.png", full_page=True)
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


def test_the_leaderboard_shows_the_registered_model_and_its_tournament(server, browser):
    page = browser.new_page(viewport={"width": 1100, "height": 600})
    page.goto(f"{server}/leaderboard")
    page.wait_for_function("!document.getElementById('status').textContent.startsWith('loading')")
    assert page.locator("#status").inner_text() == "1 registered model"
    assert page.locator("#models h3").first.inner_text().startswith("connect4-hmm")
    folded = page.locator("#models details summary")  # a rejected version folds beneath
    if folded.count():
        folded.first.click()
    standing = page.locator("#models td.standing").first.inner_text()
    assert standing.startswith("#") and "of 3" in standing and "registry:connect4-hmm/1" in standing
    assert page.locator("#models a", has_text="MLflow").count() == 1
    rows = page.locator("#tournaments table.tournament tbody tr")
    assert rows.count() == 3  # the HMM and the two baselines it played
    assert "connect4-hmm v1" in page.locator("#tournaments").inner_text()
    shot(page, "web-leaderboard.png", full_page=True)
    page.close()


@pytest.fixture(scope="module")
def zoo_server(tmp_path_factory):
    """`gridbots web` over a registry holding the trained HMM and the zoo's Connect 4 bot
    (imported as `connect4-playerzero`, its first production version), plus a challenger the
    gate rejected (2 games can never clear it)."""
    import shutil

    from models.bundle import import_zoo_entry
    from models.registry import promote_if_better

    folder = tmp_path_factory.mktemp("web-zoo")
    with mlflow_sandbox(folder, tmp_path_factory.getbasetemp()):
        registered_hmm()
        entry = folder / "zoo/connect4/playerzero"
        shutil.copytree(ROOT / "zoo/connect4/playerzero", entry)
        import_zoo_entry(entry)
        (entry / "card.json").write_text(
            (entry / "card.json").read_text().replace('"title": "', '"title": "again: ', 1)
        )
        import_zoo_entry(entry)
        assert not promote_if_better("connect4-playerzero", "2", games=2).promoted
        yield from _serve(folder)


def test_the_leaderboard_opens_on_each_games_production_bot_and_its_card(zoo_server, browser):
    page = browser.new_page(viewport={"width": 1100, "height": 600})
    page.goto(f"{zoo_server}/leaderboard")
    page.wait_for_function("!document.getElementById('status').textContent.startsWith('loading')")
    rows = page.locator("#production tbody tr")
    assert rows.count() == 1  # one game with a production bot
    row = rows.first.inner_text()
    assert row.startswith("connect4") and "connect4-playerzero v1" in row and "zoo card" in row
    # the production version's model comes first; its rejected challenger is folded away
    assert page.locator("#models h3").first.inner_text().startswith("connect4-playerzero")
    first = page.locator("#models section").first
    assert first.locator("details summary").inner_text() == "1 rejected version"
    assert not first.locator("details table").is_visible()
    first.locator("details summary").click()
    assert first.locator("details table tbody tr").first.inner_text().startswith("2")
    with page.expect_navigation():
        page.locator("#production a", has_text="zoo card").click()
    assert "Connect 4 PlayerZero" in page.content() and "## Evidence" in page.content()
    page.close()


def _history(page) -> list[tuple[str, str]]:
    items = page.locator("#history li")
    return [
        (items.nth(i).inner_text(), items.nth(i).get_attribute("class"))
        for i in range(items.count())
    ]


def test_tactics_turns_are_played_on_the_board_with_the_cell_menu(server, page):
    page.goto(f"{server}/?game=tactics&params=preset=duel&opponent=mcts:ms=50&seed=1")
    page.wait_for_selector("#grid .cell.legal")
    assert page.locator("#grid .cell").count() == 144
    mine = page.locator("#grid .cell[aria-label*='*,']")  # the acting unit: health, then `*`
    assert mine.count() == 1 and mine.get_attribute("data-piece") == "K"
    crowded = page.locator("#grid .cell.legal[aria-label$=' moves']")  # several cards aim here
    crowded.first.click()
    assert page.locator("#menu").is_visible()
    assert len(page.locator("#menu button").all_inner_texts()) >= 3  # 2+ moves and cancel
    page.keyboard.press("Escape")
    assert page.locator("#menu").is_hidden()
    step = page.locator("#grid .cell.legal[aria-label*='plays move@']").last  # a free cell
    row, col = step.get_attribute("data-row"), step.get_attribute("data-col")
    plies = len(_history(page))
    step.click()  # one move there: played at once
    page.wait_for_function(f"document.querySelectorAll('#history li').length === {plies + 1}")
    moved = page.locator(f"#grid .cell[data-row='{row}'][data-col='{col}']")
    assert moved.get_attribute("data-piece") == "K" and _history(page)[-1][0].startswith("move@")
    page.locator("#moves button", has_text="end turn").click()  # End Turn as a button
    # the bot's unit takes its whole turn (the server draws its cards), then it is ours again
    page.wait_for_function(
        f"[...document.querySelectorAll('#history li')].slice({plies + 2})"
        ".some((li) => li.className === 'bot')"
    )
    page.wait_for_selector("#grid .cell.legal")
    assert page.locator("#analysis tbody tr").count() >= 1  # what MCTS weighed for its move
    assert page.locator("#grid .cell .heat").count() >= 1  # ... tinted over the board
    crowded.first.click()
    shot(page, "web-tactics.png", full_page=True)
    choice = page.locator("#menu button").first  # a card (or End Turn) from the cell's menu
    chosen = choice.inner_text().removeprefix("end turn (").removesuffix(")")
    mine_before = len([1 for _, by in _history(page) if by == "you"])
    choice.click()
    page.wait_for_function(
        f"document.querySelectorAll('#history li.you').length === {mine_before + 1}"
    )
    played = _history(page)
    assert [m for m, by in played if by == "you"][-1] == chosen
    game = load_game("tactics").__class__(preset="duel")
    state = game.state_from_history(game.parse_moves(" ".join(m for m, _ in played)), seed=1)
    assert len(state.history()) == len(played)  # every ply legal, the server's draws included


def test_a_territory_move_is_picked_by_tile_then_target_then_count(server, page):
    page.goto(f"{server}/?game=territory&opponent=heuristic:policy=greedy&seed=1")
    page.wait_for_selector("#grid .cell.legal")
    assert page.locator("#grid .cell").count() == 36
    home = page.locator("#grid .cell[data-row='0'][data-col='0']")
    assert home.get_attribute("data-piece") == "B" and home.locator(".count").inner_text() == "1"
    home.focus()  # by keyboard: Enter picks the tile's moves, the menu takes the focus
    page.keyboard.press("Enter")  # produce, or send to (0,1) or (1,0): targets lit, produce listed
    assert page.locator("#grid .cell.target").count() == 2
    assert page.evaluate("document.activeElement.textContent") == "produce (0,0)"
    page.keyboard.press("Enter")
    page.wait_for_function("document.querySelectorAll('#history li').length === 2")  # + red
    assert home.locator(".count").inner_text() == "2"
    home.click()
    page.locator("#grid .cell.target[data-row='0'][data-col='1']").click()
    shot(page, "web-territory.png", full_page=True)
    menu = page.locator("#menu button").all_inner_texts()  # 1 or 2 troops to (0,1)
    assert menu == ["(0,0)->(0,1) x1", "(0,0)->(0,1) x2", "cancel (Esc)"]
    page.locator("#menu button", has_text="x2").click()
    page.wait_for_function("document.querySelectorAll('#history li').length === 4")
    assert _history(page)[2] == ("(0,0)->(0,1) x2", "you")
    assert (
        page.locator("#grid .cell[data-row='0'][data-col='1']").get_attribute("data-piece") == "B"
    )
    assert home.get_attribute("data-piece") == "."  # every troop left: the tile went to nature
