"""Inference speed: Keras `predict` vs a direct Keras call vs onnxruntime, and what a value network
costs inside `alphabeta:eval=onnx` compared with playout evaluation.

Part 1, batch-1 latency (median per call) of the study's LSTM (96 cells over 20 rounds of the
qualitative Connect 4 encoding, one 64-unit dense layer, softmax output) and of the value MLP
grid (2x64 … 3x1024 on the 84-bit board one-hot). onnxruntime must be at least 300x faster than
`predict` at batch 1 (`predict` builds a dataset pipeline per call, which dominates).
Part 2, the speed/accuracy trade-off of learned evaluation: each MLP size is trained on a small
AI-vs-AI Connect 4 dataset (imitation of `alphabeta:depth=2` on both seats, with detours),
its held-out accuracy (decisive positions, games split whole) is set against its evaluations per
second inside a fixed-depth `alphabeta:eval=onnx` search; the playout evaluation (16 random
playouts per leaf, alphabeta's default) is measured the same way, its accuracy being the sign of
the playout mean on the same held-out positions. JSON goes to stdout and OUT/inference.json,
a rich table to stderr, the scatter plot to OUT/inference.png.

    .venv/bin/python benchmarks/inference.py [--quick] [--out DIR] [--depth 4] [--positions 8]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from agents.onnx.runtime import providers, session
from engine import load_game
from models import lstm, value_mlp
from models.export import export_keras, keras_seeded, split_by_game

REQUIRED_SPEEDUP = 300.0


def median_ms(call, repeats: int, warmup: int = 3) -> float:
    for _ in range(warmup):
        call()
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        call()
        times.append(time.perf_counter() - began)
    return 1000 * statistics.median(times)


def latency(model: Any, onnx_path: Path, x: np.ndarray, quick: bool) -> dict[str, float]:
    """Batch-1 latency of the three ways to run a model, and batch-32 onnxruntime per row."""
    runner = session(onnx_path)
    name = runner.get_inputs()[0].name
    one = x[:1]
    batch = np.repeat(x[:1], 32, axis=0) if len(x) < 32 else x[:32]
    result = {
        "keras_predict_ms": median_ms(lambda: model.predict(one, verbose=0), 10 if quick else 40),
        "keras_call_ms": median_ms(lambda: model(one, training=False), 50 if quick else 300),
        "onnxruntime_ms": median_ms(lambda: runner.run(None, {name: one}), 500 if quick else 5000),
        "onnxruntime_batch32_ms": median_ms(lambda: runner.run(None, {name: batch}), 300),
    }
    ort = result["onnxruntime_ms"]
    result["predict_over_onnxruntime"] = result["keras_predict_ms"] / ort
    result["call_over_onnxruntime"] = result["keras_call_ms"] / ort
    result["onnxruntime_evals_per_s_batch1"] = 1000 / ort
    result["onnxruntime_evals_per_s_batch32"] = 32 * 1000 / result["onnxruntime_batch32_ms"]
    return result


def lstm_part(keras: Any, out: Path, quick: bool) -> dict[str, Any]:
    params = {**lstm.DEFAULTS, "cells": "96", "layers": 1}
    model = lstm.build(params, 20, 16, 8, keras)  # untrained: latency does not depend on weights
    x = (np.random.default_rng(0).random((64, 20, 16)) < 0.1).astype(np.float32)
    model(x[:1])
    report = export_keras(model, out / "lstm96.onnx", x, {"gridbots.kind": "sequence"},
                          lstm.INPUT_NAME, lstm.OUTPUT_NAME)  # fmt: skip
    entry = {"model": "lstm 96 cells x 20 steps", "parity_max_abs_diff": report["max_abs_diff"]}
    entry.update(latency(model, out / "lstm96.onnx", x, quick))
    entry["meets_300x"] = entry["predict_over_onnxruntime"] >= REQUIRED_SPEEDUP
    return entry


def value_dataset(games: int) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Board one-hot arrays of an AI-vs-AI Connect 4 dataset, and the states of its rows."""
    from features import encode as enc
    from features.store import generate_dataset, load_dataset

    with tempfile.TemporaryDirectory() as folder:
        options = {"x": games, "w": 0.15, "y": 3, "agents": "alphabeta:depth=2"}
        generate_dataset(folder, "connect4", "imitation", options, seed=1)
        positions = load_dataset(folder, "positions")
    arrays = enc.board_onehot_encoding(positions, load_game("connect4"))
    column = positions.column("state")
    states = enc.list_matrix(column, len(column[0]), np.int64)
    return arrays, states


def playout_accuracy(states: np.ndarray, outcome: np.ndarray, playouts: int) -> float:
    """Accuracy of the playout evaluation's sign on decisive positions."""
    from engine.bits import new_rng
    from engine.loops import random_playouts

    g = load_game("connect4")
    rng, hits, counted = new_rng(5), 0, 0
    for s, result in zip(states, outcome, strict=True):
        if result == 0:
            continue
        mover = int(g.kernels.current_player(s))
        _, totals = random_playouts(*g.kernels.search(), s.copy(), g.num_players,
                                    g.num_actions, g.neutral_action, playouts, rng)  # fmt: skip
        value = totals[mover] / playouts
        hits += int((value > 0) == (result > 0)) if value != 0 else 0
        counted += 1
    return hits / max(counted, 1)


