"""Sequence-model training with and without `bucket` (games of like length batched together,
each batch cut after its longest weighted step): seconds of the same network's training on the
same rows, same run (fitting, each epoch's held-out figures and the ONNX export), the held-out
figures each reaches, and the C yardstick before and after. Lazerbike: its rows are padded to
88 laps and a game averages about 25.

    .venv/bin/python benchmarks/lstm_bucket.py [--games 1500] [--epochs 2] [--length 88]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np
from neat_generation import yardstick  # a sibling script

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from features.encode import encode_dataset
from features.store import generate_dataset
from models import lstm

#: the recipe of reports/sequence-models.md's Lazerbike models, fewer epochs
PARAMS = {"loss": "cce", "player": -1, "outcomes": "wins", "layers": 2, "cells": 128,
          "dense_units": 64, "activation": "tanh", "dropout": 0.1, "batch_size": 64,
          "learning_rate": 0.002, "conv": "32-32", "augment": 1}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=1500)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--length", type=int, default=88)
    parser.add_argument("--seed", type=int, default=6)
    args = parser.parse_args()
    before = yardstick()
    runs = {}
    with tempfile.TemporaryDirectory() as work:
        options = {"x": args.games, "y": 2, "w": 0.05, "rotate": True,
                   "scenario": {"start": "random"},
                   "agents": "simab:depth=3,random:guards=safe"}  # fmt: skip
        generate_dataset(Path(work) / "data", "lazerbike", "imitation", options, seed=args.seed)
        arrays, meta = encode_dataset(
            Path(work) / "data", "qualitative", boards=True, length=args.length
        )
        rounds = arrays["rounds"]
        for bucket in (0, 1):
            params = {**PARAMS, "epochs": args.epochs, "bucket": bucket, "length": args.length}
            started = time.perf_counter()
            result = lstm.train(arrays, meta, params, Path(work) / f"model-{bucket}")
            seconds = time.perf_counter() - started
            runs[f"bucket={bucket}"] = {
                "seconds": round(seconds, 1),  # fitting, each epoch's held-out figures, export
                "held_out_accuracy": round(result.metrics["held_out_accuracy"], 4),
                "held_out_loss": round(result.metrics["held_out_loss"], 5),
                "train_sequences": int(result.metrics["train_sequences"]),
            }
    after = yardstick()
    speedup = runs["bucket=0"]["seconds"] / runs["bucket=1"]["seconds"]
    print(json.dumps({
        "game": "lazerbike", "games": args.games, "epochs": args.epochs, "length": args.length,
        "rows": len(rounds), "mean_rounds": round(float(np.mean(rounds)), 1),
        **runs, "speedup": round(speedup, 2),
        "yardstick_before": before, "yardstick_after": after,
    }, indent=1))  # fmt: skip


if __name__ == "__main__":
    main()
