"""PlayerZero: the AlphaZero-style policy-value network of seed 001, built for any board game.

The network reads a position the way the game's `observation_tensor` draws it, planes first
`(C, H, W)`, and the legal-action mask as a second input:

  planes → per-cell input encoder (one Dense layer applied to every cell with shared weights,
  study §3.3.2) → residual tower of `blocks` x `channels` (3x3 conv, batch norm, ReLU; sizes
  from `scale` as Table 1: scale 1 = 3 x 16 … scale 5 = 11 x 80)
  → policy head: logits + (-1e8 * (1 - mask)) → softmax, so illegal actions get exactly 0
  → value head: 1x1 conv, dense, tanh: the expected result for the side to move in [-1, 1]

The policy head follows the game's action layout (`Game.action_cells`): where action ids lie
on the board's cells (Othello's squares, tactics' 12 x 12 cells x 30 ids) a 1x1 convolution
gives each cell its ids' logits (plus a dense logit per extra action, such as the pass);
otherwise (Connect 4's columns) a small conv and a dense layer over the whole board.

Training (CleanRL-style, one readable loop): cross-entropy to the search policy + value_weight
x MSE to the value target + L2 on every kernel, Adam with a warm-up then cosine learning-rate
decay, games split whole between training and held-out rows. The value target mixes the game
result z with the search's root value q (`q_weight`, the "average z and q" of the notes).
Warm start: `warm_start` names a previous network's weights file of the same shape. The ONNX
file has inputs `planes`, `mask` and outputs `policy`, `value`, `gridbots.kind` =
`policy-value`, and passes the export parity check (models.export).
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from features.symmetry import game_symmetries, moved
from models.base import ModelError, TrainingResult, artifact_metadata
from models.export import checked_params, export_keras, keras_outputs, keras_seeded, split_by_game

ENCODINGS = ("planes",)
KIND = "policy-value"
#: seed 001 Table 1: scale → (residual blocks, channels)
SCALES = {1: (3, 16), 2: (5, 32), 3: (7, 48), 4: (9, 64), 5: (11, 80)}
DEFAULTS: dict[str, Any] = {
    "scale": 1,  # Table 1 row; blocks / channels > 0 override it
    "blocks": 0,
    "channels": 0,
    "value_hidden": 64,  # units of the value head's dense layer
    "epochs": 2,  # passes over the training rows (unless `steps` > 0)
    "steps": 0,  # minibatches to train; 0: epochs x rows / batch_size
    "batch_size": 256,
    "learning_rate": 0.002,  # peak, after a linear warm-up over 5% of the steps
    "lr_floor": 0.05,  # cosine decay ends at learning_rate x lr_floor
    "l2": 1e-4,  # weight of the L2 penalty on every kernel
    "value_weight": 1.0,
    "q_weight": 0.5,  # value target = (1 - q_weight) z + q_weight q (q: the search's root value)
    "discount": 1.0,  # z counts discount^k at k plies from the end (needs `plies_left` rows)
    "play_sims": 0,  # recommended search settings written into the model (0: the agent's own)
    "play_c": 0.0,
    "play_solve": 0,  # plies of exact search at each new leaf (puct `solve=`); 0: none
    "play_prior_temp": 1.0,  # puct `prior_temp=`: the priors as p ** (1 / T) at play time
    "holdout": 0.1,  # share of games held out
    "warm_start": "",  # weights file (.weights.h5) of a previous network of the same shape
    "seed": 0,
}
INPUTS = ("planes", "mask")
OUTPUTS = ("policy", "value")
WEIGHTS_FILE = "network.weights.h5"
NETWORK_FILE = "network.json"
OBJECTIVE = ("held_out_loss", "min")


def tower_shape(params: dict[str, Any]) -> tuple[int, int]:
    """(blocks, channels) of a parameter set: the scale's, unless overridden."""
    scale = int(params["scale"])
    if scale not in SCALES and not (params["blocks"] and params["channels"]):
        raise ModelError(f"playerzero: scale={scale} is not one of {sorted(SCALES)}")
    blocks, channels = SCALES.get(scale, (0, 0))
    return int(params["blocks"] or blocks), int(params["channels"] or channels)


