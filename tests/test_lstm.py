"""LSTM family: it imitates a deterministic bot far above chance, and its ONNX file means what
the metadata says (output at step t = the learning seat's action in round t + 1).

The bot is `alphabeta:depth=3` (seat 0, deterministic) against `random`; its moves are spread
over the columns (the most frequent one is about a quarter of them), so beating three times
chance (3/7) and twice the majority baseline needs the history, not a favourite column.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from agents.onnx.runtime import session
from engine import load_game
from features import encode as enc
from features.store import generate_dataset, load_dataset
from models import lstm
from models.base import ModelError, family

BOT = "alphabeta:depth=3,random"
FAST = {"cells": 32, "dense_units": 32, "batch_size": 32, "learning_rate": 0.01}


def imitation_sequences(root, games: int, seed: int):
    options = {"x": games, "w": 0.0, "y": 1, "agents": BOT}
    generate_dataset(root, "connect4", "imitation", options, seed=seed)
    return load_dataset(root, "sequences")


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    root = tmp_path_factory.mktemp("lstm")
    c4 = load_game("connect4")
    arrays = enc.qualitative(imitation_sequences(root / "data", 400, seed=1), c4)
    seen = []
    result = lstm.train(
        arrays, {"encoding": "qualitative", "game": "connect4"}, {**FAST, "epochs": 12},
        root / "model", progress=lambda epoch, metrics: seen.append((epoch, metrics)),
    )  # fmt: skip
    return root, result, seen


@pytest.mark.slow
def test_learns_the_bots_moves_far_above_chance(trained):
    _, result, seen = trained
    m = result.metrics
    assert m["held_out_accuracy"] > 3 / 7, m  # three times a uniform pick among 7 columns
    assert m["held_out_accuracy"] > 2 * m["majority_accuracy"], m
    assert [e for e, _ in seen] == list(range(12))
    assert {"loss", "val_loss", "val_accuracy"} <= set(seen[0][1])
    assert result.history["loss"][-1] < result.history["loss"][0]
    assert m["train_sequences"] + m["held_out_sequences"] > 300  # seat 0 wins almost every game


def test_onnx_file_predicts_fresh_games(trained, tmp_path):
    """New games (another seed) through onnxruntime only: the contract agents rely on."""
    _, result, _ = trained
    c4 = load_game("connect4")
    assert result.artifact.is_file() and result.metrics["parity_max_abs_diff"] <= 1e-4
    runner = session(result.artifact)
    meta = runner.get_modelmeta().custom_metadata_map
    assert meta["gridbots.kind"] == "sequence" and meta["gridbots.player"] == "0"
    assert meta["gridbots.length"] == "20" and meta["gridbots.encoding"] == "qualitative"

    fresh = enc.quantitative(imitation_sequences(tmp_path / "fresh", 60, seed=7), c4)
    rows = (fresh["player"] == 0) & (fresh["outcome"] > 0)
    bits = enc.one_hot_actions(fresh["inputs"][rows], c4.num_actions, -1).astype(np.float32)
    probs = runner.run(["next_action"], {"sequence": bits})[0]
    assert probs.shape == (rows.sum(), 20, 8)
    predicted = probs.argmax(axis=-1) - 1  # class 0 is the neutral value, class a + 1 action a
    truth = fresh["targets"][rows][:, :, 0]
    played = truth >= 0
    assert (predicted[played] == truth[played]).mean() > 3 / 7


@pytest.mark.slow
def test_held_out_figures_are_the_exported_weights_after_an_early_stop(trained, tmp_path):
    """Early stopping keeps the best epoch's weights: the reported held-out accuracy must be
    what the exported ONNX file scores on the held-out games, not the last epoch's."""
    root, _, _ = trained
    c4 = load_game("connect4")
    arrays = enc.qualitative(load_dataset(root / "data", "sequences"), c4)
    meta = {"encoding": "qualitative", "game": "connect4"}
    params = {**FAST, "learning_rate": 0.05, "epochs": 30, "patience": 1}
    result = lstm.train(arrays, meta, params, tmp_path / "m")
    assert len(result.history["loss"]) < 30  # it did stop early
    full = lstm.checked_params("lstm", lstm.DEFAULTS, params)
    _, inputs, actions, weights, ids = lstm.prepare(arrays, meta, full)
    _, test = lstm.split_by_game(ids, full["holdout"], full["seed"])
    probs = session(result.artifact).run(None, {"sequence": inputs[test].astype(np.float32)})[0]
    predicted = lstm.decode(probs, "cce", c4.neutral_action)
    exported = lstm.accuracy(predicted, actions[test], weights[test], c4.neutral_action)
    assert result.metrics["held_out_accuracy"] == pytest.approx(exported, abs=1e-9)
    best = min(result.history["val_loss"])
    assert result.metrics["held_out_loss"] == pytest.approx(best, rel=1e-3)


