"""Value MLP: it separates won from lost Connect 4 endgames, its ONNX file works on states
encoded by agents.value.features, and that encoder equals the dataset encoder.

The endgame set is checkable truth: positions from seeded random games where the side to move
wins at once (label 1) or loses whatever it plays (every move hands the opponent an immediate
win, label 0), confirmed on a sample by the exact solver. Telling them apart from the board
alone means spotting whose three-in-a-row is playable.
"""

from __future__ import annotations

import importlib
import os

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from agents.onnx.runtime import session
from agents.value.features import ValueEncoder, encode_state, input_size
from engine import load_game
from engine.games.connect4.solver import Connect4Solver
from engine.protocol import TERMINAL
from features import encode as enc
from features.store import generate_dataset, load_dataset
from models import value_mlp
from models.base import ModelError
from models.export import keras_seeded

C4 = load_game("connect4")


class Endgames:
    """Raw-kernel random games (fast) stopped at the first won-in-1 position, recording every
    lost-in-1 position on the way."""

    def __init__(self) -> None:
        self.k = C4.kernels
        self.buffer = np.empty(64, np.int64)
        self.out = np.zeros(2)

    def legal(self, s):
        n = self.k.legal_actions(s, self.k.current_player(s), self.buffer)
        return self.buffer[:n].copy()

    def wins_now(self, s) -> bool:
        mover = self.k.current_player(s)
        for a in self.legal(s):
            child = s.copy()
            self.k.apply_action(child, a)
            if self.k.current_player(child) == TERMINAL:
                self.k.returns(child, self.out)
                if self.out[mover] > 0:
                    return True
        return False

    def lost_now(self, s) -> bool:
        for a in self.legal(s):
            child = s.copy()
            self.k.apply_action(child, a)
            if self.k.current_player(child) == TERMINAL or not self.wins_now(child):
                return False
        return True

    def rows(self, games: int, seed: int):
        """Balanced (game, state, player, outcome, history) rows."""
        rng = np.random.default_rng(seed)
        won, lost = [], []
        for game in range(games):
            s, history = C4.new_initial_state().array.copy(), []
            while self.k.current_player(s) != TERMINAL:
                row = (game, s.copy(), int(self.k.current_player(s)), history.copy())
                if self.wins_now(s):
                    won.append((*row[:3], 1.0, row[3]))
                    break
                if self.lost_now(s):
                    lost.append((*row[:3], -1.0, row[3]))
                legal = self.legal(s)
                action = int(legal[rng.integers(len(legal))])
                self.k.apply_action(s, action)
                history.append(action)
        return lost + won[: len(lost)]


def board_arrays(rows, mirror: bool):
    states = np.stack([r[1] for r in rows])
    players = np.array([r[2] for r in rows])
    codes = C4.board_codes(states)
    arrays = {"outcome": np.array([r[3] for r in rows], np.float32),
              "game_id": np.array([r[0] for r in rows]), "player": players}  # fmt: skip
    if mirror:  # the mirrored board has the same value; its copy stays in the same game
        codes = np.concatenate([codes, codes[:, :, ::-1]])
        arrays = {k: np.concatenate([v, v]) for k, v in arrays.items()}
    arrays["board"] = enc.board_one_hot(codes, arrays["player"], 2, False)
    return arrays


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    rows = Endgames().rows(6000, seed=0)
    arrays = board_arrays(rows, mirror=True)
    meta = {"encoding": "board-onehot", "game": "connect4"}
    params = {"epochs": 10, "width": 256, "batch_size": 32}
    result = value_mlp.train(arrays, meta, params, tmp_path_factory.mktemp("value"))
    return rows, result