def describe_game(game: Any) -> dict[str, Any]:
    """What the network's shape depends on: observation shape, actions and their layout."""
    return {
        "game": game.spec(),
        "observation_shape": [int(d) for d in game.observation_shape],
        "num_actions": int(game.num_actions),
        "action_cells": list(game.action_cells) if game.action_cells else None,
    }


def _mask_layer(keras: Any):
    """The study's "Process Mask" step as a layer: logits + (-1e8) * (1 - mask)."""

    class MaskLogits(keras.layers.Layer):
        def call(self, logits, mask):
            return logits + (mask - 1.0) * 1e8

    return MaskLogits(name="masked_logits")


def build(shape: dict[str, Any], blocks: int, channels: int, params: dict[str, Any], keras: Any):
    """The training network: (planes, mask) → (masked policy logits, value [batch, 1])."""
    layers = keras.layers
    reg = keras.regularizers.L2(float(params["l2"])) if params["l2"] else None
    observed = list(shape["observation_shape"])
    if len(observed) not in (1, 3):
        raise ModelError(
            f"playerzero reads planes-first (C, H, W) or flat (C,) observations; {shape['game']} "
            f"has {observed}"
        )
    c, h, w = observed if len(observed) == 3 else (observed[0], 1, 1)
    actions = shape["num_actions"]
    planes = keras.Input(tuple(observed), name=INPUTS[0])
    mask = keras.Input((actions,), name=INPUTS[1])
    if len(observed) == 3:
        x = layers.Permute((2, 3, 1))(planes)  # channels last: the CPU kernels want it
    else:  # a flat observation (pig's scores) is one cell of C channels: the tower is an MLP
        x = layers.Reshape((1, 1, c))(planes)
    x = layers.Dense(channels, activation="relu", kernel_regularizer=reg, name="encoder")(x)

    def conv_bn(x, filters, size, relu=True):
        x = layers.Conv2D(filters, size, padding="same", use_bias=False, kernel_regularizer=reg)(x)
        x = layers.BatchNormalization()(x)
        return layers.ReLU()(x) if relu else x

    for _ in range(blocks):
        y = conv_bn(conv_bn(x, channels, 3), channels, 3, relu=False)
        x = layers.ReLU()(layers.Add()([x, y]))
    cells = shape["action_cells"]
    if cells and cells[0] * h * w + cells[1] == actions:
        per_cell, extra = cells
        cell = layers.Conv2D(per_cell, 1, kernel_regularizer=reg, name="policy_cells")(x)
        logits = layers.Flatten()(cell)  # channels last: index (row * W + col) * ids + id
        if extra:
            pooled = layers.GlobalAveragePooling2D()(x)
            more = layers.Dense(extra, kernel_regularizer=reg, name="policy_extra")(pooled)
            logits = layers.Concatenate()([logits, more])
    else:
        p = layers.Flatten()(conv_bn(x, 2, 1))
        logits = layers.Dense(actions, kernel_regularizer=reg, name="policy_dense")(p)
    masked = _mask_layer(keras)(logits, mask)
    v = layers.Flatten()(conv_bn(x, 1, 1))
    v = layers.Dense(int(params["value_hidden"]), activation="relu", kernel_regularizer=reg)(v)
    value = layers.Dense(1, activation="tanh", kernel_regularizer=reg, name=OUTPUTS[1])(v)
    return keras.Model([planes, mask], [masked, value], name="playerzero")


def export_network(train_model: Any, keras: Any):
    """The exported form: masked logits through a softmax (illegal actions exactly 0)."""
    logits, value = train_model.outputs
    policy = keras.layers.Softmax(name=OUTPUTS[0])(logits)
    return keras.Model(train_model.inputs, [policy, value], name="playerzero_export")


def value_targets(arrays: dict[str, np.ndarray], q_weight: float, discount: float = 1.0):
    """(1 - q_weight) z + q_weight q, q = the root's visit-weighted mean value (where known);
    with a discount, z counts discount^k at k plies from the end and q one ply more than its
    children's values."""
    z = np.asarray(arrays["outcome"], dtype=np.float32)
    if discount < 1.0:
        if "plies_left" not in arrays:
            raise ModelError("playerzero: discount < 1 needs `plies_left` in the training rows")
        z = (z * discount ** np.asarray(arrays["plies_left"], dtype=np.float64)).astype(np.float32)
    if not q_weight:
        return z
    q = root_values(arrays)
    if q is None:
        return z
    q = np.where(np.isfinite(q), discount * np.nan_to_num(q), z)
    return ((1.0 - q_weight) * z + q_weight * np.clip(q, -1.0, 1.0)).astype(np.float32)


