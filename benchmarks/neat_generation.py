"""Seconds to evaluate one NEAT generation (100 genomes, one game each) for study 003's cases 1-4.

Target: <= 1 s per generation on 2 cores. Each case is timed on its first generation (random
networks) and after `--evolve` generations of training (longer, purposeful games), with 2
threads and with 1 (the scaling); `--decoding scored` times gridbots' move-scoring networks
(every legal move scored) instead of the study's guided decoding. The plain-C Connect 4
yardstick runs before and after, so the figures can be compared across runs on this shared
machine. Prints JSON.

    .venv/bin/python benchmarks/neat_generation.py [--evolve 20] [--repeats 3] [--decoding D]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

CASES = ("expand-alone", "beat-red-easy", "beat-red-hard", "against-red")
YARDSTICK = Path(__file__).resolve().parents[2] / "shared" / "yardstick" / "c4_random_playouts.c"


def yardstick() -> float | None:
    """Games/s of the plain-C Connect 4 playouts (None when no C compiler or source)."""
    source = (
        YARDSTICK if YARDSTICK.is_file() else Path("/work/shared/yardstick/c4_random_playouts.c")
    )
    if not source.is_file():
        return None
    binary = Path(tempfile.gettempdir()) / "gridbots-c4rp"
    try:
        subprocess.run(
            ["gcc", "-O3", "-march=native", "-o", str(binary), str(source)],
            check=True,
            capture_output=True,
        )
        out = subprocess.run([str(binary), "2"], check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    for token in out.replace(",", " ").split():
        try:
            value = float(token)
        except ValueError:
            continue
        if value > 1000:
            return value  # the first large number printed is games/s
    return None


def timed(trainer, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        trainer.evaluate()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evolve", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--decoding", default="guided")
    args = parser.parse_args()
    from models.neat_train import Trainer

    before = yardstick()
    rows = []
    for case in CASES:
        with tempfile.TemporaryDirectory() as work:
            params = {"generations": args.evolve + 1, "workers": 2, "decoding": args.decoding}
            trainer = Trainer(case, params, Path(work))
            trainer.evaluate()  # compiles (or loads) the numba loop
            first = timed(trainer, args.repeats)
            for _ in range(args.evolve):
                trainer.step()
            evolved = timed(trainer, args.repeats)
            trainer.evaluator.workers = 1
            one_thread = timed(trainer, args.repeats)
            rounds = sum(g.fitness is not None for g in trainer.pops["blue"].population.values())
            rows.append(
                {
                    "case": case,
                    "genomes": rounds,
                    "first_generation_s": round(first, 4),
                    f"generation_{args.evolve}_s": round(evolved, 4),
                    f"generation_{args.evolve}_1_thread_s": round(one_thread, 4),
                    "best_fitness": round(trainer.history[-1]["best_fitness"], 3),
                }
            )
    after = yardstick()
    print(
        json.dumps(
            {
                "benchmark": "neat_generation",
                "threads": 2,
                "decoding": args.decoding,
                "rows": rows,
                "target_s": 1.0,
                "worst_s": max(
                    max(r["first_generation_s"], r[f"generation_{args.evolve}_s"]) for r in rows
                ),
                "yardstick_c4_games_per_s": {"before": before, "after": after},
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
