"""Keras → ONNX export: names, opset, metadata, parity against Keras, and a broken export caught.

The models here are untrained but seeded: parity is about the converter, not about learning, so
random weights exercise it as well as trained ones (tests/test_lstm.py and test_value_mlp.py
export trained models).
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from agents.onnx.runtime import session
from models import export
from models.base import ModelError, artifact_metadata


@pytest.fixture(scope="module")
def keras():
    return export.keras_seeded(3)


def small_lstm(keras, steps=6, features=5):
    inputs = keras.Input((steps, features), name="x")
    x = keras.layers.LSTM(8, return_sequences=True)(inputs)
    outputs = keras.layers.Dense(4, activation="softmax")(x)
    return keras.Model(inputs, outputs)


def small_mlp(keras, size=12):
    inputs = keras.Input((size,), name="x")
    x = keras.layers.Dense(16, activation="relu")(inputs)
    return keras.Model(inputs, keras.layers.Dense(1, activation="sigmoid")(x))


def test_lstm_export_names_metadata_and_parity(keras, tmp_path):
    model = small_lstm(keras)
    held_out = np.random.default_rng(0).random((40, 6, 5), dtype=np.float32)
    meta = artifact_metadata("connect4", "lstm", "qualitative", "sequence", player=0)
    report = export.export_keras(model, tmp_path / "m.onnx", held_out, meta, "sequence", "next")
    assert report["passed"] and report["max_abs_diff"] <= 1e-4 and report["samples"] == 40
    assert report["opset"] >= 17
    saved = json.loads((tmp_path / "m.parity.json").read_text())
    assert saved["max_abs_diff"] == report["max_abs_diff"] and saved["tolerance"] == 1e-4
    assert "seconds" in report and "seconds" not in saved  # a file a rerun must write alike
    assert saved["artifact"] == "m.onnx"  # the model beside it, not this machine's path

    runner = session(tmp_path / "m.onnx")
    (given,), (produced,) = runner.get_inputs(), runner.get_outputs()
    assert (given.name, produced.name) == ("sequence", "next")
    assert given.shape == ["batch", 6, 5]
    stored = runner.get_modelmeta().custom_metadata_map
    assert stored["gridbots.family"] == "lstm" and stored["gridbots.kind"] == "sequence"
    assert stored["gridbots.player"] == "0" and "gridbots.version" in stored
    assert export.onnx_metadata(tmp_path / "m.onnx") == stored
    # independent of the export's own check: a fresh batch size through onnxruntime
    probe = np.random.default_rng(1).random((3, 6, 5), dtype=np.float32)
    got = runner.run(None, {"sequence": probe})[0]
    assert np.abs(got - np.asarray(model(probe))).max() <= 1e-4
    assert np.allclose(got.sum(axis=-1), 1.0, atol=1e-5)  # the softmax survived conversion


def test_mlp_export_batch_axis_is_free(keras, tmp_path):
    model = small_mlp(keras)
    held_out = np.random.default_rng(2).integers(0, 2, (30, 12)).astype(np.float32)
    meta = artifact_metadata("connect4", "value-mlp", "board-onehot", "value")
    export.export_keras(model, tmp_path / "v.onnx", held_out, meta, "position", "win")
    runner = session(tmp_path / "v.onnx")
    for batch in (1, 7):
        out = runner.run(["win"], {"position": held_out[:batch]})[0]
        assert out.shape == (batch, 1) and ((out > 0) & (out < 1)).all()


def test_a_tampered_weight_is_caught_and_no_model_is_written(keras, tmp_path, monkeypatch):
    model = small_mlp(keras)
    held_out = np.random.default_rng(4).integers(0, 2, (30, 12)).astype(np.float32)
    convert = export._convert

    def tampered(*args, **kwargs):
        from onnx import numpy_helper

        proto = convert(*args, **kwargs)
        weights = [t for t in proto.graph.initializer if t.data_type == 1 and t.dims]
        assert weights, "the converted graph holds its weights as initializers"
        values = numpy_helper.to_array(weights[0]).copy()
        values.flat[0] += 0.5
        weights[0].CopyFrom(numpy_helper.from_array(values, weights[0].name))
        return proto

    monkeypatch.setattr(export, "_convert", tampered)
    meta = artifact_metadata("connect4", "value-mlp", "board-onehot", "value")
    with pytest.raises(ModelError, match="disagrees with Keras"):
        export.export_keras(model, tmp_path / "bad.onnx", held_out, meta, "position", "win")
    assert not (tmp_path / "bad.onnx").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["bad.parity.json"]
    report = json.loads((tmp_path / "bad.parity.json").read_text())
    assert not report["passed"] and report["max_abs_diff"] > 1e-4


def test_refusals(keras, tmp_path):
    model = small_mlp(keras)
    meta = artifact_metadata("connect4", "value-mlp", "board-onehot", "value")
    data = np.zeros((4, 12), np.float32)
    with pytest.raises(ModelError, match="opset"):
        export.export_keras(model, tmp_path / "a.onnx", data, meta, "x", "y", opset=13)
    with pytest.raises(ModelError, match="held-out"):
        export.export_keras(model, tmp_path / "a.onnx", data[:0], meta, "x", "y")
    (tmp_path / "junk.onnx").write_bytes(b"\x08\x07not a model at all")
    with pytest.raises(ModelError, match="cannot read"):
        export.onnx_metadata(tmp_path / "junk.onnx")


def test_split_by_game_keeps_games_whole():
    game_id = np.repeat(np.arange(50), 7)
    train, test = export.split_by_game(game_id, 0.2, seed=5)
    assert not set(game_id[train]) & set(game_id[test])
    assert len(set(game_id[test])) == 10 and (train | test).all()
    with pytest.raises(ModelError):
        export.split_by_game(np.zeros(9, np.int64), 0.2, seed=0)  # one game cannot be split


def test_checked_params():
    defaults = {"layers": 2, "cells": "96", "dropout": 0.2}
    merged = export.checked_params("lstm", defaults, {"layers": "3", "cells": 42})
    assert merged == {"layers": 3, "cells": "42", "dropout": 0.2}
    with pytest.raises(ModelError, match="unknown"):
        export.checked_params("lstm", defaults, {"layer": 3})
    with pytest.raises(ModelError, match="must be int"):
        export.checked_params("lstm", defaults, {"layers": "many"})