def root_values(arrays: dict[str, np.ndarray]) -> np.ndarray | None:
    """Each row's search root value (the visit-weighted mean of its children's scores), NaN
    where the search left none; a stored `root_value` column, else from `action_scores`, else
    None. Encoders keep the column instead of the scores: 4,320 floats a row on tactics."""
    if "root_value" in arrays:
        return np.asarray(arrays["root_value"], dtype=np.float32)
    if "action_scores" not in arrays:
        return None
    scores = np.nan_to_num(arrays["action_scores"], nan=0.0)
    policy = np.asarray(arrays["policy"], dtype=np.float32)
    weight = policy.sum(axis=1)
    known = (weight > 0) & np.asarray(arrays.get("has_policy", weight > 0), dtype=bool)
    q = (policy * scores).sum(axis=1) / np.maximum(weight, 1e-9)
    return np.where(known, q, np.nan).astype(np.float32)


def _check(params: dict[str, Any]) -> None:
    for key in ("batch_size", "value_hidden"):
        if params[key] < 1:
            raise ModelError(f"playerzero: {key}={params[key]} must be at least 1")
    if params["epochs"] < 1 and params["steps"] < 1:
        raise ModelError("playerzero: train at least one epoch or one step")
    if not 0.0 <= params["q_weight"] <= 1.0:
        raise ModelError(f"playerzero: q_weight={params['q_weight']} must lie in [0, 1]")
    if not 0.0 < params["discount"] <= 1.0:
        raise ModelError(f"playerzero: discount={params['discount']} must lie in (0, 1]")
    if not 0.0 < params["play_prior_temp"] <= 100.0:
        raise ModelError(f"playerzero: play_prior_temp={params['play_prior_temp']} must lie in "
                         "(0, 100]")  # fmt: skip


def game_of(meta: dict[str, Any]) -> Any:
    from engine import parse_game_spec

    return parse_game_spec(meta["game"])


