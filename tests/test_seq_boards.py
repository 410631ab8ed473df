"""Sequence models that read the board beside the moves (`gridbots encode --boards`): the
board each round leaves, encoded identically by the dataset encoder and by `seq:` in play
(Connect 4 on one-move rounds, Lazerbike's laps with their deadly tiles), checked against
hand-worked boards, and read end to end by a hand-built ONNX net."""

from __future__ import annotations

import numpy as np
import pytest
from test_hmm import copycat_games
from test_onnx_eval import linear_model
from test_seq_agent import bike_games

from agents import make
from agents.sequence.agent import history_rounds, history_steps, neutral_scores
from agents.sequence.codec import board_width, step_boards
from engine import load_game
from features import encode as enc
from features.errors import DataError
from models import hmm
from models.base import ModelError, artifact_metadata


def test_connect4_boards_by_hand():
    game = load_game("connect4")
    state = game.state_from_history([3, 4, 3])
    boards = step_boards(game, history_steps(game, state)[1]).reshape(3, 2, 6, 7)
    assert board_width(game) == 84
    assert boards.sum(axis=(1, 2, 3)).tolist() == [1, 2, 3]  # one new piece per round
    last = boards[-1]
    assert last[0, 5, 3] == 1 and last[0, 4, 3] == 1  # seat 0: column 3, bottom two rows
    assert last[1, 5, 4] == 1 and last[1].sum() == 1  # seat 1: column 4, bottom row


def test_dataset_boards_match_the_boards_seen_in_play():
    game = load_game("connect4")
    games, sequences = copycat_games(40)
    arrays = enc.qualitative(sequences, game, plies=True, boards=True, games=games)
    assert arrays["boards"].shape == (len(arrays["inputs"]), 42, 84)
    rows = {gid: i for i, gid in enumerate(arrays["game_id"].tolist())}
    for record in games.to_pylist():
        state = game.state_from_history(record["history"], seed=record["seed"])
        seen = step_boards(game, history_steps(game, state)[1])
        stored = arrays["boards"][rows[record["game_id"]]]
        assert (stored[: len(seen)] == seen).all()
        assert not stored[len(seen) :].any()  # zero past the end of the game


def test_lazerbike_boards_hold_heads_and_deadly_trails():
    game = load_game("lazerbike")
    games, sequences = bike_games(5)
    arrays = enc.qualitative(sequences, game, boards=True, games=games)
    cells = 15 * 15
    assert arrays["boards"].shape[-1] == 5 * cells  # two heads, deadly tiles, two necks
    for record, row in zip(games.to_pylist(), range(0, 10, 2), strict=True):
        boards = arrays["boards"][row].reshape(-1, 5, cells)
        laps = record["length"]
        trails = boards[:laps, 2].sum(axis=1)
        assert (np.diff(trails) >= 0).all() and trails[-1] > trails[0]  # trails only grow
        state = game.state_from_history(record["history"], seed=record["seed"])
        seen = step_boards(game, history_steps(game, state)[1])
        assert (boards[:laps].reshape(laps, -1) == seen).all()


def test_boards_need_one_round_per_move_and_a_sequence_model_that_reads_them(tmp_path):
    game = load_game("connect4")
    games, sequences = copycat_games(20)
    with pytest.raises(DataError, match="--plies"):
        enc.qualitative(sequences, game, boards=True, games=games)
    with pytest.raises(DataError, match="1 sequence game id"):
        enc.qualitative(sequences, game, plies=True, boards=True, games=games.slice(1))
    arrays = enc.qualitative(sequences, game, plies=True, boards=True, games=games)
    options = {"plies": True, "boards": True}
    meta = {"encoding": "qualitative", "game": "connect4", "options": options}
    with pytest.raises(ModelError, match="without --boards"):
        hmm.train(arrays, meta, {"outcomes": "all"}, tmp_path / "h")


