"""Cost-to-go networks: a learned A* heuristic for box-pushing puzzles (family `cost-to-go`).

Why: the planner's own heuristic (each player's wall-only distance to an exit) ignores the
boxes, so A* widens over every push before it commits to one. A network that reads the whole
position (agents.search.planner.planes) and estimates the moves still to play lets the search
go nearly straight to a plan: `planner:eval=onnx:PATH`.

How it learns (by playing, no dataset): on every game spec of `games` (default: the game's
shipped variants, Game.variants, Sokoban's levels), `starts` seeded starts each, the level
after `k` random laps (k cycling through 0..`opening`; Game.new_initial_state's opening),
the planner solves the position; every position along its sequential plan is a row whose
target is the moves left in that plan (A*'s own cost: exact under its model of the rules).
With `children` > 0, that many pushes off the plan (other push children of the start and of
each position right after one of the plan's pushes, drawn by seed) are solved too, within
`child_nodes` expansions, so the network also sees
the positions A* weighs and rejects: solved ones with their moves left, unsolved ones with
`unsolved` moves (a wall the search goes around). Then a small convolutional network (`layers`
3x3 convolutions of `filters`, the odd ones dilated by 2, averaged over the canvas, a dense
layer, one output: moves / SCALE) is fitted with Adam on the starts not held out (every
`holdout`-th start is), and exported to ONNX with a parity check.

Checkpoints in `work`: the solved rows (`rows.npz`, keyed by the data settings) and the
network's weights after each epoch (`weights.weights.h5` with `epoch.json`), so a killed run
resumes where it stopped.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from models.base import ModelError, TrainingResult, artifact_metadata
from models.export import checked_params, export_keras, keras_outputs, keras_seeded

FAMILY = "cost-to-go"
ENCODINGS: tuple[str, ...] = ()  # learns by playing the planner, not from an encoded dataset
ENCODING = "planner-planes"  # what its network reads: agents.search.planner.planes
KIND = "cost-to-go"  # gridbots.kind: the onnx agent plays it as the planner's heuristic
INPUT_NAME, OUTPUT_NAME = "planes", "moves_to_go"
DEFAULTS: dict[str, Any] = {
    "games": [],  # game specs to learn on ([]: the game's shipped variants, or the game)
    "starts": 40,  # seeded starts per game spec
    "opening": 6,  # random laps before a start: 0, 1, ..., opening, 0, ...
    "nodes": 5_000,  # the planner's node budget for a start (beyond it: unsolved)
    "children": 3,  # pushes off the plan solved per push position (0: the plan only)
    "child_nodes": 300,  # the node budget for each of those (dead tiles pruned only)
    "unsolved": 96.0,  # the target (moves) of a position the planner does not solve
    "canvas": 16,  # the network's input size (levels up to canvas x canvas)
    "filters": 32,
    "layers": 4,
    "dense": 64,
    "epochs": 40,
    "batch_size": 64,
    "learning_rate": 0.002,
    "holdout": 10,  # every holdout-th start is held out
    "seed": 0,
}
#: the settings that decide the rows (the rows checkpoint is kept for them)
DATA_KEYS = ("games", "starts", "opening", "nodes", "children", "child_nodes", "unsolved",
             "canvas", "seed")  # fmt: skip
#: a sweep's best: the held-out mean error, in moves
OBJECTIVE = ("val_mae_moves", "min")
Progress = Callable[[int, dict[str, float]], None]


def check(params: dict[str, Any]) -> dict[str, Any]:
    """DEFAULTS updated by `params`; ModelError naming the first bad value."""
    p = checked_params(FAMILY, DEFAULTS, params)
    p["games"] = [str(g) for g in p["games"]]
    for key in ("starts", "nodes", "canvas", "filters", "layers", "dense", "batch_size"):
        if p[key] < 1:
            raise ModelError(f"{FAMILY}: {key} is at least 1")
    for key in ("opening", "children", "child_nodes", "epochs"):
        if p[key] < 0:
            raise ModelError(f"{FAMILY}: {key} must not be negative")
    if p["holdout"] < 2 or p["learning_rate"] <= 0 or p["unsolved"] <= 0:
        raise ModelError(f"{FAMILY}: holdout is at least 2, learning_rate and unsolved > 0")
    return p


def label(params: dict[str, Any]) -> str:
    p = {**DEFAULTS, **params}
    return f"c{p['canvas']}-f{p['filters']}x{p['layers']}-d{p['dense']}-s{p['starts']}"


def game_specs(game: str, p: dict[str, Any]) -> list[str]:
    """The game specs a run learns on: `games`, else the game's shipped variants, else itself."""
    from engine import parse_game_spec

    specs = p["games"] or parse_game_spec(game).variants() or [game]
    for spec in specs:
        if getattr(parse_game_spec(spec), "layout", None) is None:
            raise ModelError(f"{FAMILY}: {spec} has no `layout` hook: no planner plays it")
    return specs


