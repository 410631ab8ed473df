"""Pig: hand-worked turns, the step cap, chance outcomes, protocol conformance, and random play
measured against an exact value computed here by solving the game's Markov chain."""

from __future__ import annotations

import numpy as np
import pytest

from engine import load_game
from engine.bits import new_rng
from engine.conformance import check_game
from engine.loops import play_random_games
from engine.protocol import CHANCE, TERMINAL, GameError, IllegalActionError

ROLL, HOLD = 0, 1


def die(face: int) -> int:
    """The chance outcome id of a die face."""
    return face - 1


def play(state, actions: list[int]) -> None:
    for action in actions:
        state.apply_action(action)


def test_roll_six_then_one_loses_the_turn_total():
    state = load_game("pig").new_initial_state()
    assert state.current_player() == 0 and state.legal_actions() == [ROLL, HOLD]
    play(state, [ROLL, die(6)])
    assert state.current_player() == 0  # same player decides again
    assert state.observation_tensor(0).tolist() == pytest.approx([0, 0, 6 / 50, 1])
    play(state, [ROLL, die(1)])
    assert state.current_player() == 1
    assert state.observation_tensor(1).tolist() == [0, 0, 0, 1]
    assert state.observation_tensor(0).tolist() == [0, 0, 0, 0]
    assert "last die 1" in str(state)


def test_hold_banks_the_turn_total_and_passes():
    state = load_game("pig").new_initial_state()
    play(state, [ROLL, die(4), ROLL, die(5), HOLD])
    assert state.current_player() == 1
    # player 1's view: opponent holds 9 of 50, nothing on the table, its turn
    assert state.observation_tensor(1).tolist() == pytest.approx([0, 9 / 50, 0, 1])
    play(state, [ROLL, die(3), HOLD, ROLL, die(1)])
    assert state.current_player() == 1  # player 0 lost an empty turn total
    assert state.observation_tensor(1).tolist() == pytest.approx([3 / 50, 9 / 50, 0, 1])


def test_reaching_the_target_wins_only_when_banked():
    state = load_game("pig", target=10).new_initial_state()
    play(state, [ROLL, die(6), ROLL, die(4)])
    assert state.current_player() == 0  # 10 on the table is not a win yet
    state.apply_action(HOLD)
    assert state.is_terminal() and state.returns() == [1.0, -1.0]
    assert state.legal_actions() == []
    assert "P0 wins" in str(state)


def test_second_player_can_win():
    state = load_game("pig", target=5).new_initial_state()
    play(state, [ROLL, die(4), HOLD, ROLL, die(5), HOLD])
    assert state.is_terminal() and state.returns() == [-1.0, 1.0]


def test_step_cap_ends_the_game_on_banked_points():
    game = load_game("pig", max_steps=8)
    assert game.max_game_length == 8
    state = game.new_initial_state()
    play(state, [ROLL, die(5), HOLD, ROLL, die(6), ROLL, die(6)])  # 7 steps, P1 has 12 unbanked
    assert state.current_player() == 1
    state.apply_action(ROLL)  # step 8: the cap, while the die is in the air
    assert state.is_terminal() and state.returns() == [1.0, -1.0]


def test_step_cap_draw_and_player_one_lead():
    state = load_game("pig", max_steps=2).new_initial_state()
    play(state, [ROLL, die(3)])
    assert state.is_terminal() and state.returns() == [0.0, 0.0] and "draw" in str(state)
    state = load_game("pig", max_steps=5).new_initial_state()
    play(state, [HOLD, ROLL, die(2), HOLD])
    assert not state.is_terminal()
    state.apply_action(HOLD)
    assert state.is_terminal() and state.returns() == [-1.0, 1.0]


