"""Randomized generation: every row checked against a replay through the State API."""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine import CHANCE, SIMULTANEOUS, load_game, parse_game_spec
from features.errors import DataError
from features.generate import parse_params
from features.schema import initial_state


def _shard(name: str, seed: int = 3, shard: int = 0, first: int = 0, **options):
    game = parse_game_spec(name)
    module, params = parse_params(game, "randomized", options)
    return game, params, module.generate_shard(game, params, seed, shard, first)


def _replay(game, history, row=None):
    """States before every step, plus the (mover, step actions) of every step, from the games
    row's own seeded scenario."""
    state = initial_state(game, row["seed"], row["scenario"]) if row else game.new_initial_state()
    steps, i = [], 0
    while i < len(history):
        before = state.clone()
        player = state.current_player()
        if player == SIMULTANEOUS:
            lap = history[i : i + game.num_players]
            state.apply_actions(lap)
            i += game.num_players
        else:
            lap = [history[i]]
            state.apply_action(history[i])
            i += 1
        steps.append((before, player, lap))
    return state, steps


def _check_tables(game, params, tables):
    games = tables["games"].to_pylist()
    sequences = tables["sequences"].to_pylist()
    positions = tables["positions"].to_pylist()
    n = game.num_players
    by_id = {row["game_id"]: row for row in games}
    assert len(by_id) == len(games) == len(sequences) // n
    for row, seq_rows in zip(games, zip(*[iter(sequences)] * n, strict=True), strict=True):
        final, steps = _replay(game, row["history"], row)
        assert final.is_terminal() and row["length"] == len(steps)
        np.testing.assert_allclose(row["returns"], final.returns())
        matrix = []
        for _, player, lap in steps:
            if player == CHANCE:
                continue
            if player == SIMULTANEOUS:
                matrix += lap
            else:
                matrix += [lap[0] if p == player else game.neutral_action for p in range(n)]
        for p, seq in enumerate(seq_rows):
            assert (seq["game_id"], seq["player"], seq["num_players"]) == (row["game_id"], p, n)
            assert seq["actions"] == matrix and seq["length"] == len(matrix) // n
            assert seq["outcome"] == pytest.approx(row["returns"][p])
    y = params["y"]
    for pos in positions:
        first = by_id[pos["game_id"]]
        _, steps = _replay(game, first["history"], first)
        before, player, lap = steps[pos["ply"]]
        q = pos["player"]
        assert not before.is_terminal() and player in (q, SIMULTANEOUS)
        assert pos["state"] == before.array.tolist()
        assert pos["legal_mask"] == before.legal_actions_mask(q).tolist()
        assert pos["features"] == pytest.approx(before.observation_tensor(q).ravel().tolist())
        assert pos["action"] == (lap[q] if player == SIMULTANEOUS else lap[0])
        # the Y games of this state share its prefix; outcome is their mean for q
        ids = [i for i in range(pos["game_id"], pos["game_id"] + y) if i in by_id]
        cut = sum(len(s[2]) for s in steps[: pos["ply"]])
        for i in ids:
            assert by_id[i]["history"][:cut] == first["history"][:cut]
        mean = np.mean([by_id[i]["returns"][q] for i in ids])
        assert pos["outcome"] == pytest.approx(mean, abs=1e-6)
        scores = np.array(pos["action_scores"], dtype=float)
        legal = before.legal_actions(q)
        scored = {a for a in range(game.num_actions) if not math.isnan(scores[a])}
        # round robin: min(Y, #legal) distinct actions explored, each scored by its games
        assert scored <= set(legal) and len(scored) == min(len(ids), len(legal))
        first_moves = {}
        for i in ids:
            _, game_steps = _replay(game, by_id[i]["history"], by_id[i])
            lap = game_steps[pos["ply"]][2]
            action = lap[q] if player == SIMULTANEOUS else lap[0]
            first_moves.setdefault(action, []).append(by_id[i]["returns"][q])
        assert set(first_moves) == scored
        for action, values in first_moves.items():
            assert scores[action] == pytest.approx(np.mean(values), abs=1e-6)
        assert pos["immediate_wins"] == _immediate_wins(game, before, q)
        assert pos["policy"] is None
    return games, positions


