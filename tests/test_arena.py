"""The arena's sequential test: it accepts a clearly stronger bot early and never a coin flip."""

from __future__ import annotations

from engine import parse_game_spec
from models.arena import expected_score, play_arena, sprt_llr


def test_the_likelihood_ratio_points_the_right_way():
    assert sprt_llr([1.0] * 20, 0.0, 40.0) > 2.9  # log(0.95 / 0.05): accept
    assert sprt_llr([0.0] * 20, 0.0, 40.0) < -2.9
    assert abs(sprt_llr([1.0, 0.0] * 10, 0.0, 40.0)) < 1.0
    assert abs(expected_score(0.0) - 0.5) < 1e-12 and expected_score(400.0) > 0.9


def test_a_stronger_bot_is_accepted_before_the_budget_is_spent():
    game = parse_game_spec("connect4")
    result = play_arena(game, "mcts:sims=300", "random", max_games=40, seed=3)
    assert result.accepted and result.reason == "sprt: accepted"
    assert result.games < 40 and result.games % 2 == 0  # pairs: each opening from both sides
    assert {r["swapped"] for r in result.rows} == {False, True}


def test_equal_bots_are_not_accepted():
    game = parse_game_spec("connect4")
    result = play_arena(game, "random", "random", max_games=12, seed=1)
    assert not result.accepted and result.games <= 12