@pytest.mark.slow
def test_mse_on_quantitative_inputs_exports_one_number_per_step(trained, tmp_path):
    c4 = load_game("connect4")
    arrays = enc.quantitative(load_dataset(trained[0] / "data", "sequences"), c4)
    arrays = {key: values[:120] for key, values in arrays.items()}
    params = {**FAST, "epochs": 2, "loss": "mse", "dense": 0, "layers": 2, "cells": "8-4"}
    meta = {"encoding": "quantitative", "game": "connect4"}
    result = lstm.train(arrays, meta, params, tmp_path / "model")
    runner = session(result.artifact)
    assert runner.get_inputs()[0].shape == ["batch", "steps", 2]  # played rounds, no padding
    assert runner.get_outputs()[0].shape[1:] == ["steps", 1]
    meta = runner.get_modelmeta().custom_metadata_map
    assert (meta["gridbots.loss"], meta["gridbots.length"]) == ("mse", "20")
    assert result.metrics["parity_max_abs_diff"] <= 1e-4
    assert set(result.history) >= {"loss", "val_loss", "val_accuracy"}


def test_step_weights_ignore_padding():
    import pyarrow as pa

    from features.schema import SEQUENCES

    c4 = load_game("connect4")
    # seat 0 wins after 4 plies of its own: rounds [3,2] [3,2] [3,2] [3,-1]
    row = {"game_id": 0, "player": 0, "num_players": 2, "length": 7, "outcome": 1.0,
           "actions": [3, -1, -1, 2] * 3 + [3, -1]}  # fmt: skip
    table = pa.Table.from_pylist([row, row], schema=SEQUENCES)
    arrays = enc.quantitative(table, c4)
    arrays["game_id"] = np.array([0, 1])
    meta = {"encoding": "quantitative", "game": "connect4"}
    _, inputs, actions, weights, _ = lstm.prepare(arrays, meta, lstm.DEFAULTS)
    assert inputs.shape == (2, 20, 2)
    assert weights[0].tolist() == [1, 1, 1] + [0] * 17  # rounds 1..3 are the targets
    assert actions[0, :4].tolist() == [3, 3, 3, -1]
    assert lstm.accuracy(np.full((2, 20), 3), actions, weights, -1) == 1.0


def test_cut_batches_hold_every_row_and_the_full_length_loss():
    """Bucketed batches: every training row once an epoch, each batch cut after its longest
    row's weighted steps (a multiple of 8), and the cut batch's weighted mean loss equal to the
    same rows at full length (Keras divides by padding too, so the weights are rescaled)."""
    from models.export import STEP_ROUNDING, keras_seeded, row_batches

    rng = np.random.default_rng(3)
    n, full = 90, 40
    steps = rng.integers(1, full + 1, size=n)
    weights = (np.arange(full)[None, :] < steps[:, None]).astype(np.float32)
    assert lstm.weighted_steps(weights).tolist() == steps.tolist()
    x = rng.integers(0, 2, size=(n, full, 3)).astype(np.int8)
    x[:, 0, 0] = np.arange(n)  # each row names itself at step 0
    index = rng.integers(0, 4, size=(n, full))
    y = np.eye(4, dtype=np.float32)[index]
    keras = keras_seeded(0)
    chosen = np.arange(n) % 4 != 0
    batches = row_batches(keras, [x, y, weights], chosen, 8, seed=1, steps=steps)
    inputs = keras.Input((None, 3))
    model = keras.Model(inputs, keras.layers.Dense(4, activation="softmax")(
        keras.layers.LSTM(5, return_sequences=True)(inputs)))  # fmt: skip
    model.compile(loss="categorical_crossentropy")
    seen, cuts = [], []
    for i in range(len(batches)):
        bx, by, bw = batches[i]
        rows = bx[:, 0, 0].astype(np.int64)
        assert np.array_equal(bx, x[rows, : bx.shape[1]])
        seen += rows.tolist()
        cuts.append(bx.shape[1])
        assert bx.shape[1] >= steps[rows].max()
        assert bx.shape[1] % STEP_ROUNDING == 0 or bx.shape[1] == full
        cut = model.evaluate(bx, by, sample_weight=bw, verbose=0)
        whole = model.evaluate(x[rows].astype(np.float32), y[rows], sample_weight=weights[rows],
                               verbose=0)  # fmt: skip
        assert cut == pytest.approx(whole, rel=1e-5)
    assert sorted(seen) == np.flatnonzero(chosen).tolist()
    assert min(cuts) < full  # like lengths batched together: some batches really are cut


