"""The core's NETWORK leaf (weights passed at run time, not compiled in) and flat results."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from agents.search.core import AlphaBeta
from engine import load_game
from engine.games.connect4 import evaluate as connect4_evaluate


@njit(cache=True)
def scaled_heuristic(s, player, weights):
    return weights[0] * connect4_evaluate(s, player)


@pytest.mark.slow
def test_network_leaf_reads_its_weights_at_run_time():
    game = load_game("connect4")
    state = game.state_from_history(game.parse_moves("4453"))
    plain = AlphaBeta(game, "heuristic", max_depth=3).search(state.array, 0, 3)
    same = AlphaBeta(game, "network", network=scaled_heuristic, weights=np.array([1.0]),
                     max_depth=3).search(state.array, 0, 3)  # fmt: skip
    assert (same.value, same.move) == (plain.value, plain.move)
    flipped = AlphaBeta(game, "network", network=scaled_heuristic, weights=np.array([-0.5]),
                        max_depth=3).search(state.array, 0, 3)  # fmt: skip
    assert flipped.value != plain.value  # the weights reached the leaves


def test_flat_results_score_a_win_one_at_any_distance():
    game = load_game("connect4")
    state = game.state_from_history(game.parse_moves("4455"))  # a win on the third ply
    out = AlphaBeta(game, "heuristic", max_depth=5, result_scale=1.0).search(state.array, 0, 5)
    assert out.value == 1.0 and out.move in (2, 5)
    scaled = AlphaBeta(game, "heuristic", max_depth=5).search(state.array, 0, 5)
    assert scaled.value == 1000.0 - 3