def test_an_onnx_net_that_reads_the_board_plays_from_it(tmp_path):
    """A linear net whose logit for column c counts the opponent's (seat 1's) pieces in column
    c: `seq:` must hand it the board after every move, in the dataset's layout, to play the
    column the opponent has filled most."""
    game = load_game("connect4")
    features = 16 + 84
    weight = np.zeros((features, 8))
    for row in range(6):
        for c in range(7):
            weight[16 + 42 + row * 7 + c, 1 + c] = 1.0  # seat 1's block, cell (row, c)
    meta = artifact_metadata("connect4", "lstm", "qualitative", "sequence", player=0, plies=1,
                             boards=1)  # fmt: skip
    path = linear_model(tmp_path / "board.onnx", weight, np.zeros(8), 42, meta)
    agent = make(f"seq:model={path},guards=none", game, seed=3)
    assert agent.predictor.boards
    # seat 1 holds columns 5 (two pieces) and 6 (one): seat 0 to move answers column 5
    assert agent.step(game.state_from_history([0, 5, 1, 5, 0, 6])) == 5
    assert agent.step(game.state_from_history([0, 2, 1, 6, 0, 6, 1, 2, 4, 2])) == 2


def test_a_simultaneous_every_seat_lstm_imitates_each_seat_by_its_own_result():
    """In a lap both bikes act: the every-seat model learns each seat's block where that seat
    won, so a game seat 1 won teaches seat 1's moves and none of the loser's."""
    from models import lstm

    game = load_game("lazerbike")
    games, sequences = bike_games(12)
    arrays = enc.qualitative(sequences, game)
    meta = {"encoding": "qualitative", "game": "lazerbike", "options": {}}
    params = {**lstm.DEFAULTS, "player": -1, "outcomes": "wins"}
    _, _, actions, weights, ids = lstm.prepare(arrays, meta, params)
    assert weights.shape == actions.shape  # [n, T, seats]
    returns = {r["game_id"]: r["returns"] for r in games.to_pylist()}
    for row, gid in enumerate(ids.tolist()):
        for seat in range(2):
            assert (weights[row, :, seat].sum() > 0) == (returns[gid][seat] > 0)
    assert any(r[1] > 0 for r in returns.values()) and any(r[0] > 0 for r in returns.values())


def test_rows_side_by_side_equals_selecting_then_concatenating(monkeypatch):
    from models import lstm

    rng = np.random.default_rng(0)
    parts = [rng.integers(0, 2, (23, 6, k), dtype=np.int8) for k in (3, 1, 5)]
    rows = rng.random(23) < 0.6
    whole = np.concatenate([part[rows] for part in parts], axis=-1)
    monkeypatch.setattr(lstm, "ROW_CHUNK", 4)  # several chunks, the last one short
    joined = lstm.rows_side_by_side(parts, rows)
    assert joined.dtype == np.int8 and np.array_equal(joined, whole)


def test_one_seat_encoding_trains_the_every_seat_model_on_the_same_rows():
    """`--seat 0` keeps one row a game; every seat's result rides on it (`seat_outcomes`), so
    the every-seat model gets the same inputs, targets and per-seat weights as from both rows,
    including games seat 1 won, whose seat-1 row is no longer in the file."""
    from models import lstm

    game = load_game("lazerbike")
    games, sequences = bike_games(12)
    both = enc.qualitative(sequences, game, boards=True, games=games)
    one = enc.qualitative(sequences, game, boards=True, games=games, seat=0)
    assert len(one["inputs"]) * 2 == len(both["inputs"]) and (one["player"] == 0).all()
    returns = {r["game_id"]: r["returns"] for r in games.to_pylist()}
    for row, gid in enumerate(one["game_id"].tolist()):
        assert one["seat_outcomes"][row].tolist() == pytest.approx(returns[gid])
    meta = {"encoding": "qualitative", "game": "lazerbike", "options": {"boards": True}}
    params = {**lstm.DEFAULTS, "player": -1, "outcomes": "wins"}
    from_both, from_one = lstm.prepare(both, meta, params), lstm.prepare(one, meta, params)
    older = {k: v for k, v in both.items() if k != "seat_outcomes"}  # files from before it
    from_older = lstm.prepare(older, meta, params)
    for left, right, joined in zip(from_both[1:], from_one[1:], from_older[1:], strict=True):
        assert np.array_equal(left, right) and np.array_equal(left, joined)
    assert any(returns[gid][1] > 0 for gid in one["game_id"].tolist())
    with pytest.raises(DataError, match=r"seat 2: lazerbike has seats 0\.\.1"):
        enc.qualitative(sequences, game, seat=2)