def test_every_seat_on_plies_imitates_the_winners_moves():
    """One-move rounds, every seat: `outcomes` weights each step by its mover's result, so the
    winner's moves are learned in either seat and the loser's carry no weight."""
    import pyarrow as pa

    from features.schema import SEQUENCES

    c4 = load_game("connect4")
    moves = [3, -1, -1, 2, 3, -1, -1, 2, 3, -1]  # P0 3, P1 2, P0 3, P1 2, P0 3; seat 1 won
    rows = [{"game_id": g, "player": p, "num_players": 2, "length": 5, "outcome": o,
             "actions": moves} for g in (5, 6) for p, o in ((0, -1.0), (1, 1.0))]  # fmt: skip
    arrays = enc.quantitative(pa.Table.from_pylist(rows, schema=SEQUENCES), c4, plies=True)
    meta = {"encoding": "quantitative", "game": "connect4", "options": {"plies": True}}
    every = {**lstm.DEFAULTS, "player": -1}
    _, inputs, actions, weights, ids = lstm.prepare(arrays, meta, every)
    assert ids.tolist() == [5, 6] and inputs.shape == (2, 42, 2)  # each game once (seat 0's row)
    assert actions[0, :4].tolist() == [[-1, 2], [3, -1], [-1, 2], [3, -1]]  # targets: plies 1-4
    assert weights[0, :5].tolist() == [1, 0, 1, 0, 0]  # seat 1's two moves; the end is padding
    _, _, _, weights, _ = lstm.prepare(arrays, meta, {**every, "outcomes": "all"})
    assert weights[0, :5].tolist() == [1, 1, 1, 1, 0]
    with pytest.raises(ModelError, match="outcomes=wins"):  # seat 0 has no winning row
        lstm.prepare(arrays, {**meta, "options": {}}, every)


@pytest.mark.parametrize(
    "params, meta, message",
    [
        ({}, {"encoding": "board-onehot", "game": "connect4"}, "quantitative or qualitative"),
        ({"player": 2}, {"encoding": "quantitative", "game": "connect4"}, "seats"),
        ({"layers": 2, "cells": "8-8-8"}, {"encoding": "quantitative", "game": "connect4"}, "2"),
        ({"dense": 2}, {"encoding": "quantitative", "game": "connect4"}, "0 or 1"),
        ({"loss": "hinge"}, {"encoding": "quantitative", "game": "connect4"}, "cce or mse"),
        ({"cels": 9}, {"encoding": "quantitative", "game": "connect4"}, "unknown"),
        ({"outcomes": "most"}, {"encoding": "quantitative", "game": "connect4"}, "wins"),
    ],
)
def test_bad_configurations_are_model_errors(params, meta, message, tmp_path):
    arrays = {"inputs": np.zeros((4, 20, 2)), "targets": np.zeros((4, 20, 2)),
              "rounds": np.full(4, 5), "game_id": np.arange(4), "player": np.zeros(4),
              "outcome": np.ones(4)}  # fmt: skip
    with pytest.raises(ModelError, match=message):
        lstm.train(arrays, meta, params, tmp_path)


def test_family_registry_finds_the_module():
    assert family("lstm") is lstm and set(lstm.ENCODINGS) == {"quantitative", "qualitative"}
