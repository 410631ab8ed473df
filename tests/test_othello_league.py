"""The Othello League harness (benchmarks/othello_league.py) and the systematic n-tuple shapes.

The League's own rules are checked against published perft counts and the engine, its WPC
player against a hand-worked position; the n-tuple shapes against counts worked by hand and the
board's symmetries; a tiny training run must beat a random player's League score."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from engine import load_game

ROOT = Path(__file__).resolve().parents[1]


def _league_module():
    spec = importlib.util.spec_from_file_location(
        "othello_league", ROOT / "benchmarks" / "othello_league.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


league = _league_module()


@pytest.fixture(scope="module")
def othello():
    return load_game("othello")


def _perft(board, colour, depth, passed=False):
    if depth == 0:
        return 1
    moves = league.legal_moves(board, colour)
    other = league.BLACK + league.WHITE - colour
    if not moves:
        if passed:
            return 1  # the game is over: a leaf
        return _perft(board, other, depth - 1, True)
    return sum(_perft(league.play(board, m, colour), other, depth - 1) for m in moves)


def test_league_rules_give_othello_s_published_perft_counts():
    assert [_perft(league.start_board(), league.BLACK, d) for d in range(1, 5)] == [
        4,
        12,
        56,
        244,
    ]


def test_league_rules_agree_with_the_engine_on_random_games(othello):
    rng = np.random.default_rng(3)
    for seed in range(12):
        state = othello.new_initial_state(seed=seed)
        board, colour = league.start_board(), league.BLACK
        while not state.is_terminal():
            moves = league.legal_moves(board, colour)
            assert sorted(state.legal_actions()) == (moves or [league.PASS])
            action = int(rng.choice(moves)) if moves else league.PASS
            state.apply_action(action)
            if moves:
                board = league.play(board, action, colour)
            colour = league.BLACK + league.WHITE - colour
            assert league.board_of(state.array) == board
        assert not league.legal_moves(board, league.BLACK)
        assert not league.legal_moves(board, league.WHITE)


def test_wpc_value_of_a_hand_worked_position():
    board = [league.EMPTY] * 64
    board[0] = board[1] = board[19] = league.BLACK  # a1 1.00, b1 -0.25, d3 0.02
    board[9] = board[63] = board[36] = league.WHITE  # b2 -0.25, h8 1.00, e5 0.01
    assert league.wpc_value(board, league.BLACK) == pytest.approx(0.77 - 0.76)
    assert league.wpc_value(board, league.WHITE) == pytest.approx(-0.01)
    # at the start the WPC player's four moves are worth 0.02 + 0.01 * 3 - 0.01 (d3 f5 c4 e6 alike)
    start = league.start_board()
    values = {
        m: league.wpc_value(league.play(start, m, 1), 1) for m in league.legal_moves(start, 1)
    }
    assert values == pytest.approx({19: 0.04, 26: 0.04, 37: 0.04, 44: 0.04})


def test_a_league_game_stops_on_an_illegal_candidate_move(othello):
    def cheat(state):
        return 0  # a1: never legal early on

    with pytest.raises(league.Disagreement, match="illegal"):
        for g in range(20):
            league.play_game(othello, cheat, league.BLACK, np.random.default_rng(g), g)


def test_straight_and_rectangle_shapes_place_every_position_once(othello):
    from agents.td.ntuple import lookups, shape_tuples

    assert len(shape_tuples(8, 8, "straight-4")) == 8 * 5 * 2 + 5 * 5 * 2
    assert len(shape_tuples(8, 8, "rect-2x3")) == 7 * 6 * 2
    assert len(shape_tuples(8, 8, "rect-2x2")) == 49
    for shapes in ("straight-4", "rect-2x3", "straight-3+rect-2x2"):
        cells_of, table_of = lookups(othello, shapes)
        placed = {frozenset(t) for t in shape_tuples(8, 8, shapes)}
        assert {frozenset(c) for c in cells_of} == placed  # each placement read, none invented
        assert max(table_of) + 1 < len(placed)  # shared: fewer tables than placements
    with pytest.raises(ValueError, match="known"):
        lookups(othello, "snake-9")


@pytest.mark.parametrize("shapes", ["straight-4", "rect-2x3"])
def test_shared_tables_value_symmetric_positions_equally(othello, shapes):
    from agents.td.net import encode
    from agents.td.ntuple import NTuple, cell_symmetries

    net = NTuple.initial(othello, std=0.3, seed=1, shapes=shapes)
    rng = np.random.default_rng(5)
    state = othello.new_initial_state(seed=0)
    for _ in range(14):
        state.apply_action(int(rng.choice(state.legal_actions())))
    x = encode(othello, state.array, 2)
    values = []
    for perm in cell_symmetries(othello):
        image = np.concatenate([x[:64][perm], x[64:][perm]])
        values.append(net.value(image))
    assert len(values) == 8 and np.ptp(values) < 1e-12
    assert abs(values[0] - 0.5) > 1e-3  # the random weights do read the position


@pytest.mark.slow
def test_a_tiny_training_run_beats_random_in_a_tiny_league(othello, tmp_path):
    from agents.td.agent import TDPlayer, read_network
    from models import td

    result = td.train(
        "othello",
        {
            "network": "ntuple",
            "tuples": "rect-2x2",
            "games": 10000,
            "learning_rate": 0.03,
            "random_factor": 0.1,
            "seed": 1,
        },
        tmp_path,
    )
    network = read_network(result.artifact, othello)[0]  # through the ONNX round trip
    player = TDPlayer(othello, network)
    trained = league.league(othello, lambda s: player.action(s.array), 200, seed=7)
    rng = np.random.default_rng(0)
    randomly = league.league(othello, lambda s: int(rng.choice(s.legal_actions())), 200, seed=7)
    assert trained["positions_checked"] > 200 * 50
    assert trained["score"] > randomly["score"] + 0.25, (trained, randomly)


def test_the_training_counter_plays_the_league_s_weighted_piece_counter(othello):
    from agents.td.net import Workspace, bound, counter_move
    from agents.td.ntuple import NTuple
    from engine.bits import new_rng

    network = NTuple.initial(othello, shapes="rect-2x2")
    move = bound(othello, counter_move, network)
    moves, _values, child, _x, obs, _out = Workspace(othello).arrays
    weights, rng = np.array(league.WPC), new_rng(0)
    play_rng, checked = np.random.default_rng(11), 0
    for seed in range(6):
        state = othello.new_initial_state(seed=seed)
        for _ in range(40):
            if state.is_terminal():
                break
            s, mover = state.array, state.current_player()
            board, colour = league.board_of(s), mover + 1
            legal = league.legal_moves(board, colour)
            if len(legal) > 1:
                values = {m: league.wpc_value(league.play(board, m, colour), colour) for m in legal}
                best = max(values.values())
                chosen = int(move(s, mover, weights, 0.0, rng, moves, child, obs))
                assert values[chosen] == pytest.approx(best), (chosen, values)
                checked += 1
            state.apply_action(int(play_rng.choice(state.legal_actions())))
    assert checked > 100


def test_a_counter_opponent_needs_its_weights():
    from models import td
    from models.base import ModelError

    with pytest.raises(ModelError, match="counter_weights"):
        td.check({"network": "ntuple", "opponent": "counter"})
    with pytest.raises(ModelError, match="counter_share"):
        td.check({"opponent": "counter", "counter_weights": [1.0], "counter_share": 1.5})
    with pytest.raises(ModelError, match="one weight per cell"):
        td.Trainer(load_game("othello"), {"opponent": "counter", "counter_weights": [1.0, 2.0]})


def test_game_stage_tables_incremental_child_values_and_the_search_leaf(othello, tmp_path):
    from agents.td.agent import read_network
    from agents.td.net import encode
    from agents.td.ntuple import NTuple, nt_child_value, nt_prepare
    from agents.td.search import leaf, pack
    from models.td_export import export

    net = NTuple.initial(othello, std=0.3, seed=2, shapes="rect-2x2", phases=4)
    whole = net.copy()
    arrays = net.arrays()
    rng, checked, stages = np.random.default_rng(9), 0, set()
    state = othello.new_initial_state(seed=0)
    while not state.is_terminal():
        x = encode(othello, state.array, 2)
        nt_prepare(arrays, x)
        for move in state.legal_actions():
            child = state.clone()
            child.apply_action(move)
            xc = encode(othello, child.array, 2)
            assert nt_child_value(arrays, x, xc) == pytest.approx(whole.value(xc), abs=1e-12)
            stages.add(int(xc.sum()) * 4 // 65)
            checked += 1
        state.apply_action(int(rng.choice(state.legal_actions())))
    assert checked > 200 and stages == {0, 1, 2, 3}  # the moves crossed every stage boundary
    report = export(othello, net, {"seed": 0}, tmp_path / "model.onnx")  # refuses a mismatch
    back = read_network(tmp_path / "model.onnx", othello)[0]
    assert report["passed"] and back.phases == 4
    evaluate, weights = leaf(othello, back), pack(othello, back)
    for s in (othello.new_initial_state(seed=0).array, state.array):
        v = net.value(encode(othello, s, 2))
        assert evaluate(s, 1, weights) == pytest.approx(2 * v - 1, abs=1e-6)


def _depth2_values(game, state, mover):
    """Plain depth-2 minimax of the game's heuristic for `mover`, worked in Python over the
    engine's states (the reply maximises when the opponent must pass)."""
    values = {}
    for move in state.legal_actions():
        child = state.clone()
        child.apply_action(move)
        if child.is_terminal():
            values[move] = game.evaluate(child.array, mover)
            continue
        reply = child.current_player()
        leaves = []
        for answer in child.legal_actions():
            grandchild = child.clone()
            grandchild.apply_action(answer)
            leaves.append(game.evaluate(grandchild.array, mover))
        values[move] = max(leaves) if reply == mover else min(leaves)
    return values