def test_chance_outcomes_and_names():
    state = load_game("pig").new_initial_state()
    assert state.chance_outcomes() == []
    state.apply_action(ROLL)
    assert state.current_player() == CHANCE
    outcomes = state.chance_outcomes()
    assert [a for a, _ in outcomes] == list(range(6))
    assert all(p == pytest.approx(1 / 6) for _, p in outcomes)
    assert sum(p for _, p in outcomes) == pytest.approx(1.0)
    assert [state.action_to_string(a) for a, _ in outcomes] == ["1", "2", "3", "4", "5", "6"]
    assert state.legal_actions(0) == [] and "rolling" in str(state)
    with pytest.raises(IllegalActionError):
        state.apply_action(6)
    assert load_game("pig").action_to_string(0, ROLL) == "roll"
    assert load_game("pig").action_to_string(1, HOLD) == "hold"


@pytest.mark.parametrize(
    "params",
    [
        {"target": 0},
        {"target": -3},
        {"target": "x"},
        {"target": True},
        {"max_steps": 0},
        {"sides": 6},
    ],
)
def test_bad_params_raise(params):
    with pytest.raises(GameError):
        load_game("pig", **params)


def test_unknown_scenario_option_raises():
    with pytest.raises(GameError):
        load_game("pig").new_initial_state(level=3)


@pytest.mark.parametrize("target", [1, 10, 50])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_conformance(target, seed):
    check_game(load_game("pig", target=target), seed)


def test_conformance_with_a_tight_cap():
    check_game(load_game("pig", target=100, max_steps=15), 3)


def exact_random_play_value(target: int) -> float:
    """P(first player wins) when both players pick roll/hold uniformly, ignoring the step cap.

    Unknowns V(i, j, k): the chance that the player about to decide wins, with banked i, the
    opponent's banked j and turn total k. A turn total beyond target - i behaves like exactly
    target - i (holding wins either way), which keeps the chain finite; the random policy makes
    the equations linear, so one linear solve gives the exact value.
    """
    index = {}
    for i in range(target):
        for j in range(target):
            for k in range(target - i + 1):
                index[i, j, k] = len(index)
    n = len(index)
    a = np.eye(n)
    b = np.zeros(n)
    for (i, j, k), row in index.items():
        # hold (probability 1/2): bank, win at the target, else the opponent decides
        if i + k >= target:
            b[row] += 0.5
        else:
            b[row] += 0.5
            a[row, index[j, i + k, 0]] += 0.5
        # roll (1/2): a one passes the turn empty; faces 2..6 grow the turn total
        b[row] += 0.5 / 6
        a[row, index[j, i, 0]] += 0.5 / 6
        for face in range(2, 7):
            a[row, index[i, j, min(k + face, target - i)]] -= 0.5 / 6
    return float(np.linalg.solve(a, b)[index[0, 0, 0]])


def test_exact_value_of_a_trivial_target():
    # Target 1 by hand. V: the mover's chance at 0-0 with nothing on the table; W: with at least
    # 1 on the table. Hold or roll a 1 passes 0-0 to the opponent; faces 2..6 reach W.
    #   V = 1/2 (1 - V) + 1/12 (1 - V) + 5/12 W        W = 1/2 + 1/12 (1 - V) + 5/12 W
    # The second gives W = 1 - V/7; then V (1 + 7/12 + 5/84) = 1, so V = 84/138 = 14/23.
    assert exact_random_play_value(1) == pytest.approx(14 / 23, abs=1e-12)


@pytest.mark.parametrize("seed", [11, 12])
def test_random_playouts_match_the_exact_value(seed):
    game = load_game("pig", target=10)
    state = game.new_initial_state()
    games = 200_000
    moves, totals = play_random_games(game, state.array, games, new_rng(seed))
    expected = 2 * exact_random_play_value(10) - 1  # mean return of the first player
    assert totals[0] + totals[1] == 0.0
    assert abs(totals[0] / games - expected) < 4 / np.sqrt(games)
    assert moves / games < 100  # far below the 1000-step cap, so ignoring it is sound
    assert state.current_player() == 0 and game.kernels.current_player(state.array) != TERMINAL
