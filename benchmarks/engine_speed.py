"""Engine speed: single-thread random playouts for every game, Connect 4 against plain C.

Prints one JSON object. The C yardstick (../shared/yardstick/c4_random_playouts.c) runs in the
same process tree, before and after gridbots' Connect 4 measurement, and the ratio uses the
mean of the two C runs, so a noisy shared machine biases neither side.

    .venv/bin/python benchmarks/engine_speed.py [--seconds 3]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import tempfile
from pathlib import Path

from engine import load_game, parse_game_spec
from engine.bench import measure_random_playouts

YARDSTICK = next(  # the workspace's shared/ beside the checkout (or above a worktree)
    (p / "shared/yardstick/c4_random_playouts.c" for p in Path(__file__).resolve().parents
     if (p / "shared/yardstick/c4_random_playouts.c").is_file()),
    Path("shared/yardstick/c4_random_playouts.c"),
)  # fmt: skip
GAMES = ["connect4", "othello", "lazerbike", "lazerbike:players=4", "sokoban", "pig", "tactics"]


def run_yardstick(binary: Path, seconds: float) -> float:
    out = subprocess.run([str(binary), str(seconds)], capture_output=True, text=True, check=True)
    fields = out.stdout.split()
    return float(fields[fields.index("games_per_s") + 1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    results = {spec: measure_random_playouts(parse_game_spec(spec), args.seconds) for spec in GAMES}
    report: dict = {"seconds": args.seconds, "games": results}
    compiler = shutil.which("gcc") or shutil.which("cc")
    if compiler and YARDSTICK.exists():
        with tempfile.TemporaryDirectory() as tmp:
            binary = Path(tmp) / "c4rp"
            flags = ["-O3", "-march=native"]
            subprocess.run([compiler, *flags, "-o", str(binary), str(YARDSTICK)], check=True)
            before = run_yardstick(binary, args.seconds)
            ours = measure_random_playouts(load_game("connect4"), args.seconds)["games_per_s"]
            after = run_yardstick(binary, args.seconds)
        c_rate = (before + after) / 2
        report["connect4_vs_c"] = {
            "c_games_per_s": c_rate,
            "gridbots_games_per_s": ours,
            "ratio": ours / c_rate,
            "target_ratio": 0.8,
        }
    else:
        report["connect4_vs_c"] = None  # no C compiler or yardstick on this machine
    othello = results["othello"]["games_per_s"]
    report["othello_target"] = {"games_per_s": othello, "target": 250_000}
    tactics = results["tactics"]["moves_per_s"]  # each move: list the legal actions, apply one
    report["tactics_target"] = {"moves_per_s": tactics, "target": 1_000_000}
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