def test_the_heuristic_training_opponent_plays_depth_2_minimax(othello):
    from agents.td.net import Workspace, bound, heuristic_move
    from agents.td.ntuple import NTuple
    from engine.bits import new_rng

    network = NTuple.initial(othello, shapes="rect-2x2")
    move = bound(othello, heuristic_move, network)
    moves, _values, child, *_ = Workspace(othello).arrays
    rng, play_rng, checked, greedy_differs = new_rng(0), np.random.default_rng(5), 0, 0
    for seed in range(4):
        state = othello.new_initial_state(seed=seed)
        for _ in range(50):
            if state.is_terminal():
                break
            mover = state.current_player()
            if len(state.legal_actions()) > 1:
                values = _depth2_values(othello, state, mover)
                chosen = int(move(state.array, mover, 2, 0.0, rng, moves, child))
                assert values[chosen] == pytest.approx(max(values.values())), (chosen, values)
                one_ply = int(move(state.array, mover, 1, 0.0, rng, moves, child))
                greedy_differs += values[one_ply] < max(values.values()) - 1e-12
                checked += 1
            state.apply_action(int(play_rng.choice(state.legal_actions())))
    assert checked > 100
    assert greedy_differs > 0  # depth 1 is a different player: the test can tell them apart


def test_a_run_mixing_the_heuristic_opponent_trains_and_checks_its_shares(othello):
    from models import td
    from models.base import ModelError

    with pytest.raises(ModelError, match="at most 1"):
        td.check(
            {
                "opponent": "counter",
                "counter_weights": [1.0],
                "counter_share": 0.6,
                "heuristic_share": 0.5,
            }
        )
    with pytest.raises(ModelError, match="heuristic_depth"):
        td.check({"heuristic_share": 0.5, "heuristic_depth": 3})
    params = {
        "network": "ntuple",
        "tuples": "rect-2x2",
        "games": 40,
        "learning_rate": 0.01,
        "heuristic_share": 1.0,
        "heuristic_epsilon": 0.0,
    }
    trainer = td.Trainer(othello, params)
    out = trainer.run(40)
    assert np.abs(trainer.network.lut).sum() > 0
    # the learner sits on seat g % 2 and meets the heuristic every game: a 1-ply untrained
    # network against a depth-2 search loses most games from both seats
    learner_results = np.where(np.arange(40) % 2 == 1, out, -out)
    assert learner_results.mean() < 0.0, learner_results
    selfplay = td.Trainer(othello, {**params, "heuristic_share": 0.0}).run(40)
    assert not np.array_equal(out, selfplay)


def test_a_run_starts_from_an_exported_network_of_its_own_shape(othello, tmp_path):
    from models import td
    from models.base import ModelError
    from models.td_export import export

    params = {"network": "ntuple", "tuples": "rect-2x2", "phases": 2, "games": 30}
    first = td.Trainer(othello, {**params, "learning_rate": 0.05})
    first.run(30)
    export(othello, first.network, first.params, tmp_path / "first.onnx")
    warm = td.Trainer(othello, {**params, "init": str(tmp_path / "first.onnx")})
    assert np.allclose(warm.network.lut, first.network.lut.astype(np.float32), atol=0)
    assert np.abs(warm.network.lut).sum() > 0
    assert warm.fingerprint() != td.Trainer(othello, params).fingerprint()
    with pytest.raises(ModelError, match="shape"):
        td.Trainer(othello, {**params, "phases": 1, "init": str(tmp_path / "first.onnx")})
    with pytest.raises(ModelError, match="init"):
        td.Trainer(othello, {**params, "init": str(tmp_path / "missing.onnx")})