def train(
    arrays: dict[str, np.ndarray],
    meta: dict[str, Any],
    params: dict[str, Any],
    out_dir: str | Path,
    progress: Any = None,
) -> TrainingResult:
    """Trains on `planes` rows, writes network weights + model.onnx (parity-checked) to out_dir.

    `progress(epoch, metrics)` is called after every pass (or every 1/4 of the steps)."""
    params = checked_params("playerzero", DEFAULTS, params)
    _check(params)
    if meta.get("encoding") not in ENCODINGS:
        raise ModelError(f"playerzero trains on the planes encoding, not {meta.get('encoding')!r}")
    game = game_of(meta)
    shape = describe_game(game)
    planes = arrays["planes"]  # stored compact (float16 / uint8): cast per batch
    if list(planes.shape[1:]) != shape["observation_shape"]:
        raise ModelError(
            f"playerzero: planes of shape {list(planes.shape[1:])} do not fit {game.spec()}'s "
            f"observation {shape['observation_shape']}"
        )
    mask, policy = arrays["mask"], arrays["policy"]
    has_policy = np.asarray(
        arrays.get("has_policy", policy.sum(axis=1, dtype=np.float32) > 0), dtype=np.float32
    )
    target = value_targets(arrays, float(params["q_weight"]), float(params["discount"]))
    train_rows, test_rows = split_by_game(arrays["game_id"], params["holdout"], params["seed"])
    keras = keras_seeded(params["seed"])
    blocks, channels = tower_shape(params)
    model = build(shape, blocks, channels, params, keras)
    if params["warm_start"]:
        _load_weights(model, Path(params["warm_start"]))
    started = time.perf_counter()
    history = _fit(
        keras, model, (planes, mask, policy, target, has_policy), train_rows, test_rows, params,
        progress, game_symmetries(game)[: 1 if "symmetry" in arrays else None],
    )  # fmt: skip
    seconds = time.perf_counter() - started
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_weights(str(out_dir / WEIGHTS_FILE))
    network = {
        **shape,
        "scale": params["scale"],
        "blocks": blocks,
        "channels": channels,
        "value_hidden": params["value_hidden"],
        "parameters": int(model.count_params()),
    }
    (out_dir / NETWORK_FILE).write_text(json.dumps(network, indent=2) + "\n")
    play = {"play.discount": params["discount"]}
    if params["play_sims"]:
        play["play.sims"] = params["play_sims"]
    if params["play_c"]:
        play["play.c"] = params["play_c"]
    if params["play_solve"]:
        play["play.solve"] = params["play_solve"]
    if params["play_prior_temp"] != 1.0:
        play["play.prior_temp"] = params["play_prior_temp"]
    metadata = artifact_metadata(
        meta["game"], "playerzero", "planes", KIND,
        inputs=",".join(INPUTS), outputs=",".join(OUTPUTS),
        observation_shape=json.dumps(shape["observation_shape"]),
        num_actions=shape["num_actions"], scale=params["scale"], blocks=blocks,
        channels=channels, parameters=network["parameters"],
        output="policy: search policy over num_actions (0 on illegal); value: expected result "
        "for the side to move in [-1, 1]", **play,
    )  # fmt: skip
    held = np.flatnonzero(test_rows)[:256]
    report = export_keras(
        export_network(model, keras), out_dir / "model.onnx", [planes[held], mask[held]],
        metadata, list(INPUTS), list(OUTPUTS), report_path=out_dir / "parity.json",
    )  # fmt: skip
    final = {k: v[-1] for k, v in history.items() if v}
    metrics = {
        **{k: float(v) for k, v in final.items() if k.startswith("held_out") or k == "loss"},
        "train_positions": float(train_rows.sum()),
        "held_out_positions": float(test_rows.sum()),
        "train_seconds": round(seconds, 3),
        "parameters": float(network["parameters"]),
        "parity_max_abs_diff": report["max_abs_diff"],
    }
    return TrainingResult(
        family="playerzero",
        game=meta["game"],
        encoding="planes",
        params=params,
        artifact=out_dir / "model.onnx",
        artifact_kind="onnx",
        metrics=metrics,
        history=history,
        extra_artifacts=[Path(report["report"]), out_dir / WEIGHTS_FILE, out_dir / NETWORK_FILE],
    )


def _load_weights(model: Any, path: Path) -> None:
    if not path.is_file():
        raise ModelError(f"playerzero: warm start file {path} not found")
    import warnings

    try:
        with warnings.catch_warnings():  # Keras notes the weightless Add / ReLU operations
            warnings.simplefilter("ignore", UserWarning)
            model.load_weights(str(path))
    except (ValueError, OSError) as error:
        raise ModelError(f"playerzero: cannot warm start from {path}: {error}") from None


#: a training of fewer steps runs its step eagerly (same operations, no graph to trace)
TRACE_STEPS = 64


