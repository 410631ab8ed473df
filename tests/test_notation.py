"""Moves refused in the game's own words (engine.protocol): the move and the legal ones in the
game's notation, the player as the board names it, the reason from the game's hook, a generic
reason for games without one; the same words in match logs, in-process and isolated."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine import load_game
from engine.protocol import IllegalActionError
from engine.tournament import MatchConfig, play_pairing, summarize_pairing

REPO = Path(__file__).resolve().parents[1]


def refusal(game_name: str, history: str, move) -> IllegalActionError:
    game = load_game(game_name)
    state = game.state_from_history(game.parse_moves(history))
    before = state.array.copy()
    with pytest.raises(IllegalActionError) as caught:
        state.apply_action(game.parse_moves(move)[0] if isinstance(move, str) else move)
    assert (state.array == before).all()  # the position is left exactly as it was
    return caught.value


@pytest.mark.parametrize(
    ("game", "history", "move", "message"),
    [
        ("connect4", "444444", "4",
         'illegal move 4 for X after "444444": column 4 is full; legal: 1 2 3 5 6 7'),
        ("connect4", "1212121", "3", 'illegal move 3 after "1212121": the game is over'),
        ("connect4", "", 9,
         "illegal move id 9 for X: connect4 action ids run from 0 to 6; legal: 1 2 3 4 5 6 7"),
        ("connect4", "", None, "illegal move None for X: not an action id; legal: 1 2 3 4 5 6 7"),
        ("othello", "", "a1", "illegal move a1 for black: it flips nothing; legal: c4 d3 e6 f5"),
        ("othello", "", "e4", "illegal move e4 for black: e4 is taken; legal: c4 d3 e6 f5"),
        ("othello", "", "pass",
         "illegal move pass for black: passing is allowed only when no move is legal; "
         "legal: c4 d3 e6 f5"),
        ("othello", "d3", "a8",
         'illegal move a8 for white after "d3": it flips nothing; legal: c3 c5 e3'),
    ],
)  # fmt: skip
def test_refusals_speak_the_games_notation(game, history, move, message):
    assert str(refusal(game, history, move)) == message


def test_a_must_pass_position_and_the_generic_fallback():
    game = load_game("othello")
    from engine.games.othello import state_from_diagram

    # a1 black, b1 white, white to move: nothing white places encloses a1, so it must pass
    state = game.new_initial_state()
    state.array[:] = state_from_diagram("XO......\n" + "........\n" * 7, to_move=1)
    with pytest.raises(IllegalActionError, match="c1 for white: white has no move and must pass"):
        state.apply_action(2)
    # a game without an `illegal_reason` hook (Sokoban, tactics, territory until theirs)
    sokoban = load_game("sokoban")
    start = sokoban.new_initial_state()
    with pytest.raises(IllegalActionError, match="illegal move id 7 for P1: sokoban action ids"):
        start.apply_actions([7])
    error = refusal("pig", "", 4)
    assert str(error) == "illegal move 4 for P0: not a legal move here; legal: hold roll"
    assert error.action == 4 and error.legal == [0, 1] and error.player == 0


class Stubborn:
    """A seat that always plays column 4 (in the game's notation): illegal once it is full."""

    def step(self, state, player=None):
        return 3


def test_in_process_match_logs_faults_in_the_games_words():
    game = load_game("connect4")
    rows = play_pairing(
        game, "stubborn", "random", MatchConfig(games=2, opening=0),
        make_seat=lambda spec, g, seed: Stubborn() if spec == "stubborn" else _random(g, seed),
    )  # fmt: skip
    faults = [fault for row in rows for fault in row["a_faults"]]
    assert faults and all(": column 4 is full; legal: " in f for f in faults)
    assert all(f.startswith("illegal move 4 for ") for f in faults)
    assert sum(row["a_illegal"] for row in rows) == len(faults)
    summary = summarize_pairing(rows)
    assert summary["bots"][0]["faults"][0].startswith("game 0: illegal move 4 for X after")
    assert summary["bots"][1]["faults"] == []


def _random(game, seed):
    from agents import make

    return make("random", game, seed)


@pytest.mark.slow
def test_isolated_match_logs_faults_in_the_games_words(tmp_path):
    bot = tmp_path / "stubborn.py"
    bot.write_text("class Bot:\n    def step(self, state, player):\n        return 3\n")
    done = subprocess.run(
        [sys.executable, "-m", "flows.cli", "match", "connect4", f"file:{bot}", "random",
         "--games", "2", "--isolated", "--move-ms", "5000", "--json", "--opening", "0"],
        capture_output=True, text=True, cwd=REPO, timeout=600, env={**os.environ},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    stubborn = json.loads(done.stdout)["bots"][0]
    assert stubborn["illegal"] >= 2 and stubborn["crashes"] == 0
    assert all("illegal move 4 for " in f and "column 4 is full" in f for f in stubborn["faults"])
