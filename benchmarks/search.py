"""Alpha-beta speed: fixed-depth searches of seeded positions, Connect 4 and Othello.

Prints one JSON object: per game, the mean milliseconds per search and nodes per second of
`alphabeta:depth=D` (one agent searching the positions in turn, as in a game), and each figure
as a ratio to the plain-C yardstick (../shared/yardstick/c4_random_playouts.c, games/s) run
before and after, so that a noisy shared machine biases neither side. Compare two versions of
the code by their ratios, never by raw figures taken at different times.

    .venv/bin/python benchmarks/search.py [--positions 30] [--seconds 2]
"""

from __future__ import annotations

import argparse
import json
import time

from engine_speed import YARDSTICK, run_yardstick  # the script beside this one

CASES = {"connect4": (7, 8), "othello": (5, 10)}  # game: (depth, opening plies)


def measure(name: str, depth: int, opening: int, positions: int) -> dict[str, float]:
    from agents import make
    from engine import load_game

    game = load_game(name)
    agent = make(f"alphabeta:depth={depth}", game, seed=0)
    agent.search(game.new_initial_state(seed=10_000, opening=opening))  # compile / warm up
    nodes, seconds, searched = 0, 0.0, 0
    for k in range(positions):
        state = game.new_initial_state(seed=k, opening=opening)
        if state.is_terminal():
            continue
        began = time.perf_counter()
        result = agent.search(state)
        seconds += time.perf_counter() - began
        nodes += result.nodes
        searched += 1
    return {
        "depth": depth,
        "positions": searched,
        "ms_per_search": 1000 * seconds / searched,
        "nodes_per_s": nodes / seconds,
        "nodes": nodes,
    }


def main() -> None:
    import shutil
    import subprocess
    import tempfile
    from pathlib import Path

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--positions", type=int, default=30)
    parser.add_argument("--seconds", type=float, default=2.0, help="each yardstick run")
    args = parser.parse_args()
    compiler = shutil.which("gcc") or shutil.which("cc")
    with tempfile.TemporaryDirectory() as tmp:
        binary = Path(tmp) / "c4rp"
        c_rate = None
        if compiler and YARDSTICK.exists():
            flags = ["-O3", "-march=native"]
            subprocess.run([compiler, *flags, "-o", str(binary), str(YARDSTICK)], check=True)
            before = run_yardstick(binary, args.seconds)
        report = {n: measure(n, d, o, args.positions) for n, (d, o) in CASES.items()}
        if compiler and YARDSTICK.exists():
            c_rate = (before + run_yardstick(binary, args.seconds)) / 2
    for entry in report.values():
        if c_rate:
            entry["nodes_per_s_over_c_games_per_s"] = entry["nodes_per_s"] / c_rate
    print(json.dumps({"c_games_per_s": c_rate, "searches": report}, indent=2))


if __name__ == "__main__":
    main()
