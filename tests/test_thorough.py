"""Thorough generation: the enumeration matches perft, targets match search play."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from engine import SIMULTANEOUS, parse_game_spec
from engine.loops import count_leaves
from features.errors import DataError
from features.generate import num_shards, parse_params


def _run(spec: str, **options):
    game = parse_game_spec(spec)
    module, params = parse_params(game, "thorough", options)
    shards = [
        module.generate_shard(game, params, 7, k, k << 32)
        for k in range(num_shards(module, game, params))
    ]
    tables = {t: [row for s in shards for row in s[t].to_pylist()] for t in shards[0]}
    return game, tables, shards


def _wins_now(state):
    player, wins = state.current_player(), []
    for a in state.legal_actions():
        child = state.clone()
        child.apply_action(a)
        if child.is_terminal() and child.returns()[player] > 0:
            wins.append(a)
    return wins


@pytest.fixture(scope="module")
def connect4():
    return _run("connect4", x=3, y=2)


@pytest.mark.slow
def test_enumeration_counts_are_perft_numbers(connect4):
    game, tables, shards = connect4
    start = game.new_initial_state().array
    by_ply = Counter(row["ply"] for row in tables["positions"])
    perft = {d: count_leaves(game, start, d) for d in range(4)}
    assert perft == {0: 1, 1: 7, 2: 49, 3: 343}  # DESIGN.md's reference values
    assert dict(by_ply) == perft
    assert len(tables["positions"]) == len(tables["games"]) == 400
    # distinct positions by ply are 1, 7, 49, 238 (OEIS A212693): transpositions kept apart
    assert len({tuple(row["state"]) for row in tables["positions"]}) == 1 + 7 + 49 + 238
    assert [s["positions"].num_rows for s in shards] == [1 + 57] + [57] * 6


def test_targets_are_consistent_with_search_play(connect4):
    game, tables, _ = connect4
    games = {row["game_id"]: row for row in tables["games"]}
    assert len(games) == 400
    for pos in tables["positions"]:
        row = games[pos["game_id"]]
        state = game.state_from_history(row["history"][: pos["ply"]])
        assert pos["state"] == state.array.tolist() and pos["player"] == state.current_player()
        assert row["history"][pos["ply"]] == pos["action"]
        final = game.state_from_history(row["history"])
        assert final.is_terminal() and final.returns() == row["returns"]
        assert pos["outcome"] == row["returns"][pos["player"]]
        scores = pos["action_scores"]
        assert scores[pos["action"]] == pos["outcome"]
        legal = state.legal_actions()
        assert [not math.isnan(v) for v in scores] == [a in legal for a in range(7)]
        assert all(v in (-1.0, 0.0, 1.0) for v in scores if not math.isnan(v))
        assert pos["legal_mask"] == state.legal_actions_mask().tolist()


def test_search_play_never_misses_a_win_or_a_forced_block(connect4):
    """Depth 2: a player takes an immediate win, and blocks a single threat when it can."""
    game, tables, _ = connect4
    checked = 0
    for row in tables["games"][::4]:
        state = game.new_initial_state()
        for ply, action in enumerate(row["history"]):
            wins = _wins_now(state)
            if ply >= 3:  # the search plays from the enumerated state on
                if wins:
                    assert action in wins
                    checked += 1
                else:
                    child = state.clone()
                    child.apply_action(action)
                    safe = []
                    for a in state.legal_actions():
                        probe = state.clone()
                        probe.apply_action(a)
                        if probe.is_terminal() or not _wins_now(probe):
                            safe.append(a)
                    if safe:
                        assert action in safe
            state.apply_action(action)
    assert checked > 20


@pytest.mark.slow
def test_simultaneous_game_records_each_living_player():
    game, tables, shards = _run("lazerbike", x=1, y=1)
    assert len(shards) == 9  # 3 x 3 joint moves from the start
    rows = tables["positions"]
    assert Counter(r["ply"] for r in rows) == {0: 2, 1: 18}
    for pos in rows:
        scores = pos["action_scores"]
        assert scores[pos["action"]] == pos["outcome"]
        assert not any(math.isnan(v) for v in scores)
    games = {row["game_id"]: row for row in tables["games"]}
    for row in games.values():
        final = game.state_from_history(row["history"])
        assert final.is_terminal() and len(row["history"]) == 2 * row["length"]
    assert all(games[p["game_id"]]["returns"][p["player"]] == p["outcome"] for p in rows)


@pytest.mark.slow
def test_game_without_heuristic_uses_playouts_and_skips_chance_nodes():
    game, tables, _ = _run("pig:target=6", x=3, y=1, z=2)
    for pos in tables["positions"]:
        state = game.state_from_history(
            {g["game_id"]: g for g in tables["games"]}[pos["game_id"]]["history"][: pos["ply"]]
        )
        assert state.current_player() == pos["player"] >= 0
    # By hand (target 6): ply 1: roll leads to a chance node (no row), hold to P1 (1 row).
    # Ply 2: the six faces after a roll (6 rows) and P1 holding too (1). Ply 3: holding after
    # faces 1-5 (5 rows; face 6 then reaches 6 points and ends the game), P0 holding after
    # hold-hold (1), and the six faces after hold-roll (6).
    plies = Counter(p["ply"] for p in tables["positions"])
    assert dict(plies) == {0: 1, 1: 1, 2: 7, 3: 12}


def test_deterministic():
    _, a, _ = _run("connect4", x=2, y=1)
    _, b, _ = _run("connect4", x=2, y=1)
    assert a["games"] == b["games"]
    assert np.array_equal(
        np.array([r["action_scores"] for r in a["positions"]]),
        np.array([r["action_scores"] for r in b["positions"]]),
        equal_nan=True,
    )


def test_bad_params():
    with pytest.raises(DataError, match="Y = 0"):
        parse_params(parse_game_spec("connect4"), "thorough", {"y": 0})
    with pytest.raises(DataError, match="Z"):
        parse_params(parse_game_spec("pig"), "thorough", {"z": 0})


def test_simultaneous_flag():
    assert parse_game_spec("lazerbike").new_initial_state().current_player() == SIMULTANEOUS
