"""Guarded random play: hand-worked Connect 4 and Lazerbike positions, and seeded matches."""

from __future__ import annotations

import numpy as np
import pytest

from agents import AgentError, make
from agents.guards import BLOCK, SAFE, WIN, parse_guards, play_guarded_games
from engine import load_game
from engine.bits import new_rng
from engine.conformance import check_game
from engine.games.lazerbike import SIZE, state_from_setup
from engine.match import play_match


@pytest.fixture(scope="module")
def connect4():
    return load_game("connect4")


@pytest.fixture(scope="module")
def lazerbike():
    return load_game("lazerbike")


def choices(game, spec: str, state, draws: int = 60, player=None) -> set[int]:
    """Every action a freshly seeded agent picks, over `draws` seeds."""
    return {make(spec, game, seed=seed).step(state.clone(), player) for seed in range(draws)}


def test_parse_guards_and_bad_specs(connect4):
    assert parse_guards("win+block+safe") == WIN | BLOCK | SAFE
    assert parse_guards("safe") == SAFE
    with pytest.raises(AgentError, match="unknown guard 'fly'"):
        make("random:guards=win+fly", connect4)
    with pytest.raises(AgentError, match="unknown option"):
        make("random:guard=win", connect4)


def test_connect4_takes_the_win(connect4):
    # X: d1 e1 f1, O: d2 e2 f2; X to move wins at c1 (2) or g1 (6)
    state = connect4.state_from_history(connect4.parse_moves("445566"))
    assert choices(connect4, "random:guards=win", state) == {2, 6}
    assert len(choices(connect4, "random", state)) > 2  # unguarded play misses it


def test_connect4_blocks_the_only_threat(connect4):
    # X: a1 a2 a3, O: d1 e1; O to move must play column a (0)
    state = connect4.state_from_history(connect4.parse_moves("14151"))
    assert choices(connect4, "random:guards=block", state) == {0}
    assert choices(connect4, "random:guards=win+block+safe", state) == {0}


def test_connect4_does_not_play_under_a_threat(connect4):
    # X: c1 f1 a2 d2 e2 f2 threatens g2; O: a1 b1 d1 e1 c2 to move. O on g1 lets X win at g2;
    # every other column is harmless.
    state = connect4.state_from_history(connect4.parse_moves("31621445536"))
    assert state.current_player() == 1
    assert choices(connect4, "random:guards=block", state, draws=120) == {0, 1, 2, 3, 4, 5}
    assert 6 in choices(connect4, "random", state, draws=120)


def test_lazerbike_boxed_bike_takes_the_open_way(lazerbike):
    # bike A in the north-west corner heading north: forward and left leave the board
    state = state_from_setup(lazerbike, [(0, 0, "N"), (12, 12, "W")])
    assert choices(lazerbike, "random:guards=safe", state, player=0) == {2}
    # bike A at (5, 5) heading north, trails ahead (4, 5) and to its left (5, 4): only right
    state = state_from_setup(lazerbike, [(5, 5, "N"), (12, 12, "W")])
    state.array[4 * SIZE + 5] = 2
    state.array[5 * SIZE + 4] = 2
    assert choices(lazerbike, "random:guards=safe", state, player=0) == {2}
    assert choices(lazerbike, "random", state, player=0) == {0, 1, 2}
    # boxed on all three sides: nothing is safe, so every action stays possible
    state.array[5 * SIZE + 6] = 2
    assert choices(lazerbike, "random:guards=safe", state, player=0) == {0, 1, 2}


def test_guarded_random_scores_higher(connect4, lazerbike):
    result = play_match(
        connect4,
        lambda s: make("random:guards=win+block", connect4, seed=s),
        lambda s: make("random", connect4, seed=s + 1000),
        40,
        seed=3,
    )
    assert result.score >= 0.75, result
    result = play_match(
        lazerbike,
        lambda s: make("random:guards=safe", lazerbike, seed=s),
        lambda s: make("random", lazerbike, seed=s + 1000),
        40,
        seed=3,
        start="random",
    )
    assert result.score >= 0.75, result


def test_compiled_guarded_games(connect4, lazerbike):
    """The data-generation loop: guarded seat 0 beats random seat 1, and seats swap cleanly."""
    start = connect4.new_initial_state().array
    _, totals = play_guarded_games(connect4, start, [WIN | BLOCK, 0], 400, new_rng(5))
    assert totals[0] > 200  # mean return > 0.5 for the guarded side
    _, totals = play_guarded_games(connect4, start, [0, WIN | BLOCK], 400, new_rng(5))
    assert totals[1] > 200
    start = lazerbike.new_initial_state().array
    steps, totals = play_guarded_games(lazerbike, start, [SAFE, SAFE], 200, new_rng(1))
    plain, _ = play_guarded_games(lazerbike, start, [0, 0], 200, new_rng(1))
    assert steps > 2 * plain  # safe bikes survive much longer than random ones
    assert np.all(np.abs(totals) <= 200)


@pytest.mark.parametrize("name,scenario", [("connect4", {}), ("lazerbike", {"start": "random"})])
def test_games_still_conform(name, scenario):
    """The evaluate kernels were added to these modules; the protocol must still hold."""
    check_game(load_game(name), 1, **scenario)