@pytest.mark.slow
def test_a_conv_lstm_reads_each_board_as_planes_and_plays_from_its_export(tmp_path):
    """`conv` folds each step's board bits back into [H, W, seats] planes before the
    convolutions: a single bit of seat 1 at cell (row 2, column 5) must land at exactly that
    plane cell; a really trained conv model exports with parity and `seq:` plays from it."""
    from models import lstm
    from models.export import keras_seeded

    game = load_game("connect4")
    keras = keras_seeded(0)
    params = {**lstm.DEFAULTS, "conv": "4"}
    meta = {"encoding": "qualitative", "game": "connect4", "options": {"plies": 1, "boards": 1}}
    board = lstm.board_shape(game, meta, params)
    assert board == (2, 6, 7)
    model = lstm.build(params, 3, 16 + 84, 8, keras, board=board)
    planes = keras.Model(model.inputs, model.get_layer("board_planes").output)
    x = np.zeros((1, 3, 100), dtype=np.float32)
    x[0, 1, 16 + 42 + 2 * 7 + 5] = 1.0
    seen = np.asarray(planes(x))
    assert seen.shape == (3, 6, 7, 2)  # steps folded into the batch, one image each
    assert seen[1, 2, 5, 1] == 1.0 and seen.sum() == 1.0
    with pytest.raises(ModelError, match="--boards"):
        lstm.board_shape(game, {**meta, "options": {"plies": 1}}, params)
    with pytest.raises(ModelError, match="conv="):
        lstm.train({}, meta, {"conv": "wide"}, tmp_path / "bad")

    games, sequences = copycat_games(40)
    arrays = enc.qualitative(sequences, game, plies=True, boards=True, games=games)
    trained = {"conv": "4", "conv_units": 8, "cells": "8", "dense_units": 8, "epochs": 2,
               "batch_size": 16, "outcomes": "all"}  # fmt: skip
    result = lstm.train(arrays, meta, trained, tmp_path / "m")
    assert result.metrics["parity_max_abs_diff"] < 1e-4
    agent = make(f"seq:model={result.artifact},guards=none", game, seed=0)
    assert agent.predictor.boards  # the artifact says it reads boards: seq: replays them
    state = game.state_from_history([3, 4])
    assert agent.step(state) in state.legal_actions()

    # the export's time axis is free: `seq:` feeds the rounds played, not the trained padding,
    # and a causal network gives at the last played step what the padded input gives there
    predictor = agent.predictor
    assert predictor.input.shape[1] == "steps" and not predictor.padded
    assert predictor.window == arrays["inputs"].shape[1]
    state = game.state_from_history([3, 4, 3, 2, 5])
    context = history_rounds(game, state, plies=True)
    boards = step_boards(game, history_steps(game, state)[1])
    n = len(context)
    padded = np.full((predictor.window, 2), game.neutral_action, dtype=np.int64)
    padded[:n] = context
    padded_boards = np.zeros((predictor.window, boards.shape[1]), dtype=np.int8)
    padded_boards[:n] = boards
    run = predictor.session.run
    short = run(None, {"sequence": predictor._encode(context, boards)[None]})[0]
    full = run(None, {"sequence": predictor._encode(padded, padded_boards)[None]})[0]
    assert short.shape[1] == n and full.shape[1] == predictor.window
    np.testing.assert_allclose(short[0, -1], full[0, n - 1], atol=1e-5)
    np.testing.assert_allclose(
        predictor.scores(context, 0, boards), neutral_scores(full[0, n - 1], game.neutral_action)
    )


