"""A person at a real pseudo-terminal (pexpect): `gridbots play` and `human` seats.

Each test drives the command the way a person would: reads the board and the prompt, types
moves in the game's notation, and checks what the terminal shows. The person's moves in the
Connect 4 game come from an alpha-beta search run here on the moves the bot announces, so the
game is won whatever the bot plays.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pexpect
import pytest

from agents import make
from engine import load_game

REPO = Path(__file__).resolve().parents[1]
PROMPT_TIMEOUT = 300  # seconds: imports and kernels load slowly on two busy cores


def spawn(*args: str, tmp_path: Path) -> pexpect.spawn:
    env = {
        **os.environ,
        "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'no-registry.db'}",  # never created
        "COLUMNS": "100",
    }
    return pexpect.spawn(
        sys.executable, ["-m", "flows.cli", *args], cwd=str(REPO), env=env,
        encoding="utf-8", timeout=PROMPT_TIMEOUT, dimensions=(50, 100),
    )  # fmt: skip


def finish(child: pexpect.spawn) -> str:
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, child.before
    return child.before


def test_connect4_won_by_keystrokes_with_hint_undo_and_bad_input(tmp_path):
    game = load_game("connect4")
    me = make("alphabeta:depth=4", game, seed=0)
    child = spawn("play", "connect4", "random", "--seed", "5", tmp_path=tmp_path)
    child.expect_exact("you are X, against random")
    child.expect_exact("X> ")
    child.sendline("8")  # not a column: one line says so, and the prompt comes back
    child.expect_exact("connect4: moves are digits 1-7, got '8'")
    child.expect_exact("X> ")
    child.sendline("44")
    child.expect_exact("'44' is 2 moves: type one move")
    child.expect_exact("X> ")
    child.sendline("hint")  # the opponent's own analysis: random's uniform choice
    child.expect_exact("hint from random:")
    child.expect(r"1 14%\s+2 14%")
    child.expect_exact("X> ")
    child.sendline("4")
    child.expect(r"O plays (\d)")
    reply = child.match.group(1)
    child.expect_exact("X> ")
    child.sendline("undo")  # back to the start: both moves taken back
    child.expect_exact(f"took back 4{reply}")
    child.expect_exact("X> ")
    child.sendline("history")
    child.expect_exact("history: (none yet)")
    state = game.new_initial_state()
    while True:
        child.expect_exact("X> ")
        move = me.step(state.clone())
        child.sendline(str(move + 1))
        state.apply_action(move)
        if state.is_terminal():
            break
        child.expect(r"O plays (\d)")
        state.apply_action(int(child.match.group(1)) - 1)
        if state.is_terminal():
            break
    child.expect_exact("you win")
    child.expect(r"history: (\d+)")
    assert child.match.group(1) == game.format_moves(state.history())
    assert "replay: gridbots show connect4 --moves " in finish(child)


@pytest.mark.slow
def test_othello_illegal_move_reprompted_and_eof_prints_a_usable_history(tmp_path):
    child = spawn("play", "othello", "random", "--seed", "2", tmp_path=tmp_path)
    child.expect_exact("legal: c4 d3 e6 f5")
    child.expect_exact("black> ")
    child.sendline("a1")
    child.expect_exact("illegal move a1 for black: it flips nothing; legal: c4 d3 e6 f5")
    child.expect_exact("black> ")
    child.sendline("d4")
    child.expect_exact("illegal move d4 for black: d4 is taken; legal: c4 d3 e6 f5")
    child.expect_exact("black> ")
    child.sendline("d3")
    child.expect(r"white plays ([a-h][1-8])")
    child.expect_exact("black> ")
    child.sendeof()  # end of input mid-game: a clean stop, and the game so far
    child.expect_exact("game stopped")
    child.expect(r"history: (d3 [a-h][1-8])\r\n")
    history = child.match.group(1)
    finish(child)
    shown = gridbots("show", "othello", "--moves", history)
    assert shown.returncode == 0 and not shown.stderr, shown.stderr
    assert f"history: {history}" in shown.stdout and "returns" not in shown.stdout
    answered = gridbots("move", "othello", "random", stdin=history + "\n")
    assert answered.returncode == 0 and not answered.stderr, answered.stderr
    assert re.fullmatch(r"[a-h][1-8]\n", answered.stdout)


def gridbots(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "flows.cli", *args], input=stdin, cwd=REPO,
        capture_output=True, text=True, timeout=PROMPT_TIMEOUT,
    )  # fmt: skip


def test_lazerbike_in_real_time_with_the_arrow_keys(tmp_path):
    child = spawn(
        "play", "lazerbike", "space", "--laps-per-s", "2", "--seed", "1", tmp_path=tmp_path
    )
    child.expect_exact("press a key to start")
    child.send(" ")
    child.expect_exact("arrows steer, q quits")
    child.send("\x1b[A")  # up: north, a left turn for bike A heading east
    time.sleep(1.5)  # three laps at 2 laps/s
    child.send("q")
    child.expect_exact("game stopped")
    child.expect(r"history: ([-\d ]+)\r\n")
    laps = [int(x) for x in child.match.group(1).split()]
    finish(child)
    mine = laps[0::2]  # bike A's action each lap (0 left, 1 forward, 2 right)
    assert 0 in mine and set(mine) <= {0, 1}, mine  # the one turn, else straight on
    assert len(mine) >= 2


def test_a_person_plays_a_seat_of_a_match(tmp_path):
    child = spawn("match", "connect4", "human", "random", "--games", "1", tmp_path=tmp_path)
    while child.expect([r"legal: ([\d ]+)\r\n", r"game 1 \(AB\): (A wins|B wins|draw)"]) == 0:
        column = child.match.group(1).split()[0]
        child.expect_exact("X> ")
        child.sendline(column)
    out = finish(child)
    assert "W/D/L" in out and "human" in out


@pytest.mark.parametrize("command", ["gridbots play connect4"])
def test_the_readme_play_command_meets_the_built_in_without_a_registry(command, tmp_path):
    child = spawn(*command.split()[1:], "--seed", "3", tmp_path=tmp_path)
    child.expect_exact("against alphabeta:ms=1000 (built in; nothing in production)")
    child.expect_exact("X> ")
    child.sendline("4")
    child.expect(r"O plays \d")
    child.expect_exact("X> ")
    child.sendline("quit")
    child.expect_exact("game stopped")
    finish(child)
    assert not (tmp_path / "no-registry.db").exists()
