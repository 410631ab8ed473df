"""Connect 4 against hand-worked positions, perft and an independent naive referee."""

import numpy as np
import pytest

from engine import TERMINAL, IllegalActionError, load_game
from engine.loops import perft
from engine.protocol import GameError


@pytest.fixture(scope="module")
def game():
    return load_game("connect4")


def play(game, moves: str):
    return game.state_from_history(game.parse_moves(moves))


def naive_winner(moves: list[int]) -> int | None:
    """Reference referee on a plain 6x7 list board: who made four first, or None."""
    board = [[-1] * 7 for _ in range(6)]
    heights = [0] * 7
    for ply, col in enumerate(moves):
        player = ply % 2
        row = heights[col]
        board[row][col] = player
        heights[col] += 1
        for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
            run = 1
            for sign in (1, -1):
                r, c = row + sign * dr, col + sign * dc
                while 0 <= r < 6 and 0 <= c < 7 and board[r][c] == player:
                    run += 1
                    r, c = r + sign * dr, c + sign * dc
            if run >= 4:
                return player
    return None


@pytest.mark.parametrize(
    ("moves", "winner"),
    [
        ("1212121", 0),  # vertical in column 1
        ("1122334", 0),  # horizontal on the bottom row
        ("12233434474", 0),  # rising diagonal c1r0 .. c4r3
        ("76655454414", 0),  # falling diagonal, the mirror image
        ("71212121", 1),  # O completes a vertical
    ],
)
def test_wins_in_every_direction(game, moves, winner):
    for cut in range(len(moves)):
        assert not play(game, moves[:cut]).is_terminal(), f"ended early at {moves[:cut]}"
    state = play(game, moves)
    assert state.current_player() == TERMINAL
    expected = [1.0, -1.0] if winner == 0 else [-1.0, 1.0]
    assert state.returns() == expected
    assert naive_winner(game.parse_moves(moves)) == winner


def test_full_column_is_not_legal(game):
    state = play(game, "444444")
    assert state.legal_actions() == [0, 1, 2, 4, 5, 6]
    with pytest.raises(IllegalActionError):
        state.apply_action(3)
    assert state.history() == [3] * 6
    with pytest.raises(IllegalActionError):
        play(game, "4444444")


def test_perft_matches_reference_values(game):
    start = game.new_initial_state().array
    counts = [perft(*game.kernels.search(), start, d, 2, 7, -1) for d in range(1, 8)]
    assert counts == [7, 49, 343, 2401, 16807, 117649, 823536]


def test_random_games_agree_with_naive_referee(game):
    rng = np.random.default_rng(7)
    draws = 0
    for _ in range(300):
        state = game.new_initial_state()
        while not state.is_terminal():
            state.apply_action(state.random_action(rng))
        winner = naive_winner(state.history())
        returns = state.returns()
        if winner is None:
            draws += 1
            assert len(state.history()) == 42 and returns == [0.0, 0.0]
        else:
            assert returns[winner] == 1.0 and returns[1 - winner] == -1.0


def test_observation_planes_from_each_side(game):
    state = play(game, "44")
    mine = state.observation_tensor(0)
    theirs = state.observation_tensor(1)
    assert mine.shape == (2, 6, 7)
    assert mine[0, 5, 3] == 1 and mine[1, 4, 3] == 1  # X bottom, O above it (row 0 = top)
    assert np.array_equal(mine[0], theirs[1]) and np.array_equal(mine[1], theirs[0])
    assert mine.sum() == 2


def test_notation_round_trip_and_errors(game):
    assert game.parse_moves("4453") == [3, 3, 4, 2]
    assert game.format_moves([3, 3, 4, 2]) == "4453"
    for bad in ("4480", "4a", "-1"):
        with pytest.raises(GameError):
            game.parse_moves(bad)


def test_render_shows_stones_and_result(game):
    text = str(play(game, "1212121"))
    assert text.splitlines()[-1] == "X wins"
    assert text.splitlines()[-3].startswith("X O")