@pytest.mark.parametrize("k", range(1, 8))
def test_augmented_lazerbike_rounds_are_the_rounds_of_the_transformed_game(k):
    """`lstm augment` moves a sequence's bits without replaying it; replaying the rotated or
    mirrored game through the engine (turns swapped by reflections) gives the same bits."""
    from agents.sequence.codec import one_hot_actions
    from features.symmetry import game_symmetries, map_actions, round_gathers

    game = load_game("lazerbike")
    state = game.new_initial_state(seed=5, start="random")
    seats = [make("random:guards=safe", game, seed=s) for s in (1, 2)]
    while not state.is_terminal():
        state.apply_actions([seats[p].step(state, p) for p in range(2)])
    steps, after = history_steps(game, state)

    def bits(steps, after):
        moves = one_hot_actions(steps, game.num_actions, game.neutral_action)
        return np.concatenate([moves, step_boards(game, after)], axis=1)

    symmetry = game_symmetries(game)[k]
    obs_perm, act_perm = symmetry
    cells = 15 * 15
    start = []
    for p in range(2):  # where the transform puts each bike's start, read off its planes
        seen = np.empty(int(np.prod(game.observation_shape)), dtype=np.float32)
        game.kernels.observation(game.new_initial_state(seed=5, start="random").array, p, seen)
        moved = seen[obs_perm]
        heading = int(np.argmax([moved[(6 + h) * cells] for h in range(4)]))
        start.append((*divmod(int(np.argmax(moved[:cells])), 15), "NESW"[heading]))
    mirrored = game.new_initial_state(start=start)
    for lap in map_actions(steps, act_perm, game.neutral_action):
        mirrored.apply_actions([int(a) for a in lap])
    assert mirrored.is_terminal() and mirrored.returns() == state.returns()
    gather, classes = round_gathers(game, symmetry, board_blocks=5)
    assert (bits(*history_steps(game, mirrored)) == bits(steps, after)[:, gather]).all()
    assert sorted(classes.tolist()) == [0, 1, 2, 3] and classes[0] == 0  # neutral stays


@pytest.mark.slow
def test_augment_trains_on_mirrored_views_and_refuses_what_it_cannot_move(tmp_path):
    """Connect 4's mirror: the batch transform moves each drawn row's move bits, boards and
    targets by the mirror's gathers and leaves the rest as stored; training with it exports."""
    from features.symmetry import game_symmetries, round_gathers
    from models import lstm

    game = load_game("connect4")
    games, sequences = copycat_games(40)
    arrays = enc.qualitative(sequences, game, plies=True, boards=True, games=games)
    meta = {"encoding": "qualitative", "game": "connect4", "options": {"plies": 1, "boards": 1}}
    params = {**lstm.DEFAULTS, "augment": 1}
    x = np.concatenate([arrays["inputs"], arrays["boards"]], axis=-1)[:16].astype(np.float32)
    y = np.random.default_rng(0).random((16, x.shape[1], 8)).astype(np.float32)
    transform = lstm.symmetric_rounds(game, meta, params, x.shape[-1])
    gather, classes = round_gathers(game, game_symmetries(game)[1], board_blocks=2)
    x2, y2, _ = transform((x.copy(), y.copy(), None), np.random.default_rng(1))
    mirrored = np.random.default_rng(1).integers(2, size=16) == 1
    assert 0 < mirrored.sum() < 16
    assert (x2[mirrored] == x[mirrored][..., gather]).all()
    assert (y2[mirrored] == y[mirrored][..., classes]).all()
    assert (x2[~mirrored] == x[~mirrored]).all() and (y2[~mirrored] == y[~mirrored]).all()
    assert classes.tolist() == [0, 7, 6, 5, 4, 3, 2, 1]  # column c <-> 6 - c, neutral stays
    with pytest.raises(ModelError, match="augment"):
        lstm.symmetric_rounds(game, {**meta, "encoding": "quantitative"}, params, x.shape[-1])
    with pytest.raises(ModelError, match="augment"):
        lstm.symmetric_rounds(game, meta, params, x.shape[-1] - 1)
    trained = {"cells": "8", "dense_units": 8, "epochs": 1, "batch_size": 16,
               "outcomes": "all", "augment": 1}  # fmt: skip
    result = lstm.train(arrays, meta, trained, tmp_path / "m")
    assert result.metrics["parity_max_abs_diff"] < 1e-4 and result.artifact.exists()
