"""Imitation generation: agent lines replayed independently, detours with probability W."""

import json

import numpy as np
import pytest

from agents import make
from engine import load_game
from engine.match import play_game
from features.errors import DataError
from features.generate import imitation
from features.generate.tables import game_seeds
from features.schema import SCHEMAS


@pytest.fixture(scope="module")
def connect4():
    return load_game("connect4")


def check_rows(game, tables):
    """Schemas, games that replay to their returns, positions that are their game's states."""
    for name, table in tables.items():
        assert table.schema.equals(SCHEMAS[name]), name
    games = {g["game_id"]: g for g in tables["games"].to_pylist()}
    for g in games.values():
        final = game.state_from_history(g["history"], g["seed"], **json.loads(g["scenario"]))
        assert final.is_terminal() and np.allclose(final.returns(), g["returns"])
    for pos in tables["positions"].to_pylist():
        g = games[pos["game_id"]]
        state = game.state_from_history(g["history"][: pos["ply"]], g["seed"])
        assert pos["state"] == state.array.tolist() and pos["player"] == 0
        assert pos["action"] == g["history"][pos["ply"]]
        assert pos["outcome"] == pytest.approx(g["returns"][0])
        assert pos["policy"] is None
    return games


def test_w0_records_exactly_x_games_played_by_the_agents(connect4):
    specs = ["mcts:sims=20", "random:guards=win"]
    params = {"x": 4, "y": 3, "w": 0.0, "agents": specs}
    tables = imitation.generate_shard(connect4, params, 21, 0, 0)
    games = check_rows(connect4, tables)
    assert len(games) == 4
    for unit, g in enumerate(games.values()):
        # the same seeded agents, played by the engine's own match loop, give the same game
        scenario_seed, agent_seed, _ = game_seeds(21, unit, 3)
        seats = [make(spec, connect4, seed=agent_seed + i) for i, spec in enumerate(specs)]
        assert play_game(connect4, seats, seed=scenario_seed).history() == g["history"]
        assert g["agents"] == specs and g["seed"] == scenario_seed
    # one position per move of the learning player, scored only on the action it played
    positions = tables["positions"].to_pylist()
    assert len(positions) == sum((len(g["history"]) + 1) // 2 for g in games.values())
    for pos in positions:
        scores = np.array(pos["action_scores"], dtype=np.float64)
        assert np.isfinite(scores).sum() == 1 and scores[pos["action"]] == pos["outcome"]


def test_w1_explores_more_games(connect4):
    tables = imitation.generate_shard(connect4, {"x": 3, "y": 4, "w": 1.0}, 5, 0, 0)
    check_rows(connect4, tables)
    assert 3 < tables["games"].num_rows <= 12
    scores = np.array(tables["positions"].column("action_scores").to_pylist(), dtype=np.float64)
    assert (np.isfinite(scores).sum(axis=1) == 2).any()  # a detour of the learning player


def test_z_wins_for_the_learning_player(connect4):
    params = {"x": 2, "y": 1, "z": 2, "w": 1.0, "agents": ["random", "random:guards=win"]}
    tables = imitation.generate_shard(connect4, params, 8, 0, 0)
    games = tables["games"].to_pylist()
    assert tables["games"].schema.metadata[b"gridbots.gave_up"] == b"0"
    for seed in {g["seed"] for g in games}:
        assert sum(g["returns"][0] > 0 for g in games if g["seed"] == seed) >= 2


def test_same_seed_same_rows_and_a_simultaneous_game(connect4):
    one = imitation.generate_shard(connect4, {"x": 2, "w": 0.5}, 9, 1, 0)
    two = imitation.generate_shard(connect4, {"x": 2, "w": 0.5}, 9, 1, 0)
    for name in SCHEMAS:
        assert repr(one[name].to_pylist()) == repr(two[name].to_pylist()), name
    bikes = load_game("lazerbike")
    tables = imitation.generate_shard(bikes, {"x": 1, "y": 3, "w": 1.0}, 2, 0, 0)
    for name, table in tables.items():
        assert table.schema.equals(SCHEMAS[name]), name
    assert tables["games"].num_rows == 3
    lengths = tables["games"].column("length").to_pylist()
    assert [len(h) for h in tables["games"].column("history").to_pylist()] == [
        2 * n for n in lengths
    ]


def test_rotate_seats_each_agent_in_every_seat_in_turn(connect4):
    specs = ["alphabeta:depth=2", "random:guards=win"]
    params = {"x": 4, "y": 1, "w": 0.0, "agents": specs, "rotate": True}
    tables = imitation.generate_shard(connect4, params, 4, 0, 0)
    games = tables["games"].to_pylist()
    assert [g["agents"] for g in games] == [specs, specs[::-1]] * 2
    for unit, g in enumerate(games):
        scenario_seed, agent_seed, _ = game_seeds(4, unit, 3)
        order = specs if unit % 2 == 0 else specs[::-1]
        seats = [make(spec, connect4, seed=agent_seed + i) for i, spec in enumerate(order)]
        assert play_game(connect4, seats, seed=scenario_seed).history() == g["history"]
    # the learner (seat 0's agent) moves with its agent: its positions are the other seat's
    by_game = {g["game_id"]: unit % 2 for unit, g in enumerate(games)}
    positions = tables["positions"].to_pylist()
    assert {(p["game_id"], p["player"]) for p in positions} == set(by_game.items())
    assert imitation.seating(["a", "b", "c"], 0, 4) == (["c", "a", "b"], 1)


@pytest.mark.parametrize(
    "params",
    [{"w": 1.5}, {"w": -0.1}, {"w": "often"}, {"y": 0}, {"k": 2}, {"agents": ["bogus:x=1"]},
     {"rotate": "yes"}],
)  # fmt: skip
def test_bad_params_are_data_errors(connect4, params):
    with pytest.raises(DataError):
        imitation.validate_params(connect4, params)