# ---- the rows: positions the planner solved, and the moves each had left -----------------------
def solve_rows(spec: str, p: dict[str, Any], start: int) -> list[tuple[np.ndarray, float]]:
    """(planes, moves to go) of one seeded start of `spec`: its plan's positions and, with
    `children`, pushes off the plan solved on their own."""
    from agents.search.planner import planes, pushes, read_grid, replay, solve
    from engine import parse_game_spec

    game = parse_game_spec(spec)
    canvas = p["canvas"]
    state = game.new_initial_state(p["seed"] + start, opening=start % (p["opening"] + 1))
    if state.is_terminal():
        return []
    grid, key = read_grid(game.layout(state.array))
    steps = solve(grid, key, p["nodes"])
    if steps is None:
        return [(planes(grid, [key], canvas, canvas)[0], p["unsolved"])]
    path = replay(grid, key, [{player: move} for player, move in steps])
    keys, togo = list(path), [float(len(steps) - i) for i in range(len(steps))]
    goal = replay(grid, key, [{player: move} for player, move in steps] + [{}])[-1]
    keys.append(goal)
    togo.append(0.0)
    if p["children"]:
        rng = np.random.default_rng([p["seed"], start, len(spec)])
        on_plan = set(keys)
        pushed = [b for a, b in itertools.pairwise(keys) if a[:2] != b[:2]]
        for position in [key, *pushed]:  # the positions A* itself weighs: after a push
            options = [c for c, _, _ in pushes(grid, position, True) if c not in on_plan]
            for pick in rng.permutation(len(options))[: p["children"]]:
                child = options[int(pick)]
                plan = solve(grid, child, p["child_nodes"], exhaustive=False)
                keys.append(child)
                togo.append(float(len(plan)) if plan is not None else p["unsolved"])
    rows = planes(grid, keys, canvas, canvas)
    return list(zip(rows, togo, strict=True))


def fingerprint(p: dict[str, Any], specs: list[str]) -> str:
    data = {k: p[k] for k in DATA_KEYS} | {"games": specs}
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


def build_rows(
    game: str, p: dict[str, Any], work: Path | None, progress: Progress | None
) -> dict[str, np.ndarray]:
    """Every start's rows (x, y moves to go, start index, game index), from the checkpoint
    when its settings match."""
    specs = game_specs(game, p)
    stamp = fingerprint(p, specs)
    saved = work / "rows.npz" if work else None
    if saved is not None and saved.is_file():
        with np.load(saved) as kept:
            if str(kept["stamp"]) == stamp:
                return {k: kept[k] for k in ("x", "y", "start", "level")}
    xs, ys, starts, levels = [], [], [], []
    began = time.monotonic()
    for g, spec in enumerate(specs):
        for start in range(p["starts"]):
            for x, y in solve_rows(spec, p, start):
                xs.append(x)
                ys.append(y)
                starts.append(start)
                levels.append(g)
        if progress is not None:
            progress(0, {"rows": float(len(ys)), "rows_seconds": time.monotonic() - began})
    if not ys:
        raise ModelError(f"{FAMILY}: no position to learn from on {', '.join(specs)}")
    rows = {
        "x": np.stack(xs).astype(np.float32),
        "y": np.asarray(ys, dtype=np.float32),
        "start": np.asarray(starts, dtype=np.int64),
        "level": np.asarray(levels, dtype=np.int64),
    }
    if saved is not None:
        saved.parent.mkdir(parents=True, exist_ok=True)
        temp = saved.with_name(f".rows.{os.getpid()}.npz")
        np.savez_compressed(temp, stamp=np.asarray(stamp), **rows)
        os.replace(temp, saved)
    return rows


# ---- the network ---------------------------------------------------------------------------------
def build(p: dict[str, Any], channels: int, keras: Any) -> Any:
    """The network: dilated 3x3 convolutions, averaged over the canvas, a dense layer."""
    layers = keras.layers
    inputs = keras.Input((p["canvas"], p["canvas"], channels), name=INPUT_NAME)
    x = inputs
    for i in range(p["layers"]):
        x = layers.Conv2D(p["filters"], 3, padding="same", activation="relu",
                          dilation_rate=2 if i % 2 else 1)(x)  # fmt: skip
    x = layers.GlobalAveragePooling2D()(x)
    x = layers.Dense(p["dense"], activation="relu")(x)
    out = layers.Dense(1, name=OUTPUT_NAME)(x)
    model = keras.Model(inputs, out)
    model.compile(optimizer=keras.optimizers.Adam(p["learning_rate"]), loss="mse")
    return model


