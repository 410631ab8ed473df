"""Hierarchical portfolio search on tactics: turn-level choices on the shared alpha-beta core."""

from __future__ import annotations

import pytest

from agents import AgentError, make
from engine import load_game, parse_game_spec
from engine.match import play_game
from tests.tactics_positions import L, act_as, position


def test_a_winning_script_is_found_and_played_out():
    # K next to the last enemy, a 2-health mage: a Sword on e4 ends the game
    state = position([(0, "K", "e5"), (1, "M", "e4")], hands={0: (L.SWORD, L.MOVE)})
    act_as(state, 0)
    state.array[L.unit_base(1) + L.HP] = 2
    agent = make("hps:depth=1,eval=heuristic", state.game, seed=0)
    assert state.action_to_string(agent.step(state)) == "sword@e4"
    assert agent.last.value == pytest.approx(1.0) and agent.last.move == 0  # attack


def test_the_script_plays_the_rest_of_its_turn_without_a_new_search():
    game = load_game("tactics", units=2)
    state = game.new_initial_state(seed=5)
    while state.is_chance_node():
        state.apply_action(state.chance_outcomes()[0][0])
    agent = make("hps:depth=2", game, seed=1)
    first = agent.last
    unit = int(state.array[L.CUR])
    while int(state.array[L.CUR]) == unit and not state.is_terminal():
        if state.is_chance_node():
            state.apply_action(state.chance_outcomes()[0][0])
            continue
        state.apply_action(agent.step(state))
        first = first or agent.last
        assert agent.last is first  # one search for the whole turn


@pytest.mark.parametrize("evaluation", ["playout", "heuristic"])
def test_plays_whole_games(evaluation):
    game = load_game("tactics", units=1)
    seats = [make(f"hps:depth=2,eval={evaluation}", game, seed=0), make("random", game, seed=1)]
    final = play_game(game, seats, seed=3)
    assert final.is_terminal()


def test_bad_specs_are_refused():
    game = load_game("tactics", units=1)
    for spec in ("hps:eval=magic", "hps:depth=99", "hps:speed=3", "hps:eval=onnx:/nonexistent"):
        with pytest.raises(AgentError):
            make(spec, game)
    with pytest.raises(AgentError):
        make("hps", load_game("connect4"))


@pytest.mark.slow
def test_playout_weighted_targets_and_a_cell_pooled_network(tmp_path):
    """value-planes' playout_weight blends each row's result with the portfolio's scripted
    playout from that position, seen from that row's side; pool=mean averages the cell
    encoder's codes, so the network cannot tell where on the board a unit stands."""
    import numpy as np

    from features import encode as enc
    from features.errors import DataError
    from features.store import generate_dataset, load_dataset
    from models import value_mlp
    from models.base import ModelError

    spec = "tactics:units=1"
    game = parse_game_spec(spec)
    generate_dataset(tmp_path / "data", spec, "randomized", {"x": 6, "y": 2}, seed=1)
    positions = load_dataset(tmp_path / "data", "positions")
    plain = enc.value_planes(positions, game)
    half = enc.value_planes(positions, game, playout_weight=0.5)
    states = enc.list_matrix(positions.column("state"), len(positions["state"][0]), np.int64)
    playouts = np.array([game.portfolio.playout(s, side) for s in states for side in (0, 1)])
    assert np.allclose(half["outcome"], 0.5 * plain["outcome"] + 0.5 * playouts)
    assert np.array_equal(half["planes"], plain["planes"])
    assert len(set(playouts.tolist())) > 1  # the playouts tell positions apart
    with pytest.raises(DataError, match="playout"):
        enc.value_planes(load_dataset(_c4_data(tmp_path), "positions"),
                         parse_game_spec("connect4"), playout_weight=0.5)  # fmt: skip
    with pytest.raises(DataError, match="playout_weight"):
        enc.value_planes(positions, game, playout_weight=1.5)

    params = {"layers": 1, "width": 8, "epochs": 1, "cell_encoder": 4, "pool": "mean",
              "holdout": 0.3}  # fmt: skip
    result = value_mlp.train(half, {"encoding": "value-planes", "game": spec}, params,
                             tmp_path / "model")  # fmt: skip
    from agents.onnx.runtime import open_session

    session, meta = open_session(result.artifact)
    assert meta["gridbots.pool"] == "mean"
    x = half["planes"][:8]
    cells = np.random.default_rng(0).permutation(x.shape[2] * x.shape[3])
    moved = x.reshape(8, x.shape[1], -1)[:, :, cells].reshape(8, -1)
    name = session.get_inputs()[0].name
    here = session.run(None, {name: x.reshape(8, -1)})[0]
    there = session.run(None, {name: moved})[0]
    assert np.allclose(here, there, atol=1e-5) and np.ptp(here) > 0
    with pytest.raises(ModelError, match="cell_encoder"):
        value_mlp.train(half, {"encoding": "value-planes", "game": spec},
                        {**params, "cell_encoder": 0}, tmp_path / "bad")  # fmt: skip


def _c4_data(tmp_path):
    from features.store import generate_dataset

    folder = tmp_path / "c4"
    generate_dataset(folder, "connect4", "randomized", {"x": 3, "y": 1}, seed=1)
    return folder
