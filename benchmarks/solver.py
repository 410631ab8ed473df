"""Connect 4 solver speed: exact --analyze scores (all 7 columns) of seeded random positions.

    .venv/bin/python benchmarks/solver.py [--seed 0] [--middle 100] [--early 10]

Prints one JSON object with one entry per set: `middle` (14-27 stones) and `early` (8-13
stones), each solved by a fresh solver whose table is kept within the set. Positions come from
uniform random play to a uniformly drawn number of stones, rejecting games that ended on the
way. Times are per position, after a warm-up solve that loads the compiled kernels.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

from agents.connect4_bench import random_history
from engine.games.connect4.solver import Connect4Solver, parse_line


def run_set(rng: np.random.Generator, count: int, lo: int, hi: int) -> dict:
    positions = [random_history(rng, int(rng.integers(lo, hi + 1))) for _ in range(count)]
    solver = Connect4Solver()
    solver.analyze(parse_line("2252576253462244111563365343671351441"))  # warm-up: load kernels
    solver.reset()
    times = []
    for moves in positions:
        start = time.perf_counter()
        solver.analyze(moves)
        times.append(1000.0 * (time.perf_counter() - start))
    total = sum(times)
    return {
        "stones": [lo, hi],
        "positions": count,
        "median_ms": round(statistics.median(times), 3),
        "mean_ms": round(total / count, 3),
        "max_ms": round(max(times), 3),
        "total_ms": round(total, 1),
        "nodes": solver.nodes,
        "nodes_per_s": round(solver.nodes / (total / 1000.0)) if total else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--middle", type=int, default=100, help="positions of 14-27 stones")
    parser.add_argument("--early", type=int, default=10, help="positions of 8-13 stones")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    report = {"seed": args.seed, "middle": run_set(rng, args.middle, 14, 27)}
    if args.early:
        report["early"] = run_set(rng, args.early, 8, 13)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