def _fit(keras, model, data, train_rows, test_rows, params, progress,
         symmetries) -> dict[str, list[float]]:  # fmt: skip
    """Minibatch Adam on policy CE + value MSE + L2; held-out metrics at each report point."""
    import tensorflow as tf

    planes, mask, policy, target, has_policy = data
    rows = np.flatnonzero(train_rows)
    batch = min(int(params["batch_size"]), len(rows))
    per_epoch = max(1, len(rows) * len(symmetries) // batch)  # every row under every symmetry
    steps = int(params["steps"]) or int(params["epochs"]) * per_epoch
    warmup = max(1, steps // 20)
    schedule = keras.optimizers.schedules.CosineDecay(
        0.0, max(1, steps - warmup), alpha=float(params["lr_floor"]),
        warmup_target=float(params["learning_rate"]), warmup_steps=warmup,
    )  # fmt: skip
    optimizer = keras.optimizers.Adam(schedule)
    value_weight = float(params["value_weight"])

    def train_step(x, m, p, z, w):
        with tf.GradientTape() as tape:
            logits, value = model([x, m], training=True)
            policy_loss = _policy_loss(tf, logits, p, w)
            value_loss = tf.reduce_mean(tf.square(value[:, 0] - z))
            loss = policy_loss + value_weight * value_loss + tf.add_n(model.losses or [0.0])
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
        return loss, policy_loss, value_loss

    if steps >= TRACE_STEPS:  # tracing the graph costs seconds: only a longer run repays it
        train_step = tf.function(train_step, reduce_retracing=True)
    history: dict[str, list[float]] = {}
    report_every = per_epoch if params["steps"] == 0 else max(1, math.ceil(steps / 4))
    rng = np.random.default_rng(int(params["seed"]))
    flips = np.random.default_rng([int(params["seed"]), 1])  # apart from the batch order
    order = rng.permutation(rows)
    cursor, running = 0, []
    for step in range(steps):
        if cursor + batch > len(order):
            order, cursor = rng.permutation(rows), 0
        pick = np.sort(order[cursor : cursor + batch])
        cursor += batch
        x, m, p = symmetric_batch((planes[pick], mask[pick], policy[pick]), symmetries, flips)
        out = train_step(x, m, p, target[pick], has_policy[pick])
        running.append([float(t) for t in out])
        if (step + 1) % report_every == 0 or step + 1 == steps:
            loss, p_loss, v_loss = np.mean(running, axis=0)
            running = []
            metrics = {"loss": loss, "policy_loss": p_loss, "value_loss": v_loss,
                       **evaluate(model, data, test_rows)}  # fmt: skip
            for key, value in metrics.items():
                history.setdefault(key, []).append(float(value))
            if progress is not None:
                progress(len(history["loss"]) - 1, metrics)
    return history


def symmetric_batch(batch: tuple, symmetries: list, rng: np.random.Generator) -> tuple:
    """(planes, mask, policy) as float32, each row under a random one of the game's symmetries:
    augmentation drawn per batch, so the stored rows stay one copy each."""
    planes, mask, policy = (np.asarray(a, dtype=np.float32) for a in batch)
    if len(symmetries) < 2:
        return planes, mask, policy
    which = rng.integers(len(symmetries), size=len(planes))
    for k in range(1, len(symmetries)):
        rows = np.flatnonzero(which == k)
        if len(rows):
            planes[rows] = moved("planes", planes[rows], symmetries[k])
            mask[rows] = moved("mask", mask[rows], symmetries[k])
            policy[rows] = moved("policy", policy[rows], symmetries[k])
    return planes, mask, policy


def _policy_loss(tf: Any, logits: Any, target: Any, weight: Any) -> Any:
    """Cross-entropy to the target policy from masked logits (log-softmax: never log 0)."""
    per_row = -tf.reduce_sum(target * tf.nn.log_softmax(logits), axis=1)
    return tf.reduce_sum(per_row * weight) / tf.maximum(tf.reduce_sum(weight), 1.0)


def evaluate(model: Any, data: tuple, rows: np.ndarray) -> dict[str, float]:
    """Held-out losses, policy top-1 agreement with the search, value MSE and sign accuracy."""
    planes, mask, policy, target, has_policy = data
    idx = np.flatnonzero(rows)
    if not len(idx):
        return {}
    policy = np.asarray(policy[idx], dtype=np.float32)  # the held-out rows as stored
    logits, value = keras_outputs(model, [np.asarray(planes[idx], dtype=np.float32),
                                          np.asarray(mask[idx], dtype=np.float32)])  # fmt: skip
    logits = logits.astype(np.float64)
    logits -= logits.max(axis=1, keepdims=True)
    log_p = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    weight = has_policy[idx]
    ce = -(policy * np.where(policy > 0, log_p, 0.0)).sum(axis=1)
    policy_loss = float((ce * weight).sum() / max(weight.sum(), 1.0))
    agree = (np.argmax(logits, axis=1) == np.argmax(policy, axis=1)) * weight
    value = value[:, 0]
    decisive = np.abs(target[idx]) > 0.5
    signs = np.sign(value[decisive]) == np.sign(target[idx][decisive])
    value_loss = float(np.mean((value - target[idx]) ** 2))
    return {
        "held_out_loss": policy_loss + value_loss,
        "held_out_policy_loss": policy_loss,
        "held_out_value_loss": value_loss,
        "held_out_policy_accuracy": float(agree.sum() / max(weight.sum(), 1.0)),
        "held_out_value_sign_accuracy": float(signs.mean()) if decisive.any() else 0.0,
    }
