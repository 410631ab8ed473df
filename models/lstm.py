"""The study's "recurrent architecture": X stacked LSTM layers, Y ∈ {0, 1} dense, then the output.

No encoder-decoder bottleneck: every LSTM layer returns its whole sequence, so the history stays
available up to the output layer (the study found summarising it into one context vector made
bots that played illegal and suicidal moves). Training is sequence to sequence on the rows of
`player` (the learning seat) whose outcome passes `outcomes` (the study's: wins), with the
input rounds 0..T-1 and the targets rounds 1..T (features.encode already shifts them), so one
game teaches every one of its steps. On one-move rounds (`plies`) an every-seat model reads
every game and weights each step by its mover's outcome instead (mover_passes); in a
simultaneous game every seat acts each lap, so each seat's block is weighted by its own. With
`boards` (`gridbots encode --boards`) each step's input also holds the board that round left;
`conv` then reads that board through a small per-step convolutional encoder (filters per layer,
"32-32") before the LSTMs: a dense layer over flat cells has to learn every line of four on its
own, a 4×4 kernel sees each one wherever it sits. The ONNX input stays [n, T, bits], so the
agent and its codec do not change.

What the output represents, per step t of the input (rounds 0..t seen):
  loss `cce`: a softmax over num_actions + 1 classes for the learning seat's action in round
              t + 1: class 0 is the neutral value (no action: the game is over), class a + 1
              is action a (the player's block of the qualitative encoding).
  loss `mse`: one number, that action itself (the neutral value when none); round it to read it.
With `player` -1 the model learns every seat at once (a team that plays together: Sokoban's
players): the output holds one softmax block per seat, [num_players, num_actions + 1] per step,
trained on seat 0's rows (every row of a game holds the same rounds) and read by the agent at
the block of the seat it plays.
Steps past the end of a game are padding: they carry no weight in the loss and are not counted
by the accuracy. A caveat of the round layout: a round holds every player's action, so the
learning seat p sees the actions of seats < p in round t + 1 only at step t + 1; for seat 0 of a
turn-based game (the default) the input at step t holds everything played before its move.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from models.base import OUTCOMES, ModelError, TrainingResult, artifact_metadata, sequence_framing
from models.export import (
    checked_params,
    epoch_reporter,
    export_keras,
    keras_outputs,
    keras_seeded,
    row_batches,
    split_by_game,
)

ENCODINGS = ("quantitative", "qualitative")
DEFAULTS: dict[str, Any] = {
    "layers": 1,  # X: stacked LSTM layers
    "cells": "96",  # cells per LSTM layer: one number for all, or one per layer as "42-42-2"
    "dense": 1,  # Y: dense layers between the LSTMs and the output (0 or 1)
    "dense_units": 64,
    "activation": "relu",  # of the dense layer
    "loss": "cce",  # cce (softmax over the learning seat's one-hot block) or mse (its action)
    "dropout": 0.2,  # LSTM input dropout
    "batch_size": 20,  # the study's
    "epochs": 10,
    "patience": 0,  # early stopping: epochs without a better held-out loss (0: off)
    "learning_rate": 0.001,
    "length": 0,  # sequence length (rounds); 0: the encoding's (Connect 4 20, Lazerbike 112)
    "player": 0,  # the learning seat; -1: every seat (one softmax block each, loss cce)
    "outcomes": "wins",  # rows to learn from (models.base.OUTCOMES): wins, draws+wins, all
    "holdout": 0.2,  # share of games held out
    "conv": "0",  # board encoder (needs `boards`): filters per conv layer, "32-32"; 0: none
    "conv_units": 128,  # dense units each step's conv features are folded into
    "augment": 0,  # 1: each training sequence under a random one of the game's symmetries
    "bucket": 1,  # 1: batch games of like length, each batch cut after its longest (row_batches)
    "seed": 0,
}
INPUT_NAME = "sequence"
OUTPUT_NAME = "next_action"


def cell_counts(params: dict[str, Any]) -> list[int]:
    """Cells of each LSTM layer from `layers` and `cells`."""
    layers = int(params["layers"])
    try:
        cells = [int(c) for c in str(params["cells"]).split("-")]
    except ValueError:
        raise ModelError(
            f"lstm: cells={params['cells']!r}: a number or numbers like 42-42-2"
        ) from None
    if len(cells) == 1:
        cells *= layers
    if layers < 1 or len(cells) != layers or min(cells) < 1:
        raise ModelError(f"lstm: {layers} layer(s) need {layers} positive cell count(s): {cells}")
    return cells


def _check(params: dict[str, Any]) -> None:
    if params["loss"] not in ("cce", "mse"):
        raise ModelError(f"lstm: loss={params['loss']!r}; expected cce or mse")
    if params["dense"] not in (0, 1):
        raise ModelError(f"lstm: dense={params['dense']} must be 0 or 1 (Y ∈ {{0, 1}})")
    if not 0.0 <= params["dropout"] < 1.0:
        raise ModelError(f"lstm: dropout={params['dropout']} must lie in [0, 1)")
    for key in ("batch_size", "epochs", "dense_units"):
        if params[key] < 1:
            raise ModelError(f"lstm: {key}={params[key]} must be at least 1")
    if params["outcomes"] not in OUTCOMES:
        raise ModelError(f"lstm: outcomes={params['outcomes']!r}; known: {', '.join(OUTCOMES)}")
    if params["patience"] < 0:
        raise ModelError(f"lstm: patience={params['patience']} must be 0 (off) or more")
    cell_counts(params)
    conv_filters(params)


def conv_filters(params: dict[str, Any]) -> list[int]:
    """Filters of each board conv layer from `conv` ([] when off)."""
    try:
        filters = [int(f) for f in str(params["conv"]).split("-")]
    except ValueError:
        raise ModelError(f"lstm: conv={params['conv']!r}: 0 or filters like 32-32") from None
    if filters == [0]:
        return []
    if min(filters) < 1 or int(params["conv_units"]) < 1:
        raise ModelError(f"lstm: conv={params['conv']!r} and conv_units need positive counts")
    return filters


def board_shape(game, meta: dict[str, Any], params: dict[str, Any]) -> tuple[int, int, int] | None:
    """(blocks, H, W) of each step's board bits when `conv` reads them, else None."""
    if not conv_filters(params):
        return None
    if not sequence_framing(meta)["boards"]:
        raise ModelError("lstm: conv reads boards: encode with `gridbots encode --boards`")
    height, width = np.asarray(game.board_codes(game.new_initial_state().array[None])).shape[1:]
    return board_pictures(game), int(height), int(width)


