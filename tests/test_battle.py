"""Battle generation and the shared table builder: hand-worked sequences and positions, every
row replayed against the engine, a-posteriori scores recomputed from the games table."""

import json

import numpy as np
import pytest

from engine import load_game
from features.errors import DataError
from features.generate import battle
from features.generate.tables import GameTable, PositionTable
from features.schema import SCHEMAS


@pytest.fixture(scope="module")
def connect4():
    return load_game("connect4")


@pytest.fixture(scope="module")
def c4_battle(connect4):
    return battle.generate_shard(connect4, {"x": 3, "y": 5, "k": 3}, 11, 0, 0)


def rows(table):
    return table.to_pylist()


def same(a, b):
    """Equal tables, NaN equal to NaN (action scores)."""
    return a.schema.equals(b.schema) and repr(a.to_pylist()) == repr(b.to_pylist())


def check_tables(game, tables, turn_based=True):
    """Schemas; every game replays to a terminal state with its returns; sequences rebuild the
    history; (turn-based) every position is the state its game reached at that ply."""
    for name, table in tables.items():
        assert table.schema.equals(SCHEMAS[name]), name
    games = {g["game_id"]: g for g in rows(tables["games"])}
    assert len(games) == tables["games"].num_rows
    n = game.num_players
    for g in games.values():
        final = game.state_from_history(g["history"], g["seed"], **json.loads(g["scenario"]))
        assert final.is_terminal()
        assert np.allclose(final.returns(), g["returns"])
    for seq in rows(tables["sequences"]):
        g = games[seq["game_id"]]
        assert seq["num_players"] == n and len(seq["actions"]) == seq["length"] * n
        assert seq["outcome"] == pytest.approx(g["returns"][seq["player"]])
        if turn_based and not game.has_chance:
            steps = np.array(seq["actions"]).reshape(-1, n)
            assert (steps != game.neutral_action).sum(axis=1).tolist() == [1] * len(steps)
            assert steps.max(axis=1).tolist() == g["history"]
    if not turn_based:
        return
    for pos in rows(tables["positions"]):
        g = games[pos["game_id"]]
        start = json.loads(g["scenario"])
        state = game.state_from_history(g["history"][: pos["ply"]], g["seed"], **start)
        assert pos["state"] == state.array.tolist()
        assert state.current_player() == pos["player"]
        assert pos["action"] == g["history"][pos["ply"]]
        assert pos["outcome"] == pytest.approx(g["returns"][pos["player"]])
        assert pos["legal_mask"] == state.legal_actions_mask().tolist()
        assert np.allclose(pos["features"], state.observation_tensor(pos["player"]).ravel())
        assert not np.isnan(pos["action_scores"][pos["action"]])


def test_sequences_are_step_major_with_neutral_padding(connect4):
    table = GameTable(connect4, "battle", first_game_id=40)
    assert table.add([3, 4, 2], [0.0, 0.0], seed=0, scenario={}, agents=["a", "b"]) == 40
    games, sequences = table.tables()
    assert games.column("length").to_pylist() == [3]
    assert games.column("history").to_pylist() == [[3, 4, 2]]
    # steps [[3, -1], [-1, 4], [2, -1]], flattened step-major, one row per player
    assert sequences.column("actions").to_pylist() == [[3, -1, -1, 4, 2, -1]] * 2
    assert sequences.column("player").to_pylist() == [0, 1]
    assert sequences.column("length").to_pylist() == [3, 3]
    assert sequences.schema.equals(SCHEMAS["sequences"])


def test_sequences_skip_chance_steps_and_keep_laps():
    pig = load_game("pig")
    # P0 rolls, die shows 4 (outcome 3), P0 holds; P1 rolls, die shows 1 (outcome 0)
    games, sequences = _one_game(pig, [0, 3, 1, 0, 0])
    assert games.column("length").to_pylist() == [5]
    assert sequences.column("length").to_pylist() == [3, 3]
    assert sequences.column("actions").to_pylist()[0] == [0, -1, 1, -1, -1, 0]
    bikes = load_game("lazerbike")
    games, sequences = _one_game(bikes, [0, 0])  # one simultaneous lap: both go straight
    assert games.column("length").to_pylist() == [1]
    assert sequences.column("actions").to_pylist() == [[0, 0], [0, 0]]


def _one_game(game, history):
    table = GameTable(game, "battle", 0)
    table.add(history, [0.0] * game.num_players, seed=0, scenario={}, agents=["a"] * 2)
    return table.tables()


def test_immediate_wins_and_legal_mask_by_hand(connect4):
    positions = PositionTable(connect4)
    # X holds columns 1-3 of the bottom row (0-based), O stacked above: X wins at 0 and 4
    state = connect4.state_from_history([1, 1, 2, 2, 3, 3])
    positions.add(5, 6, 0, state, 0, 1.0, np.full(7, np.nan))
    # "121212" (1-based columns): X to move wins in column 0 only
    state = connect4.state_from_history(connect4.parse_moves("121212"))
    positions.add(6, 6, 0, state, 0, 1.0, np.full(7, np.nan))
    table = positions.table()
    assert table.column("immediate_wins").to_pylist() == [2, 1]
    assert table.column("legal_mask").to_pylist()[0] == [1] * 7
    assert table.column("policy").null_count == 2
    assert table.schema.equals(SCHEMAS["positions"])


