"""Value MLP: a position's one-hot encoding → the probability that the side to move wins.

The Prismata-style state evaluator (references/004): D dense ReLU layers of width W on a board
one-hot or count one-hot input, one sigmoid output, Adam. Labels come from AI-vs-AI games: each
recorded position gets its game's final result for the side to move (outcome > 0 → 1, < 0 → 0,
a draw 0.5, a soft label binary cross-entropy handles). Games are split whole between training
and held-out data, since positions of one game are near-copies. Search agents use the exported
ONNX model through agents.value.features, which encodes a single state exactly as the dataset
encoder did (the metadata names the encoding and that encoder).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from models.base import ModelError, TrainingResult, artifact_metadata
from models.export import (
    checked_params,
    epoch_reporter,
    export_keras,
    keras_outputs,
    keras_seeded,
    row_batches,
    split_by_game,
)

ENCODINGS = ("board-onehot", "count-onehot", "value-planes")
#: the array each encoding's features live in (features.encode)
FEATURE_ARRAY = {"board-onehot": "board", "count-onehot": "counts", "value-planes": "planes"}
DEFAULTS: dict[str, Any] = {
    "layers": 2,  # D dense ReLU layers
    "width": 128,  # W units each (the study's grid: 2x64 .. 2x1024, 3x1024)
    "epochs": 10,
    "batch_size": 64,
    "learning_rate": 0.001,
    "dropout": 0.0,  # after each hidden layer
    "cell_encoder": 0,  # value-planes: E > 0 puts one Dense(E) shared by every cell first
    "pool": "none",  # with cell_encoder: "mean" averages the cells' codes (order-free totals)
    "relate": 0,  # with pool=mean: H > 0 adds what occupied cells see of each other (below)
    "holdout": 0.2,  # share of games held out
    "seed": 0,
}
GRID = ((2, 64), (2, 128), (2, 256), (2, 512), (2, 1024), (3, 1024))
INPUT_NAME = "position"
OUTPUT_NAME = "win_probability"
#: the encoder every export names in its metadata (`gridbots.encoder`): where it lives. Exports
#: made before agents/ was regrouped name `agents.value_features.encode_state`; nothing resolves
#: the label (agents read `gridbots.encoding`), so they load and play as before
ENCODER = "agents.value.features.encode_state"


def labels(outcome: np.ndarray) -> np.ndarray:
    """Soft targets of the side to move: win 1, loss 0, draw 0.5; a blended target in (-1, 1)
    (value-planes' playout_weight) in between, (1 + outcome) / 2."""
    outcome = np.clip(np.asarray(outcome, dtype=np.float32), -1.0, 1.0)
    return ((1.0 + outcome) / 2.0).astype(np.float32)


def relation_kernels(height: int, width: int) -> np.ndarray:
    """[R, N, N] 0/1 neighbourhoods between the N = height x width cells: Manhattan distance
    1, 2 and 3-5, and the same row or column (any distance): on grid games what a unit can
    reach in one step, two, a move's range, and along a line of sight."""
    row, col = np.divmod(np.arange(height * width), width)
    distance = np.abs(row[:, None] - row[None]) + np.abs(col[:, None] - col[None])
    line = (row[:, None] == row[None]) | (col[:, None] == col[None])
    rings = [distance == 1, distance == 2, (distance >= 3) & (distance <= 5), line & (distance > 0)]
    return np.stack(rings).astype(np.float32)


def _relations(x: Any, params: dict[str, Any], planes: tuple, keras: Any) -> Any:
    """The relational block: [B, N, C] cells → [B, E + H] pooled codes. Only occupied cells
    (any feature set) take part: each gets a code z (the shared encoder), sums the codes of
    the occupied cells in each neighbourhood of `relation_kernels`, and a shared Dense(H) reads
    its own code beside those sums; the mean over the board of z and of that output feeds the
    dense layers. A mean pool alone keeps totals per feature but not who stands near whom,
    which is what decides a tactics fight (study 004's playouts play it out)."""
    ops, layers = keras.ops, keras.layers
    kernels = relation_kernels(*planes[1:])
    count, cells = kernels.shape[0], kernels.shape[1]
    stacked = kernels.reshape(count * cells, cells)
    occupied = layers.Lambda(
        lambda t: ops.expand_dims(ops.cast(ops.max(ops.abs(t), axis=-1) > 0, "float32"), -1)
    )(x)
    code = int(params["cell_encoder"])
    z = layers.Multiply()([layers.Dense(code, activation="relu")(x), occupied])

    def neighbourhood_sums(t: Any) -> Any:  # [B, N, E] → [B, N, R * E], neighbourhood-major
        per_kind = ops.reshape(ops.matmul(stacked, t), (-1, count, cells, code))
        return ops.reshape(ops.transpose(per_kind, (0, 2, 1, 3)), (-1, cells, count * code))

    sums = layers.Lambda(neighbourhood_sums)(z)
    h = layers.Dense(int(params["relate"]), activation="relu")(layers.Concatenate()([z, sums]))
    h = layers.Multiply()([h, occupied])
    pooled = [layers.GlobalAveragePooling1D()(z), layers.GlobalAveragePooling1D()(h)]
    return layers.Concatenate()(pooled)


def build(params: dict[str, Any], size: int, keras: Any, planes: tuple | None = None):
    """D x W ReLU layers and a sigmoid (uncompiled). With `cell_encoder` E and planes-first
    inputs of shape `planes` (C, H, W), every cell's C features first pass one shared Dense(E)
    (study 001's input encoder), so the first wide layer sees H * W * E values, not C * H * W."""
    inputs = keras.Input((size,), name=INPUT_NAME)
    x = inputs
    if params.get("cell_encoder", 0) and planes is not None:
        channels, cells = planes[0], int(np.prod(planes[1:]))
        x = keras.layers.Reshape((channels, cells))(x)
        x = keras.layers.Permute((2, 1))(x)
        if params.get("relate", 0):
            x = _relations(x, params, planes, keras)
        else:
            x = keras.layers.Dense(int(params["cell_encoder"]), activation="relu")(x)
            if params.get("pool", "none") == "mean":
                x = keras.layers.GlobalAveragePooling1D()(x)
            else:
                x = keras.layers.Flatten()(x)
    for _ in range(int(params["layers"])):
        x = keras.layers.Dense(int(params["width"]), activation="relu")(x)
        if params["dropout"]:
            x = keras.layers.Dropout(float(params["dropout"]))(x)
    outputs = keras.layers.Dense(1, activation="sigmoid", name=OUTPUT_NAME)(x)
    return keras.Model(inputs, outputs, name="value_mlp")


def scores(probability: np.ndarray, target: np.ndarray) -> dict[str, float]:
    """Accuracy on decisive positions (p > 0.5 ⇔ win), Brier score on all of them."""
    probability = np.asarray(probability, dtype=np.float64).ravel()
    decisive = target != 0.5
    hits = (probability[decisive] > 0.5) == (target[decisive] > 0.5)
    return {
        "val_accuracy": float(hits.mean()) if decisive.any() else 0.0,
        "val_brier": float(np.mean((probability - target) ** 2)) if len(target) else 0.0,
    }


def _check(params: dict[str, Any]) -> None:
    for key in ("layers", "width", "epochs", "batch_size"):
        if params[key] < 1:
            raise ModelError(f"value-mlp: {key}={params[key]} must be at least 1")
    if params["cell_encoder"] < 0:
        raise ModelError("value-mlp: cell_encoder must be 0 (none) or a width")
    if params["pool"] not in ("none", "mean"):
        raise ModelError(f"value-mlp: pool={params['pool']!r}; expected none or mean")
    if params["pool"] == "mean" and not params["cell_encoder"]:
        raise ModelError("value-mlp: pool=mean averages the cell encoder's codes: set cell_encoder")
    if params["relate"] < 0:
        raise ModelError("value-mlp: relate must be 0 (none) or a width")
    if params["relate"] and params["pool"] != "mean":
        raise ModelError("value-mlp: relate pools its cells' codes: set pool=mean and cell_encoder")
    if not 0.0 <= params["dropout"] < 1.0:
        raise ModelError(f"value-mlp: dropout={params['dropout']} must lie in [0, 1)")


def train(
    arrays: dict[str, np.ndarray],
    meta: dict[str, Any],
    params: dict[str, Any],
    out_dir: str | Path,
    progress: Any = None,
) -> TrainingResult:
    """Trains, reports per-epoch metrics, exports model.onnx (with parity.json) to out_dir."""
    params = checked_params("value-mlp", DEFAULTS, params)
    _check(params)
    encoding = meta.get("encoding")
    if encoding not in ENCODINGS:
        raise ModelError(
            f"value-mlp trains on {' or '.join(ENCODINGS)} encodings, not {encoding!r}"
        )
    inputs = np.asarray(arrays[FEATURE_ARRAY[encoding]], dtype=np.float32)
    planes = tuple(inputs.shape[1:]) if encoding == "value-planes" else None
    inputs = inputs.reshape(len(inputs), -1)
    target = labels(arrays["outcome"])
    train_rows, test_rows = split_by_game(arrays["game_id"], params["holdout"], params["seed"])
    keras = keras_seeded(params["seed"])
    model = build(params, inputs.shape[1], keras, planes)
    model.compile(optimizer=keras.optimizers.Adam(params["learning_rate"]),
                  loss="binary_crossentropy")  # fmt: skip
    y_test = target[test_rows]
    column = target[:, None]
    batch = int(params["batch_size"])
    history: dict[str, list[float]] = {}

    def held_out() -> dict[str, float]:  # one pass over the held-out rows: loss and scores
        test = row_batches(keras, [inputs], test_rows, 1024)
        p = np.concatenate([keras_outputs(model, b) for b in test]).astype(np.float64).ravel()
        p = np.clip(p, 1e-7, 1.0 - 1e-7)  # as Keras' binary cross-entropy clips
        loss = -np.mean(y_test * np.log(p) + (1.0 - y_test) * np.log(1.0 - p))
        return {"val_loss": float(loss), **scores(p, y_test)}

    model.fit(
        row_batches(keras, [inputs, column], train_rows, batch, seed=params["seed"]),
        epochs=int(params["epochs"]),
        shuffle=False,  # row_batches shuffles from the seed (see there)
        verbose=0,
        callbacks=[epoch_reporter(keras, held_out, history, progress)],
    )
    out_dir = Path(out_dir)
    metadata = artifact_metadata(
        meta["game"], "value-mlp", encoding, "value",
        input_size=inputs.shape[1], layers=params["layers"], width=params["width"],
        cell_encoder=params["cell_encoder"], pool=params["pool"], relate=params["relate"],
        encoder=ENCODER, count_length=40,
        output="probability that the side to move wins (draws count half)",
    )  # fmt: skip
    sample = inputs[np.flatnonzero(test_rows)[:256]]  # the parity check's inputs
    report = export_keras(model, out_dir / "model.onnx", sample, metadata, INPUT_NAME,
                          OUTPUT_NAME, report_path=out_dir / "parity.json")  # fmt: skip
    final = {k: v[-1] for k, v in history.items()}
    decisive = y_test != 0.5
    majority = float(target[train_rows].mean() >= 0.5)
    metrics = {
        "held_out_loss": final.get("val_loss", float("nan")),
        "held_out_accuracy": final.get("val_accuracy", 0.0),
        "held_out_brier": final.get("val_brier", float("nan")),
        "majority_accuracy": float(((y_test[decisive] > 0.5) == majority).mean())
        if decisive.any()
        else 0.0,
        "held_out_draw_share": float((~decisive).mean()) if len(y_test) else 0.0,
        "train_positions": float(train_rows.sum()),
        "held_out_positions": float(test_rows.sum()),
        "parity_max_abs_diff": report["max_abs_diff"],
    }
    return TrainingResult(
        family="value-mlp",
        game=meta["game"],
        encoding=encoding,
        params=params,
        artifact=out_dir / "model.onnx",
        artifact_kind="onnx",
        metrics=metrics,
        history=history,
        extra_artifacts=[Path(report["report"])],
    )
