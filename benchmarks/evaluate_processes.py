"""The evaluate stage's fan-out in threads against spawned processes (flows.pipeline.stage_io).

Plays the same tournament jobs (models.arena.play_job, what the evaluate stage hands to its
tasks) through a pool of `--workers` threads, as the stage did before `local_processes`, and
through the stage's own pool of as many spawned processes (`process_pool`, onnxruntime sharing
the cores), as it does now for tournaments of MIN_POOL_GAMES games or more; `--model` adds a
sequence model's bot (ONNX, the kind that made threads and processes fight over the cores).
Checks the rows are identical and prints wall and CPU seconds of each, their ratio and the C
yardstick before and after, as JSON.

    .venv/bin/python benchmarks/evaluate_processes.py --games 1000 --workers 2 [--model M.onnx]
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agents.onnx.runtime import process_pool
from benchmarks.neat_generation import yardstick
from models.arena import play_job

#: Python-level agents (guards, tree search): the GIL-bound kind a study's tournament plays
PAIRINGS = [
    ("random:guards=win+block", "alphabeta:depth=2"),
    ("mcts:sims=30", "random:guards=win+block"),
    ("alphabeta:depth=1", "random:guards=win+block+safe"),
    ("mcts:sims=30", "alphabeta:depth=1"),
]


def cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def timed(executor, jobs: list[dict]) -> tuple[list, float, float]:
    start, cpu = time.perf_counter(), cpu_seconds()
    with executor:
        rows = list(executor.map(play_job, jobs))
    return rows, time.perf_counter() - start, cpu_seconds() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=1000, help="games per pairing")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--model", help="a Connect 4 sequence model (ONNX): its bot joins two pairings"
    )
    args = parser.parse_args()
    pairings = list(PAIRINGS)
    if args.model:
        bot = f"seq:model={Path(args.model).resolve()}"
        pairings += [(bot, "random:guards=win+block"), (bot, "alphabeta:depth=2")]
    jobs = [
        {"game": "connect4", "a": a, "b": b, "games": args.games, "seed": 0, "opening": 4}
        for a, b in pairings
    ]
    play_job({**jobs[0], "games": 2})  # compile / load the numba caches before timing
    before = yardstick()
    threads, thread_wall, thread_cpu = timed(ThreadPoolExecutor(args.workers), jobs)
    processes, process_wall, process_cpu = timed(process_pool(args.workers), jobs)
    after = yardstick()
    strip = [[{k: v for k, v in r.items() if "time" not in k and "peak" not in k}
              for rows in pairings for r in rows] for pairings in (threads, processes)]  # fmt: skip
    print(json.dumps({
        "benchmark": "evaluate_processes",
        "pairings": len(jobs),
        "games_per_pairing": args.games,
        "workers": args.workers,
        "same_rows": strip[0] == strip[1],
        "threads_wall_s": round(thread_wall, 2),
        "threads_cpu_s": round(thread_cpu, 2),
        "processes_wall_s": round(process_wall, 2),
        "processes_cpu_s": round(process_cpu, 2),
        "speedup": round(thread_wall / process_wall, 2),
        "yardstick_games_per_s": [before, after],
    }))  # fmt: skip


if __name__ == "__main__":
    main()
