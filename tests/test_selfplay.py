"""MCTS self-play: visit policies, outcomes, greedy play after the temperature plies, openings."""

import json

import numpy as np
import pytest

from engine import load_game
from features.errors import DataError
from features.generate import selfplay
from features.schema import SCHEMAS

SIMS = 24


@pytest.fixture(scope="module")
def connect4():
    return load_game("connect4")


@pytest.fixture(scope="module")
def c4_selfplay(connect4):
    params = {"x": 3, "agent": f"mcts:sims={SIMS}", "temperature_plies": 4, "opening": 2}
    return selfplay.generate_shard(connect4, params, 13, 0, 0)


def test_policies_outcomes_and_states(connect4, c4_selfplay):
    for name, table in c4_selfplay.items():
        assert table.schema.equals(SCHEMAS[name]), name
    games = {g["game_id"]: g for g in c4_selfplay["games"].to_pylist()}
    assert len(games) == 3
    positions = c4_selfplay["positions"].to_pylist()
    for pos in positions:
        g = games[pos["game_id"]]
        policy, mask = np.array(pos["policy"]), np.array(pos["legal_mask"])
        assert policy.sum() == pytest.approx(1.0, abs=1e-6)
        assert (policy[mask == 0] == 0).all()
        visits = policy * SIMS  # visit shares of a SIMS-simulation root
        assert np.allclose(visits, np.round(visits), atol=1e-4)
        assert pos["outcome"] == g["returns"][pos["player"]]
        state = connect4.state_from_history(g["history"][: pos["ply"]], g["seed"])
        assert pos["state"] == state.array.tolist()
        assert pos["player"] == state.current_player()
        assert pos["action"] == g["history"][pos["ply"]]
    for g in games.values():
        assert json.loads(g["scenario"]) == {"opening": 2}
        final = connect4.state_from_history(g["history"], g["seed"], opening=2)
        assert final.is_terminal() and final.returns() == g["returns"]
        plies = [p["ply"] for p in positions if p["game_id"] == g["game_id"]]
        assert plies == list(range(2, g["length"]))  # every move after the opening


def test_greedy_without_noise_plays_the_most_visited(connect4):
    params = {"x": 2, "agent": f"mcts:sims={SIMS}", "temperature_plies": 0, "eps": 0.0}
    tables = selfplay.generate_shard(connect4, params, 4, 0, 0)
    for pos in tables["positions"].to_pylist():
        assert pos["action"] == int(np.argmax(pos["policy"]))


def test_same_seed_same_rows(connect4, c4_selfplay):
    params = {"x": 3, "agent": f"mcts:sims={SIMS}", "temperature_plies": 4, "opening": 2}
    again = selfplay.generate_shard(connect4, params, 13, 0, 0)
    for name in SCHEMAS:
        assert repr(again[name].to_pylist()) == repr(c4_selfplay[name].to_pylist()), name


def test_chance_steps_are_sampled_not_positions():
    pig = load_game("pig", target=12)
    tables = selfplay.generate_shard(pig, {"x": 1, "agents": ["mcts:sims=16"]}, 2, 0, 0)
    game = tables["games"].to_pylist()[0]
    positions = tables["positions"].to_pylist()
    state = pig.new_initial_state(seed=game["seed"])
    chance_steps = 0
    for ply, action in enumerate(game["history"]):
        if state.is_chance_node():
            chance_steps += 1
            assert all(p["ply"] != ply for p in positions)
        state.apply_action(action)
    assert chance_steps > 0 and len(positions) == game["length"] - chance_steps
    assert tables["sequences"].column("length").to_pylist() == [len(positions)] * 2


@pytest.mark.parametrize(
    "params",
    [
        {"eps": 1.5},
        {"alpha": 0},
        {"temperature": 0},
        {"temperature_plies": -1},
        {"agent": "random"},  # no search policy
        {"agent": "nosuch"},
        {"agents": ["mcts", "random"]},
        {"y": 3},
    ],
)
def test_bad_params_are_data_errors(connect4, params):
    with pytest.raises(DataError):
        selfplay.validate_params(connect4, params)


def test_simultaneous_games_are_refused():
    with pytest.raises(DataError, match="simultaneous"):
        selfplay.validate_params(load_game("lazerbike"), {})


def openings_replay(game, tables) -> list[int]:
    """Each game's own number of opening plies; asserts that its row replays to its result and
    that its positions start right after its opening."""
    positions = tables["positions"].to_pylist()
    openings = []
    for g in tables["games"].to_pylist():
        scenario = json.loads(g["scenario"])
        final = game.state_from_history(g["history"], g["seed"], **scenario)
        assert final.is_terminal() and final.returns() == g["returns"]
        plies = [p["ply"] for p in positions if p["game_id"] == g["game_id"]]
        assert plies and plies[0] == scenario.get("opening", 0) and plies[-1] == g["length"] - 1
        openings.append(scenario.get("opening", 0))
    return openings


def test_an_opening_range_draws_each_games_plies_and_replays(connect4):
    params = {"x": 10, "agent": "mcts:sims=8", "temperature_plies": 0, "opening_max": 6}
    tables = selfplay.generate_shard(connect4, params, 3, 0, 0)
    openings = openings_replay(connect4, tables)
    assert all(0 <= k <= 6 for k in openings) and len(set(openings)) >= 4, openings
    assert 0 in openings  # a game drawn without random plies starts at the beginning
    again = selfplay.generate_shard(connect4, params, 3, 0, 0)
    assert again["games"].equals(tables["games"])
    narrow = selfplay.generate_shard(connect4, {**params, "opening": 5}, 3, 0, 0)
    assert set(openings_replay(connect4, narrow)) <= {5, 6}


@pytest.mark.parametrize(
    "params", [{"opening": 4, "opening_max": 2}, {"opening_max": -1}, {"opening_max": "wide"}]
)
def test_bad_opening_ranges_are_data_errors(connect4, params):
    with pytest.raises(DataError, match="opening"):
        selfplay.validate_params(connect4, {"x": 2, **params})