@pytest.mark.slow
def test_endgame_labels_are_true(trained):
    rows, _ = trained
    solver = Connect4Solver()
    for game, _, _, outcome, history in rows[:: max(1, len(rows) // 40)]:
        score = solver.solve(history)
        assert np.sign(score) == outcome, (game, history, score)


def test_separates_won_from_lost_positions(trained):
    rows, result = trained
    m = result.metrics
    assert len(rows) > 300 and m["held_out_draw_share"] == 0.0
    assert m["held_out_accuracy"] >= 0.8, m
    assert abs(m["majority_accuracy"] - 0.5) < 0.15  # balanced: no cheap majority answer
    assert len(result.history["val_accuracy"]) == 10
    assert m["parity_max_abs_diff"] <= 1e-4


def test_onnx_on_fresh_positions_through_the_agent_encoder(trained):
    """What `alphabeta:eval=onnx` does: encode a state itself, ask onnxruntime."""
    _, result = trained
    runner = session(result.artifact)
    meta = runner.get_modelmeta().custom_metadata_map
    assert meta["gridbots.kind"] == "value" and meta["gridbots.encoding"] == "board-onehot"
    module, _, function = meta["gridbots.encoder"].rpartition(".")  # the label names it
    assert getattr(importlib.import_module(module), function) is encode_state
    assert int(meta["gridbots.input_size"]) == input_size(C4, "board-onehot") == 84
    fresh = Endgames().rows(1500, seed=11)
    encoder = ValueEncoder(C4, "board-onehot")
    x = encoder.batch(np.stack([r[1] for r in fresh]), np.array([r[2] for r in fresh]))
    probability = runner.run(["win_probability"], {"position": x})[0][:, 0]
    truth = np.array([r[3] for r in fresh]) > 0
    assert ((probability > 0.5) == truth).mean() >= 0.75


@pytest.mark.slow
def test_every_grid_size_trains():
    keras = keras_seeded(0)
    x = np.random.default_rng(0).integers(0, 2, (64, 84)).astype(np.float32)
    y = (x[:, :1] > 0).astype(np.float32)
    for layers, width in value_mlp.GRID:
        model = value_mlp.build({"layers": layers, "width": width, "dropout": 0.0}, 84, keras)
        expected = 84 * width + width + (layers - 1) * (width * width + width) + width + 1
        assert model.count_params() == expected
        model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="binary_crossentropy")
        assert np.isfinite(model.train_on_batch(x, y))


def test_relation_kernels_are_the_neighbourhoods_worked_by_hand():
    """3 x 3 board, cells numbered row by row: the neighbourhoods of the corner 0 and the
    centre 4 (distance 1, 2, 3-5, and the same row or column)."""
    kernels = value_mlp.relation_kernels(3, 3)
    assert kernels.shape == (4, 9, 9)
    near = [set(np.flatnonzero(k[0]).tolist()) for k in kernels]
    assert near == [{1, 3}, {2, 4, 6}, {5, 7, 8}, {1, 2, 3, 6}]
    centre = [set(np.flatnonzero(k[4]).tolist()) for k in kernels]
    assert centre == [{1, 3, 5, 7}, {0, 2, 6, 8}, set(), {1, 3, 5, 7}]
    assert (kernels == kernels.transpose(0, 2, 1)).all()  # a relation both cells share


def test_only_the_relational_block_tells_near_from_far():
    """Two pieces of fixed features, side by side or in opposite corners: the board means of
    the cells' codes (pool=mean) are the same for both, so that network cannot tell them
    apart; the relational block sees the distance (any weights: these are untrained)."""
    keras = keras_seeded(0)
    planes = (2, 5, 5)
    near, far = np.zeros(planes, np.float32), np.zeros(planes, np.float32)
    near[0, 2, 2] = near[1, 2, 3] = 1.0  # own piece, an enemy piece beside it
    far[0, 0, 0] = far[1, 4, 4] = 1.0
    batch = np.stack([near, far]).reshape(2, -1)
    common = {"layers": 1, "width": 8, "dropout": 0.0, "cell_encoder": 4, "pool": "mean"}
    for relate, differs in ((0, False), (4, True)):
        model = value_mlp.build({**common, "relate": relate}, batch.shape[1], keras, planes)
        out = np.asarray(model(batch, training=False)).ravel()
        assert (abs(out[0] - out[1]) > 1e-6) == differs, (relate, out)


def test_soft_labels():
    # results (any score clips to a result) and blended targets in between
    assert value_mlp.labels(np.array([2.0, -1.0, 0.0, 0.5])).tolist() == [1.0, 0.0, 0.5, 0.75]
    scores = value_mlp.scores(np.array([0.9, 0.2, 0.7]), np.array([1.0, 1.0, 0.5]))
    assert scores["val_accuracy"] == 0.5  # the draw is not counted
    assert scores["val_brier"] == pytest.approx((0.01 + 0.64 + 0.04) / 3)


def test_wrong_encoding_and_bad_params_are_model_errors(tmp_path):
    arrays = {"planes": np.zeros((4, 3)), "outcome": np.ones(4), "game_id": np.arange(4)}
    with pytest.raises(ModelError, match="board-onehot or count-onehot"):
        value_mlp.train(arrays, {"encoding": "planes", "game": "connect4"}, {}, tmp_path)
    with pytest.raises(ModelError, match="width"):
        meta = {"encoding": "board-onehot", "game": "connect4"}
        value_mlp.train(arrays, meta, {"width": 0}, tmp_path)
    meta = {"encoding": "value-planes", "game": "connect4"}
    with pytest.raises(ModelError, match="relate pools"):
        value_mlp.train(arrays, meta, {"relate": 4}, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["connect4", "lazerbike", "othello"])
def test_agent_encoder_equals_the_dataset_encoder(spec, tmp_path):
    generate_dataset(tmp_path, spec, "randomized", {"x": 12, "y": 2}, seed=4)
    game = load_game(spec)
    positions = load_dataset(tmp_path, "positions")
    states = enc.list_matrix(positions.column("state"), len(positions["state"][0]), np.int64)
    players = positions.column("player").to_numpy()
    assert len(states) > 10
    for name, key in (("board-onehot", "board"), ("count-onehot", "counts")):
        expected = enc.encoding(name)[1](positions, game)[key]
        got = ValueEncoder(game, name).batch(states, players)
        assert got.shape == (len(states), input_size(game, name))
        assert np.array_equal(got, expected.astype(np.float32)), (spec, name)
    one = encode_state(game, states[3], int(players[3]), "count-onehot")
    assert np.array_equal(one, expected[3])


def test_row_batches_visit_each_chosen_row_once_an_epoch_and_reshuffle():
    """The trainer's batches are slices of one array: every training row once per epoch, in a
    new seeded order each epoch, and the held-out rows in their own order."""
    import numpy as np

    from models.export import keras_seeded, row_batches

    keras = keras_seeded(0)
    x = np.arange(40, dtype=np.float32)[:, None]
    chosen = np.arange(40) % 3 != 0
    batches = row_batches(keras, [x, -x], chosen, 5, seed=7)
    epochs = []
    for _ in range(2):
        seen = [batches[i] for i in range(len(batches))]
        assert all(np.array_equal(b, -a) for a, b in seen)  # inputs and targets stay paired
        epochs.append(np.concatenate([a.ravel() for a, _ in seen]))
        batches.on_epoch_end()
    for rows in epochs:
        assert sorted(rows.tolist()) == np.flatnonzero(chosen).tolist()
    assert not np.array_equal(epochs[0], epochs[1])
    held_out = row_batches(keras, [x], ~chosen, 4)
    in_order = np.concatenate([b.ravel() for b in held_out])
    assert in_order.tolist() == np.flatnonzero(~chosen).tolist()


@pytest.mark.slow
def test_a_thread_drawing_from_global_random_changes_nothing(tmp_path):
    """The same seed gives the same network while another thread draws from Python's global
    `random` (as Prefect's and MLflow's clients do in a stage): Keras draws its default seeds
    and batch order from there, so before keras_seeded gave it a generator of its own, two such
    trainings differed by up to 0.8 in a weight (and the promotion tests' twin versions by 2%
    in accuracy, in a busy test worker)."""
    import random
    import threading

    import onnx

    rows = Endgames().rows(300, seed=3)
    meta = {"encoding": "board-onehot", "game": "connect4", "table": "positions",
            "options": {}, "rows": len(rows)}  # fmt: skip
    arrays = board_arrays(rows, mirror=False)
    stop = threading.Event()

    def draw() -> None:
        while not stop.wait(0.0002):
            random.random()

    noise = threading.Thread(target=draw, daemon=True)
    noise.start()
    weights = []
    try:
        for run in range(2):
            value_mlp.train(arrays, meta, {"epochs": 2, "width": 16, "dropout": 0.2},
                            tmp_path / str(run))  # fmt: skip
            graph = onnx.load(tmp_path / str(run) / "model.onnx").graph
            weights.append([onnx.numpy_helper.to_array(t) for t in graph.initializer])
    finally:
        stop.set()
        noise.join()
    assert len(weights[0]) >= 4 and all(np.array_equal(a, b) for a, b in zip(*weights, strict=True))