def _immediate_wins(game, state, q):
    """q's actions after which the game is over with q strictly above every player of another
    team, whatever the others play in the same lap (no rival team: a positive return)."""

    def won(child):
        if not child.is_terminal():
            return False
        out = child.returns()
        rivals = [p for p in range(game.num_players) if game.teams[p] != game.teams[q]]
        return all(out[q] > out[p] for p in rivals) if rivals else out[q] > 0

    if state.current_player() != SIMULTANEOUS:
        wins = 0
        for a in state.legal_actions():
            child = state.clone()
            child.apply_action(a)
            wins += won(child)
        return wins
    options = [state.legal_actions(p) or [game.neutral_action] for p in range(game.num_players)]
    wins = 0
    for a in options[q]:
        ok = True
        for joint in np.array(np.meshgrid(*options)).T.reshape(-1, game.num_players):
            if joint[q] != a:
                continue
            child = state.clone()
            child.apply_actions([int(v) for v in joint])
            ok &= won(child)
        wins += ok
    return wins


def test_connect4_rows_replay_and_targets_match():
    game, params, tables = _shard("connect4", x=40, y=9)
    games, positions = _check_tables(game, params, tables)
    assert len(games) == 360 and len(positions) == 40
    assert [r["game_id"] for r in games] == list(range(360))
    plies = [p["ply"] for p in positions]
    assert max(plies) > 21 and min(plies) < 10  # random depths, beyond typical game ends
    assert any(p["immediate_wins"] > 0 for p in positions)


def test_simultaneous_game_gives_one_row_per_living_player():
    game, params, tables = _shard("lazerbike", x=6, y=4)
    _, positions = _check_tables(game, params, tables)
    assert len(positions) == 12 and {p["player"] for p in positions} == {0, 1}


def test_lazerbike_walks_begin_at_the_random_starts_matches_play():
    """`scenario` gives every state its own seeded start (a match's `start=random`): each row
    replays from the start its games row names, and the starts differ."""
    game, params, tables = _shard("lazerbike", x=8, y=3, scenario={"start": "random"})
    games, _ = _check_tables(game, params, tables)
    assert {row["scenario"] for row in games} == {'{"start": "random"}'}
    starts = {tuple(initial_state(game, r["seed"], r["scenario"]).array) for r in games}
    assert len(starts) == 8 and tuple(game.new_initial_state().array) not in starts


def test_team_game_rows_count_team_wins():
    """Four bikes in two teams: every row's immediate wins recounted with team semantics."""
    game, params, tables = _shard("lazerbike:players=4,teams=0011", x=30, y=3, z=60)
    _, positions = _check_tables(game, params, tables)
    assert {p["player"] for p in positions} == {0, 1, 2, 3}
    assert any(p["immediate_wins"] > 0 for p in positions)


def test_chance_game_skips_chance_steps_in_sequences():
    game, params, tables = _shard("pig:target=12", x=8, y=3)
    games, _ = _check_tables(game, params, tables)
    seq = tables["sequences"].to_pylist()
    # every roll is followed by a chance step, which sequences leave out
    assert all(s["length"] < g["length"] for s, g in zip(seq[::2], games, strict=True))


def test_deterministic_and_seed_dependent():
    _, _, a = _shard("connect4", x=20, y=3, shard_size=15, seed=5, shard=2, first=100)
    _, _, b = _shard("connect4", x=20, y=3, shard_size=15, seed=5, shard=2, first=100)
    _, _, c = _shard("connect4", x=20, y=3, shard_size=15, seed=6, shard=2, first=100)
    for table in ("games", "sequences"):
        assert a[table].equals(b[table])
    assert a["positions"].column("state").equals(b["positions"].column("state"))
    assert not a["games"].column("history").equals(c["games"].column("history"))
    assert a["games"].column("game_id").to_pylist() == list(range(100, 115))


def test_games_option_sets_exact_total_and_shards():
    game = load_game("connect4")
    module, params = parse_params(game, "randomized", {"games": 25, "y": 4, "shard_size": 8})
    assert params["x"] == 7 and params["states_per_shard"] == 2
    from features.generate import num_shards

    shards = num_shards(module, game, params)
    made = [module.generate_shard(game, params, 0, k, k * 8)["games"].num_rows for k in range(4)]
    assert shards == 4 and made == [8, 8, 8, 1]


@pytest.mark.parametrize(
    "options, message",
    [
        ({"y": 0}, "Y = 0"),
        ({"w": 1.5}, "W = 1.5"),
        ({"agents": "random"}, "--agents"),
        ({"scenario": {"opening": 2}}, "walk is the opening"),
        ({"scenario": "start=random"}, "must be a dict"),
        ({"scenario": {"colour": "red"}}, "scenario"),
    ],
)
def test_bad_params_are_refused(options, message):
    with pytest.raises(DataError, match=message):
        parse_params(load_game("connect4"), "randomized", options)