def symmetric_rounds(game, meta: dict[str, Any], params: dict[str, Any], features: int) -> Any:
    """With `augment`, a batch transform that moves each sequence (its move bits, boards and
    softmax targets) under a random one of the game's symmetries: one stored copy, eight
    views of a Lazerbike game. None without `augment` or symmetries."""
    if not int(params["augment"]):
        return None
    from features.symmetry import game_symmetries, round_gathers

    if meta["encoding"] != "qualitative" or params["loss"] != "cce":
        raise ModelError("lstm: augment moves one-hot rounds: qualitative encoding, loss cce")
    blocks = board_pictures(game) if sequence_framing(meta)["boards"] else 0
    symmetries = game_symmetries(game)
    gathers = [round_gathers(game, s, blocks) for s in symmetries]
    if any(len(g) != features for g, _ in gathers):
        raise ModelError(f"lstm: augment: {features} input bits do not match the game's rounds")
    if len(symmetries) < 2:
        return None

    def transform(parts: tuple, rng: np.random.Generator) -> tuple:
        x, y, w = parts
        which = rng.integers(len(gathers), size=len(x))
        for k in range(1, len(gathers)):
            rows = np.flatnonzero(which == k)
            if len(rows):
                x[rows] = x[rows][..., gathers[k][0]]
                y[rows] = y[rows][..., gathers[k][1]]
        return x, y, w

    return transform