def test_tables_are_real_games(connect4, c4_battle):
    check_tables(connect4, c4_battle)
    assert c4_battle["games"].num_rows == 15  # 3 games x 5 terminal states
    assert set(c4_battle["games"].column("technique").to_pylist()) == {"battle"}
    agents = c4_battle["games"].column("agents").to_pylist()[0]
    assert agents == ["battle:k=3", battle.DEFAULT_OPPONENT]


def test_action_scores_are_branch_means(c4_battle):
    """Recomputed from the games table: the mean return of every game through the position's
    prefix and that action, NaN where no game went; at most k actions per position."""
    games = rows(c4_battle["games"])
    positions = rows(c4_battle["positions"])
    assert positions
    branched = 0
    for pos in positions:
        mine = next(g for g in games if g["game_id"] == pos["game_id"])
        prefix, unit = mine["history"][: pos["ply"]], mine["seed"]  # one seed per explored game
        below = [g for g in games if g["seed"] == unit and g["history"][: pos["ply"]] == prefix]
        scores = np.array(pos["action_scores"], dtype=np.float64)
        for a in range(7):
            through = [g["returns"][0] for g in below if g["history"][pos["ply"]] == a]
            if through:
                assert scores[a] == pytest.approx(np.mean(through))
            else:
                assert np.isnan(scores[a])
        assert 1 <= np.isfinite(scores).sum() <= 3
        branched += np.isfinite(scores).sum() > 1
        # the recorded line is the best final state below the position
        assert pos["outcome"] == max(g["returns"][0] for g in below)
    assert branched > 0


def test_reaches_z_wins_against_a_weak_opponent(connect4):
    tables = battle.generate_shard(connect4, {"x": 1, "y": 1, "z": 3, "agents": "random"}, 3, 0, 0)
    returns = tables["games"].column("returns").to_pylist()
    assert sum(r[0] > r[1] for r in returns) >= 3
    assert tables["games"].schema.metadata[b"gridbots.gave_up"] == b"0"
    # the game stopped at the third win: the last game row is a win
    assert returns[-1][0] > returns[-1][1]


def test_gives_up_after_the_budget(connect4):
    params = {"x": 2, "y": 1, "z": 10_000, "budget": 4, "k": 7}
    tables = battle.generate_shard(connect4, params, 3, 0, 100)
    assert tables["games"].num_rows == 8
    assert tables["games"].schema.metadata[b"gridbots.gave_up"] == b"2"
    assert tables["games"].column("game_id").to_pylist() == list(range(100, 108))


def test_same_seed_same_rows_and_shards_split_by_units(connect4, c4_battle):
    again = battle.generate_shard(connect4, {"x": 3, "y": 5, "k": 3}, 11, 0, 0)
    for name in SCHEMAS:
        assert same(again[name], c4_battle[name]), name
    other = battle.generate_shard(connect4, {"x": 3, "y": 5, "k": 3}, 12, 0, 0)
    assert not other["games"].equals(c4_battle["games"])
    whole = battle.generate_shard(connect4, {"x": 4, "y": 2, "shard_size": 4}, 5, 0, 0)
    parts = [
        battle.generate_shard(connect4, {"x": 4, "y": 2, "shard_size": 2}, 5, shard, 0)
        for shard in (0, 1)
    ]
    histories = [h for p in parts for h in p["games"].column("history").to_pylist()]
    assert histories == whole["games"].column("history").to_pylist()


def test_simultaneous_and_chance_games():
    bikes = load_game("lazerbike")
    tables = battle.generate_shard(bikes, {"x": 1, "y": 3, "k": 2}, 1, 0, 0)
    check_tables(bikes, tables, turn_based=False)
    assert tables["games"].num_rows == 3 and tables["positions"].num_rows > 0
    pig = load_game("pig", target=15)
    tables = battle.generate_shard(pig, {"x": 2, "y": 2, "agents": ["heuristic"]}, 1, 0, 0)
    check_tables(pig, tables)
    assert set(tables["positions"].column("player").to_pylist()) == {0}


@pytest.mark.parametrize(
    "params",
    [
        {"y": 0},
        {"k": 0},
        {"x": -1},
        {"z": "many"},
        {"player": 2},
        {"budget": 2, "y": 3},
        {"agents": ["nosuchagent"]},
        {"agents": ["random", "random", "random"]},
        {"w": 0.5},
        {"scenario": {"nosuchoption": 1}},
    ],
)
def test_bad_params_are_data_errors(connect4, params):
    with pytest.raises(DataError):
        battle.validate_params(connect4, params)


def test_defaults_validate(connect4):
    p = battle.validate_params(connect4, {"games": 7, "agents": None})
    assert p["x"] == 7 and p["agents"] == [battle.DEFAULT_OPPONENT] * 2
    assert "games" not in p