def learn(
    game: str,
    params: dict[str, Any],
    out_dir: str | Path,
    work: str | Path | None = None,
    progress: Progress | None = None,
) -> TrainingResult:
    """models.base's contract for a family that learns by playing (here: by the planner)."""
    from agents.search.planner import PLANES, SCALE

    p = check(params)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    work = Path(work) if work else None
    rows = build_rows(game, p, work, progress)
    held = rows["start"] % p["holdout"] == p["holdout"] - 1
    x, y = rows["x"], rows["y"] / SCALE
    keras = keras_seeded(p["seed"])
    model = build(p, len(PLANES), keras)
    history: dict[str, list[float]] = {}
    first = 0
    weights = work / "weights.weights.h5" if work else None
    epoch_file = work / "epoch.json" if work else None
    stamp = fingerprint(p, game_specs(game, p)) + label(p) + f"-lr{p['learning_rate']}"
    if weights is not None and weights.is_file() and epoch_file.is_file():
        kept = json.loads(epoch_file.read_text())
        if kept.get("stamp") == stamp:
            model.load_weights(str(weights))
            first, history = int(kept["epoch"]), kept["history"]

    def mae(mask: np.ndarray) -> float:
        if not mask.any():
            return float("nan")
        guess = np.asarray(keras_outputs(model, x[mask])).reshape(-1)
        return float(np.mean(np.abs(guess - y[mask])) * SCALE)

    train_rows = np.flatnonzero(~held)
    for epoch in range(first, p["epochs"]):
        order = np.random.default_rng([p["seed"], epoch]).permutation(train_rows)
        fit = model.fit(x[order], y[order], batch_size=p["batch_size"], epochs=1,
                        shuffle=False, verbose=0)  # fmt: skip
        metrics = {"loss": float(fit.history["loss"][-1]), "mae_moves": mae(~held),
                   "val_mae_moves": mae(held)}  # fmt: skip
        for k, v in metrics.items():
            history.setdefault(k, []).append(v)
        if progress is not None:
            progress(epoch + 1, metrics)
        if weights is not None:
            model.save_weights(str(weights))
            epoch_file.write_text(json.dumps({"stamp": stamp, "epoch": epoch + 1,
                                              "history": history}))  # fmt: skip
    specs = game_specs(game, p)
    metadata = artifact_metadata(
        game, FAMILY, ENCODING, KIND, planes=",".join(PLANES), scale=SCALE,
        canvas=p["canvas"], games=",".join(specs),
    )  # fmt: skip
    sample = x[held][:64] if held.any() else x[:64]
    report = export_keras(model, out_dir / "model.onnx", sample, metadata, INPUT_NAME,
                          OUTPUT_NAME)  # fmt: skip
    final = {k: v[-1] for k, v in history.items()} if history else {}
    final.update({"rows": float(len(y)), "held_out_rows": float(held.sum())})
    return TrainingResult(
        family=FAMILY,
        game=game,
        encoding=ENCODING,
        params=p,
        artifact=out_dir / "model.onnx",
        artifact_kind="onnx",
        metrics=final,
        history=history,
        extra_artifacts=[Path(report["report"])],
    )


def source(game: str, params: dict[str, Any]) -> dict[str, str]:
    """What stands for the dataset: the planner's solutions on the run's game specs."""
    p = check(params)
    return {
        "game": game,
        "dataset.path": f"planner solutions on {', '.join(game_specs(game, p))}",
        "dataset.sha256": "none (made by the planner during training)",
        "dataset.manifest_hash": "none (made by the planner during training)",
        "dataset.encoding": ENCODING,
        "dataset.rows": str(p["starts"] * len(game_specs(game, p))),
    }


def inputs(game: str, params: dict[str, Any]) -> list[Any]:
    """The MLflow input: the planner's seeded starts it solved."""
    from models.run_inputs import played_input

    p = check(params)
    setting = {"game": game, "opponent": "planner", "games": ",".join(game_specs(game, p)),
               "starts": p["starts"], "seed": p["seed"], "encoding": ENCODING}  # fmt: skip
    return [played_input(f"{game} planner solutions", "planner", setting)]


def curves(history: dict[str, list[float]]) -> dict[str, list[tuple[int, float]]]:
    """Per-epoch curves (step = epoch, from 1)."""
    return {k: [(i + 1, v) for i, v in enumerate(values)] for k, values in history.items()}