def board_pictures(game) -> int:
    """H*W blocks of bits per round of a `--boards` encoding."""
    from agents.sequence.codec import board_width

    cells = int(np.asarray(game.board_codes(game.new_initial_state().array[None])).size)
    return board_width(game) // cells


def learner_actions(arrays: dict[str, np.ndarray], meta: dict[str, Any], game, player: int):
    """The learning seat's target action per round [n, T] (int64) from either encoding."""
    from features.encode import decode_one_hot_actions

    targets = arrays["targets"]
    if meta["encoding"] == "qualitative":
        targets = decode_one_hot_actions(targets, game.num_players, game.num_actions,
                                         game.neutral_action)  # fmt: skip
    return (targets if player < 0 else targets[..., player]).astype(np.int64)


def seat_passes(arrays: dict[str, np.ndarray], rows: np.ndarray, num_players: int,
                threshold: float) -> np.ndarray:  # fmt: skip
    """[n, P] whether each seat of the rows' games ended with outcome > threshold (encodings
    written before rows carried `seat_outcomes` join the game's rows instead)."""
    from features.encode import seat_outcomes

    outcomes = arrays.get("seat_outcomes")
    if outcomes is None:
        outcomes = seat_outcomes(arrays, num_players)
    return outcomes[rows] > threshold


def mover_passes(arrays: dict[str, np.ndarray], rows: np.ndarray, actions: np.ndarray,
                 threshold: float, neutral: int) -> np.ndarray:  # fmt: skip
    """[n, T] 1 where the step's mover ended its game with outcome > threshold (0 where none
    did), for every-seat models on one-move rounds: `outcomes` then picks whose moves to
    imitate (the winner's in either seat), not which games."""
    passes = seat_passes(arrays, rows, actions.shape[-1], threshold)
    moved = actions != neutral  # [n, T, P]: one mover per step at most
    return (moved & passes[:, None, :]).any(axis=-1).astype(np.float32)


ROW_CHUNK = 4096  # rows copied at a time by rows_side_by_side


def rows_side_by_side(parts: list[np.ndarray], rows: np.ndarray) -> np.ndarray:
    """The `rows` (a mask) of [n, T, F_i] arrays joined along the features, copied a chunk of
    rows at a time: selecting then concatenating would hold a third full copy of the boards
    at once (5.3 GB for 50,000 Lazerbike games at 88 laps)."""
    index = np.flatnonzero(rows)
    widths = np.cumsum([0] + [part.shape[2] for part in parts])
    out = np.empty((len(index), parts[0].shape[1], widths[-1]), dtype=np.result_type(*parts))
    for start in range(0, len(index), ROW_CHUNK):
        chunk = index[start : start + ROW_CHUNK]
        for part, low, high in zip(parts, widths[:-1], widths[1:], strict=True):
            out[start : start + len(chunk), :, low:high] = part[chunk]
    return out