def search_rates(spec: str, depth: int, positions: int) -> dict[str, float]:
    """Leaf evaluations and nodes per second of one fixed-depth search per position."""
    from agents import make

    g = load_game("connect4")
    agent = make(spec, g, seed=0)
    nodes = evaluations = 0
    seconds = 0.0
    agent.search(g.new_initial_state(seed=99, opening=6))  # warm up (sessions, caches)
    for k in range(positions):
        state = g.new_initial_state(seed=k, opening=6)
        began = time.perf_counter()
        out = agent.core.search(state.array, state.current_player(), depth)  # the shared core
        nodes += out.nodes
        evaluations += out.leaves  # network leaves (batched) or playout-evaluated leaves
        seconds += time.perf_counter() - began
    return {
        "evals_per_s": evaluations / seconds,
        "nodes_per_s": nodes / seconds,
        "evaluations": evaluations,
        "seconds": seconds,
    }


def value_part(keras: Any, out: Path, args: argparse.Namespace) -> list[dict[str, Any]]:
    arrays, states = value_dataset(args.games)
    x = arrays["board"].astype(np.float32)
    train, test = split_by_game(arrays["game_id"], 0.2, 0)
    rows = []
    for layers, width in value_mlp.GRID[:3] if args.quick else value_mlp.GRID:
        folder = out / f"value_{layers}x{width}"
        params = {"layers": layers, "width": width, "epochs": args.epochs}
        meta = {"encoding": "board-onehot", "game": "connect4"}
        result = value_mlp.train(arrays, meta, params, folder)
        model = value_mlp.build({**value_mlp.DEFAULTS, **params}, x.shape[1], keras)
        model(x[:1])  # latency of a same-shaped fresh model: training left no state behind
        entry = {"model": f"value mlp {layers}x{width}", "params": model.count_params(),
                 "held_out_accuracy": result.metrics["held_out_accuracy"],
                 "parity_max_abs_diff": result.metrics["parity_max_abs_diff"]}  # fmt: skip
        entry.update(latency(model, result.artifact, x[test], args.quick))
        entry["alphabeta_onnx"] = search_rates(
            f"alphabeta:depth={args.depth},eval=onnx:{result.artifact}", args.depth, args.positions
        )
        rows.append(entry)
    playout = {
        "model": "playout evaluation (16 playouts)",
        "held_out_accuracy": playout_accuracy(states[test], arrays["outcome"][test], 16),
        "alphabeta_playout": search_rates(
            f"alphabeta:depth={args.depth},eval=playout", args.depth, args.positions
        ),
        "train_positions": int(train.sum()),
        "held_out_positions": int(test.sum()),
    }
    rows.append(playout)
    return rows


def table(report: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    grid = Table(title=f"batch-1 inference (ms), onnxruntime on {report['providers'][0]}")
    for column in (
        "model",
        "predict",
        "call",
        "ort",
        "predict/ort",
        "call/ort",
        "ort/s b1",
        "ort/s b32",
        "accuracy",
        "search evals/s",
    ):
        grid.add_column(column, justify="left" if column == "model" else "right")  # fmt: skip
    for row in [report["lstm"], *report["value"]]:
        search = row.get("alphabeta_onnx") or row.get("alphabeta_playout") or {}
        cells = [row["model"]]
        for key, fmt in (("keras_predict_ms", "{:.2f}"), ("keras_call_ms", "{:.3f}"),
                         ("onnxruntime_ms", "{:.4f}"), ("predict_over_onnxruntime", "{:.0f}x"),
                         ("call_over_onnxruntime", "{:.0f}x"),
                         ("onnxruntime_evals_per_s_batch1", "{:,.0f}"),
                         ("onnxruntime_evals_per_s_batch32", "{:,.0f}"),
                         ("held_out_accuracy", "{:.3f}")):  # fmt: skip
            cells.append(fmt.format(row[key]) if key in row else "-")
        cells.append(f"{search['evals_per_s']:,.0f}" if search else "-")
        grid.add_row(*cells)
    Console(file=sys.stderr, width=max(Console(file=sys.stderr).width, 150)).print(grid)


def scatter(report: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 4.5))
    for row in report["value"]:
        search = row.get("alphabeta_onnx") or row.get("alphabeta_playout")
        playout = "alphabeta_playout" in row
        style = {"marker": "s", "color": "tab:red"} if playout else {"color": "tab:blue"}
        axes.scatter(search["evals_per_s"], row["held_out_accuracy"], **style)
        axes.annotate(row["model"].replace("value mlp ", ""),
                      (search["evals_per_s"], row["held_out_accuracy"]),
                      textcoords="offset points", xytext=(5, 4), fontsize=8)  # fmt: skip
    axes.set_xscale("log")
    axes.set_xlabel("leaf evaluations per second inside alpha-beta (log)")
    axes.set_ylabel("held-out accuracy (decisive positions)")
    axes.set_title("Connect 4: learned evaluation (blue) vs playouts (red)")
    axes.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/out"))
    parser.add_argument("--quick", action="store_true", help="fewer repeats, three MLP sizes")
    parser.add_argument("--depth", type=int, default=4, help="alpha-beta depth of part 2")
    parser.add_argument("--positions", type=int, default=8, help="searched positions per size")
    parser.add_argument("--games", type=int, default=400, help="games of the value dataset")
    parser.add_argument("--epochs", type=int, default=6)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    ignore = args.out / ".gitignore"  # outputs of runs, never committed
    if not ignore.exists():
        ignore.write_text("*\n")
    keras = keras_seeded(0)
    report: dict[str, Any] = {"providers": list(providers()), "required_speedup": REQUIRED_SPEEDUP}
    report["lstm"] = lstm_part(keras, args.out, args.quick)
    report["value"] = value_part(keras, args.out, args)
    table(report)
    scatter(report, args.out / "inference.png")
    report["plot"] = str(args.out / "inference.png")
    text = json.dumps(report, indent=2)
    (args.out / "inference.json").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
