"""Sealed bots: hostile bots (a forker, CPU burners, an environment reader, a gigabyte writer,
one writing the project's files, one hanging on a new game) are contained. Their opponent's
games finish normally and nothing they do outlives them or lands outside their folder."""

from __future__ import annotations

import hashlib
import json
import os
import textwrap
from pathlib import Path

import numpy as np
import pytest

from agents.isolated.host import command
from engine import isolation, load_game
from engine.isolation import MAX_PIPE_BYTES, READ_CHUNK, BotProcess, IsolatedPlayers
from engine.tournament import MatchConfig, play_pairing
from flows.entry import main

REPO = Path(__file__).resolve().parents[1]
HEADER = "import os, sys, threading, time\n\n"


# hostile bots in real processes; a hang fails with pytest-timeout's message, no speed target
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def connect4():
    return load_game("connect4")


def bot_file(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "hostile.py"
    path.write_text(HEADER + textwrap.dedent(body))
    return path


def pairing(connect4, path: Path, games: int = 2, move_ms: float = 2000.0) -> list[dict]:
    config = MatchConfig(games=games, isolated=True, move_ms=move_ms, opening=0)
    rows = play_pairing(connect4, f"file:{path}", "random", config, host=command())
    for row in rows:  # the opponent played a normal game to its end
        assert row["b_crashes"] == 0 and row["b_late"] == 0 and row["b_illegal"] == 0
        assert row["b_moves"] >= 1 and row["score_a"] in (0.0, 0.5, 1.0) and row["history"]
    return rows


def processes_with(token: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if token.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_looping_bot_does_not_hang_a_two_game_match(tmp_path, capsys):
    """The issue's report: `match … file:burner.py:Bot random --games 2 --isolated --move-ms 50`
    never returned."""
    path = bot_file(tmp_path, """
        class Bot:
            def step(self, state, player):
                while True:
                    pass
    """)  # fmt: skip
    code = main(["match", "connect4", f"file:{path}:Bot", "random", "--games", "2",
                 "--isolated", "--move-ms", "50", "--json"])  # fmt: skip
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["games"] == 2
    looping = summary["bots"][0]
    assert looping["late"] == 2 and looping["crashes"] == 2  # one late move a game, killed
    assert looping["faults"][0].startswith("game 0: late: no move for ")


def test_every_late_bot_is_killed_and_replaced_for_the_rest_of_the_game(tmp_path, connect4):
    path = bot_file(tmp_path, """
        class Bot:
            def step(self, state, player):
                while True:
                    pass
    """)  # fmt: skip
    rows = pairing(connect4, path, games=2, move_ms=100)
    # one late move each game, then killed: random moves, and a fresh process the next game
    assert [(r["a_late"], r["a_crashes"], r["a_moves"]) for r in rows] == [(1, 1, 0)] * 2


def test_a_bot_hanging_on_a_new_game_misses_that_deadline_too(tmp_path, connect4, monkeypatch):
    monkeypatch.setattr(isolation, "RESET_S", 1.0)
    path = bot_file(tmp_path, """
        class Bot:
            def __init__(self):  # the file is loaded afresh each game: count in its folder
                with open("games.txt", "a+") as seen:
                    seen.write("x")
                    seen.seek(0)
                    if len(seen.read()) == 2:
                        time.sleep(3600)
            def step(self, state, player):
                return state.legal_actions(player)[0]
    """)  # fmt: skip
    rows = pairing(connect4, path, games=3)
    assert [(r["a_crashes"], r["a_moves"] > 0) for r in rows] == [(0, True), (1, False), (0, True)]
    assert [r["a_late"] for r in rows] == [0, 1, 0]  # the second game's start missed RESET_S


def test_a_forking_bot_leaves_nothing_behind(tmp_path, connect4):
    token = f"98{os.getpid()}.5"  # a sleep length no other process uses
    path = bot_file(tmp_path, f"""
        class Bot:
            def __init__(self):
                for escape in (False, True):
                    if os.fork() == 0:
                        if escape:
                            os.setsid()  # leaves the bot's process group
                        os.execv("/bin/sleep", ["sleep", "{token}"])
            def step(self, state, player):
                return state.legal_actions(player)[0]
    """)  # fmt: skip
    pairing(connect4, path, games=2)
    assert processes_with(token) == []  # gone when the match returns, the escaped child too


def test_cpu_time_is_limited_besides_the_deadline(tmp_path, connect4):
    path = bot_file(tmp_path, """
        class Bot:
            def __init__(self):
                while True:  # burns CPU before the game can start
                    pass
            def step(self, state, player):
                return 0
    """)  # fmt: skip
    bot = BotProcess(command(), f"file:{path}", cpu_s=1)
    players = IsolatedPlayers([bot], 1000.0, np.random.default_rng(0))
    try:
        players.begin("connect4", 0, {}, [0])
    finally:
        players.close()
        bot.close()
    # killed by its CPU limit, not by the start-up deadline (which would have counted it late)
    assert bot.stats.crashes == 1 and bot.stats.late == 0


def test_a_bot_sees_no_secrets_and_lives_in_its_own_folder(tmp_path, connect4, monkeypatch):
    monkeypatch.setenv("GRIDBOTS_TEST_SECRET", "hunter2")
    path = bot_file(tmp_path, f"""
        class Bot:
            def step(self, state, player):
                leaked = "GRIDBOTS_TEST_SECRET" in os.environ or "hunter2" in str(os.environ)
                outside = os.getcwd() in ({str(tmp_path)!r}, {str(REPO)!r})
                return 99 if leaked or outside else state.legal_actions(player)[0]
    """)  # fmt: skip
    rows = pairing(connect4, path, games=2)
    assert all(r["a_illegal"] == 0 and r["a_moves"] > 0 for r in rows)


def test_a_gigabyte_on_stdout_is_cut_off(tmp_path, connect4):
    path = bot_file(tmp_path, """
        class Bot:
            def step(self, state, player):
                block = b"7" * (1 << 20)
                for _ in range(1024):  # 1 GiB on the protocol pipe
                    os.write(1, block)
                return state.legal_actions(player)[0]
    """)  # fmt: skip
    rows = pairing(connect4, path, games=2)
    for row in rows:
        assert row["a_crashes"] == 1
        assert row["a_discarded_bytes"] <= MAX_PIPE_BYTES + READ_CHUNK


def test_project_files_cannot_be_written(tmp_path, connect4):
    target = tmp_path / "outside.txt"
    before = hashlib.sha256((REPO / "pyproject.toml").read_bytes()).hexdigest()
    path = bot_file(tmp_path, f"""
        class Bot:
            def __init__(self):
                with open("scratch.txt", "w") as handle:  # its own folder: allowed
                    handle.write("mine")
            def step(self, state, player):
                for victim in ({str(REPO / "pyproject.toml")!r}, {str(target)!r}):
                    try:
                        with open(victim, "a") as handle:
                            handle.write("pwned")
                    except PermissionError:
                        pass
                try:
                    os.rename({str(REPO / "README.md")!r}, "stolen.md")
                except PermissionError:
                    pass
                return state.legal_actions(player)[0]
    """)  # fmt: skip
    rows = pairing(connect4, path, games=2)
    assert all(r["a_crashes"] == 0 and r["a_moves"] > 0 for r in rows)  # refused, not killed
    assert hashlib.sha256((REPO / "pyproject.toml").read_bytes()).hexdigest() == before
    assert not target.exists() and (REPO / "README.md").is_file()