def prepare(arrays: dict[str, np.ndarray], meta: dict[str, Any], params: dict[str, Any]):
    """(game, inputs [n, T, F] (the encoding's own dtype: int8 bits stay int8), learner
    actions [n, T] ([n, T, P] for every seat), step weights [n, T] ([n, T, P]: per seat,
    simultaneous every-seat models), game ids) of the
    learning seat's rows whose outcome passes `outcomes` (seat 0's rows for every seat; on
    one-move rounds or laps every game, weighted by its movers' results)."""
    from engine import parse_game_spec

    if meta.get("encoding") not in ENCODINGS:
        raise ModelError(
            f"lstm trains on {' or '.join(ENCODINGS)} encodings, not {meta.get('encoding')!r}"
        )
    game = parse_game_spec(meta["game"])
    player = int(params["player"])
    if not -1 <= player < game.num_players:
        raise ModelError(
            f"lstm: player={player}: {game.name} has seats 0..{game.num_players - 1}, or -1: all"
        )
    if player < 0 and params["loss"] != "cce":
        raise ModelError("lstm: player=-1 (every seat) needs loss cce")
    threshold = OUTCOMES[params["outcomes"]]
    by_mover = player < 0 and (bool(sequence_framing(meta)["plies"]) or game.simultaneous)
    rows = arrays["player"] == max(player, 0)
    if not by_mover:
        rows &= arrays["outcome"] > threshold
    if rows.sum() < 2:
        raise ModelError(
            f"lstm: only {int(rows.sum())} sequence(s) of seat {max(player, 0)} with outcomes="
            f"{params['outcomes']}"
        )
    parts = [arrays["inputs"] if arrays["inputs"].ndim == 3 else arrays["inputs"][..., None]]
    if sequence_framing(meta)["boards"]:  # the board after each round, beside its moves
        if "boards" not in arrays:
            raise ModelError("lstm: the encoding records boards but holds no `boards` array")
        parts.append(arrays["boards"])
    inputs = rows_side_by_side(parts, rows)
    length = int(params["length"]) or inputs.shape[1]
    if not 1 <= length <= inputs.shape[1]:
        raise ModelError(f"lstm: length={length}; the encoding holds {inputs.shape[1]} rounds")
    actions = learner_actions({"targets": arrays["targets"][rows]}, meta, game, player)
    steps = np.arange(length)[None, :]
    weights = (steps + 1 < arrays["rounds"][rows][:, None]).astype(np.float32)
    if by_mover and game.simultaneous:  # every seat acts each lap: its block, its result
        passes = seat_passes(arrays, rows, game.num_players, threshold)
        weights = weights[..., None] * passes[:, None, :].astype(np.float32)
    elif by_mover:
        weights *= mover_passes(arrays, rows, actions, threshold, game.neutral_action)[:, :length]
    return (
        game,
        inputs[:, :length],
        actions[:, :length],
        weights,
        arrays["game_id"][rows],
    )


def build(
    params: dict[str, Any],
    steps: int | None,
    features: int,
    classes: int,
    keras: Any,
    seats: int = 1,
    board: tuple[int, int, int] | None = None,
):
    """The recurrent architecture (uncompiled); `seats` > 1: one softmax block per seat; `board`
    (blocks, H, W): the last blocks*H*W features of each step are a board read by convolutions.
    `steps` None leaves the time axis free (the export: every layer works step by step and
    forward in time, so a player's prefix gives the outputs the padded length gives there)."""
    layers = keras.layers
    inputs = keras.Input((steps, features), name=INPUT_NAME)
    x = inputs
    if board is not None:
        blocks, height, width = board
        split = features - blocks * height * width  # moves first, then the board bits
        moves = layers.Lambda(lambda t: t[..., :split])(inputs)
        ops = keras.ops
        # every step's board is one image: time folds into the batch axis by a plain reshape
        # (TimeDistributed exports wrongly on a free time axis), then unfolds after the convs
        planes = layers.Lambda(
            lambda t: ops.transpose(
                ops.reshape(t[..., split:], (-1, blocks, height, width)), (0, 2, 3, 1)
            ),
            name="board_planes",  # [batch * steps, H, W, seats]
        )(inputs)
        for i, filters in enumerate(conv_filters(params)):
            conv = layers.Conv2D(filters, 4 if i == 0 else 3, padding="same", activation="relu")
            planes = conv(planes)
        per_step = height * width * conv_filters(params)[-1]
        planes = layers.Lambda(
            lambda pair: ops.reshape(pair[0], (ops.shape(pair[1])[0], -1, per_step)),
            name="board_features",  # [batch, steps, H * W * filters]
        )([planes, inputs])
        planes = layers.Dense(int(params["conv_units"]), activation="relu")(planes)
        x = layers.Concatenate()([moves, planes])
    for cells in cell_counts(params):
        x = layers.LSTM(cells, return_sequences=True, dropout=float(params["dropout"]))(x)
    if params["dense"]:
        x = layers.Dense(int(params["dense_units"]), activation=params["activation"])(x)
    if params["loss"] == "cce" and seats > 1:
        x = layers.Reshape((-1, seats, classes))(layers.Dense(seats * classes)(x))
        outputs = layers.Softmax(axis=-1, name=OUTPUT_NAME)(x)
    elif params["loss"] == "cce":
        outputs = layers.Dense(classes, activation="softmax", name=OUTPUT_NAME)(x)
    else:
        outputs = layers.Dense(1, name=OUTPUT_NAME)(x)
    return keras.Model(inputs, outputs, name="recurrent")


