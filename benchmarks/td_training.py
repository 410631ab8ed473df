"""TD training speed: self-play training games per second on one core (study 002's network).

The study's configuration (one hidden layer of 40 sigmoid units over 128 inputs, Q-learning,
ε-greedy 0.3, learning rate 0.2) trains by self-play on Othello in numba; the n-tuple network
(agents.td.ntuple) is measured the same way. The plain-C Connect 4 playout yardstick
(../shared/yardstick) runs before and after, so the figures also come as a ratio to a
reference taken on the same machine in the same run. Target: >= 1,000 training games/s.

    .venv/bin/python benchmarks/td_training.py [--seconds 5]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from engine import load_game
from models import td

CONFIGS = {
    "study_mlp_h40": {"network": "mlp"},
    "ntuple": {"network": "ntuple", "learning_rate": 0.02, "random_factor": 0.1},
}


def yardstick_source() -> Path | None:
    """shared/yardstick/c4_random_playouts.c beside the checkout (main or a worktree)."""
    for folder in Path(__file__).resolve().parents:
        candidate = folder / "shared" / "yardstick" / "c4_random_playouts.c"
        if candidate.is_file():
            return candidate
    return None


def c_games_per_s(binary: Path, seconds: float) -> float:
    out = subprocess.run([str(binary), str(seconds)], capture_output=True, text=True, check=True)
    fields = out.stdout.split()
    return float(fields[fields.index("games_per_s") + 1])


def training_speed(params: dict, seconds: float) -> dict:
    """Training games per second after a warm-up (compile time excluded)."""
    trainer = td.Trainer(load_game("othello"), {**params, "games": 10**9})
    trainer.run(20)
    played, began = 0, time.perf_counter()
    while time.perf_counter() - began < seconds:
        trainer.run(200)
        played += 200
    elapsed = time.perf_counter() - began
    return {
        "games_per_s": played / elapsed,
        "games": played,
        "seconds": elapsed,
        "params": trainer.params,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()
    source, compiler = yardstick_source(), shutil.which("gcc") or shutil.which("cc")
    with tempfile.TemporaryDirectory() as tmp:
        binary = Path(tmp) / "c4rp"
        reference = source is not None and compiler is not None
        if reference:
            subprocess.run(
                [compiler, "-O3", "-march=native", "-o", str(binary), str(source)], check=True
            )
            before = c_games_per_s(binary, 2.0)
        results = {name: training_speed(p, args.seconds) for name, p in CONFIGS.items()}
        if reference:
            c_rate = (before + c_games_per_s(binary, 2.0)) / 2
            for entry in results.values():
                entry["ratio_to_c_yardstick"] = entry["games_per_s"] / c_rate
    report = {
        "game": "othello",
        "training": results,
        "c_yardstick_games_per_s": c_rate if reference else None,
        "target": "study_mlp_h40 >= 1000 training games/s on one core",
        "met": results["study_mlp_h40"]["games_per_s"] >= 1000,
    }
    print(json.dumps(report, indent=2, default=str))


if __name__ == "__main__":
    main()