def decode(outputs: np.ndarray, loss: str, neutral: int) -> np.ndarray:
    """Model outputs [n, T, C] → predicted actions [n, T] (neutral for class 0 / ≈ neutral)."""
    if loss == "cce":
        index = outputs.argmax(axis=-1)
        return np.where(index == 0, neutral, index - 1)
    return np.rint(outputs[..., 0]).astype(np.int64)


def accuracy(predicted: np.ndarray, actions: np.ndarray, weights: np.ndarray, neutral: int):
    """Share of the learning seat's real actions (not padding, not neutral) predicted."""
    counted = (_per_seat(weights, actions) > 0) & (actions != neutral)
    return float((predicted[counted] == actions[counted]).mean()) if counted.any() else 0.0


def weighted_steps(weights: np.ndarray) -> np.ndarray:
    """Per row, the steps up to its last weighted one ([n, T] or [n, T, P] weights)."""
    weighted = weights.reshape(len(weights), weights.shape[1], -1).any(axis=-1)
    last = weights.shape[1] - np.argmax(weighted[:, ::-1], axis=1)
    return np.where(weighted.any(axis=1), last, 1)


def _per_seat(weights: np.ndarray, actions: np.ndarray) -> np.ndarray:
    """Step weights [n, T] broadcast over the seats of every-seat actions [n, T, P]."""
    return weights[..., None] if actions.ndim == weights.ndim + 1 else weights


def train(
    arrays: dict[str, np.ndarray],
    meta: dict[str, Any],
    params: dict[str, Any],
    out_dir: str | Path,
    progress: Any = None,
) -> TrainingResult:
    """Trains, reports per-epoch metrics, exports model.onnx (with parity.json) to out_dir."""
    params = checked_params("lstm", DEFAULTS, params)
    _check(params)
    game, inputs, actions, weights, game_id = prepare(arrays, meta, params)
    neutral = game.neutral_action
    classes = game.num_actions + 1
    if params["loss"] == "cce":
        targets = np.zeros((*actions.shape, classes), dtype=np.float32)
        index = np.where(actions == neutral, 0, actions + 1)
        np.put_along_axis(targets, index[..., None], 1.0, axis=-1)
    else:
        targets = actions[..., None].astype(np.float32)
    train_rows, test_rows = split_by_game(game_id, params["holdout"], params["seed"])
    keras = keras_seeded(params["seed"])
    seats = game.num_players if int(params["player"]) < 0 else 1
    board = board_shape(game, meta, params)
    steps = weighted_steps(weights) if int(params["bucket"]) else None
    # cut batches vary in length: the time axis stays free (the export's is free anyway)
    model = build(params, None if steps is not None else inputs.shape[1], inputs.shape[2],
                  classes, keras, seats, board)  # fmt: skip
    loss = "categorical_crossentropy" if params["loss"] == "cce" else "mse"
    model.compile(optimizer=keras.optimizers.Adam(params["learning_rate"]), loss=loss)

    x_test, a_test, w_test = inputs[test_rows], actions[test_rows], weights[test_rows]
    # Keras weighs the loss per step and seat: every seat of a step shares the step's weight
    fit_weights = weights
    if seats > 1 and weights.ndim == 2:
        fit_weights = np.repeat(weights[..., None], seats, axis=-1)
    # the "majority" baseline: always the seat's most frequent action of the training set
    train_weights = _per_seat(weights[train_rows], actions[train_rows])
    played = actions[train_rows][(train_weights > 0) & (actions[train_rows] != neutral)]
    common = int(np.bincount(played - played.min()).argmax() + played.min()) if len(played) else 0

    def held_out() -> dict[str, float]:
        predicted = decode(keras_outputs(model, x_test), params["loss"], neutral)
        return {"val_accuracy": accuracy(predicted, a_test, w_test, neutral)}

    history: dict[str, list[float]] = {}
    callbacks = [epoch_reporter(keras, held_out, history, progress)]
    if int(params["patience"]) > 0:  # study-scale epochs: stop when held-out loss stalls
        callbacks.append(keras.callbacks.EarlyStopping(
            monitor="val_loss", patience=int(params["patience"]), restore_best_weights=True
        ))  # fmt: skip
    # batches sliced from the one int8 array: Lazerbike's boards are 1,133 bits a lap, so
    # float32 copies of the training and held-out splits would take 4 bytes a bit twice over
    batch = int(params["batch_size"])
    columns = [inputs, targets, fit_weights]
    transform = symmetric_rounds(game, meta, params, inputs.shape[-1])
    model.fit(
        row_batches(
            keras, columns, train_rows, batch, seed=params["seed"], transform=transform, steps=steps
        ),
        validation_data=row_batches(keras, columns, test_rows, batch, steps=steps),
        epochs=int(params["epochs"]),
        shuffle=False,  # row_batches shuffles from the seed (see there)
        verbose=0,
        callbacks=callbacks,
    )
    out_dir = Path(out_dir)
    metadata = artifact_metadata(
        meta["game"], "lstm", meta["encoding"], "sequence",
        player=params["player"], length=inputs.shape[1], loss=params["loss"],
        features=inputs.shape[2], neutral=neutral, num_actions=game.num_actions,
        seats=seats, outcomes=params["outcomes"], **sequence_framing(meta),
        output=("softmax over [neutral, action 0..A-1] of the seat's action in the next round"
                + (", one block per seat" if seats > 1 else "")
                if params["loss"] == "cce" else "the seat's action in the next round, a number"),
    )  # fmt: skip
    # the same weights on a free time axis: `seq:` feeds the rounds it has, not the padding
    player_model = build(params, None, inputs.shape[2], classes, keras, seats, board)
    player_model.set_weights(model.get_weights())
    report = export_keras(player_model, out_dir / "model.onnx", x_test, metadata, INPUT_NAME,
                          OUTPUT_NAME, report_path=out_dir / "parity.json",
                          free_steps=True)  # fmt: skip
    # the weights exported: early stopping may have restored an earlier epoch's than the last
    final = {k: v[-1] for k, v in history.items()}
    if history:
        final.update(held_out())
        test_batches = row_batches(keras, columns, test_rows, batch, steps=steps)
        final["val_loss"] = float(np.ravel(model.evaluate(test_batches, verbose=0))[0])
    counted = (_per_seat(w_test, a_test) > 0) & (a_test != neutral)
    metrics = {
        "held_out_loss": final.get("val_loss", float("nan")),
        "held_out_accuracy": final.get("val_accuracy", 0.0),
        "majority_accuracy": float((a_test[counted] == common).mean()) if counted.any() else 0.0,
        "train_sequences": float(train_rows.sum()),
        "held_out_sequences": float(test_rows.sum()),
        "parity_max_abs_diff": report["max_abs_diff"],
    }
    return TrainingResult(
        family="lstm",
        game=meta["game"],
        encoding=meta["encoding"],
        params=params,
        artifact=out_dir / "model.onnx",
        artifact_kind="onnx",
        metrics=metrics,
        history=history,
        extra_artifacts=[Path(report["report"])],
    )
