"""A played family's sweep one configuration after another against the stage's local pool.

Runs `gridbots stage train othello td` twice on the same small TD grid (`--games` self-play games
per configuration, `hidden` x `rule`, ranked by a short curve against a one-ply minimax), each in
a scratch root of its own under `--out`: with `workers: 1` (the sweep trains in the stage's
process, one configuration after another) and with `workers: N` (N configurations side by side
in spawned processes: flows.pipeline.stages.train.sweep_processes). Each wall time is the whole
stage (its temporary Prefect server, MLflow, every configuration's export). Checks both keep the
same bytes (run.json, model.onnx) and prints wall and CPU seconds of each, their ratio, the load
average and the C yardstick before and after, as JSON.

    nice -n 10 .venv/bin/python benchmarks/sweep_processes.py --games 20000 --workers 2
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.neat_generation import yardstick

BIN = Path(sys.executable).parent
KEPT = ("run.json", "model.onnx")


def children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def stage(root: Path, workers: int, games: int, hidden: list[int]) -> tuple[float, float]:
    """(wall s, CPU s) of the train stage in a fresh `root`."""
    root = root.resolve()
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    model = {"family": "td", "sweep": {"hidden": hidden, "rule": ["q", "sarsa"]},
             "params": {"games": games, "seed": 0, "curve_games": 20,
                        "curve_opponents": ["alphabeta:depth=1,results=flat"]}}  # fmt: skip
    params = {"games": ["othello"], "workers": workers,
              "mlflow": {"tracking_uri": "sqlite:///mlflow.db"},
              "othello": {"spec": "othello", "models": {"td": model}}}  # fmt: skip
    (root / "params.yaml").write_text(json.dumps(params))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "MLFLOW_"))}
    env.update(PREFECT_HOME=str(root / ".prefect"), PREFECT_SERVER_ANALYTICS_ENABLED="false",
               PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS="180", DO_NOT_TRACK="1",
               NUMBA_NUM_THREADS="1", OMP_NUM_THREADS="1")  # fmt: skip
    start, cpu = time.perf_counter(), children_cpu()
    done = subprocess.run([str(BIN / "gridbots"), "stage", "train", "othello", "td"], cwd=root,
                          env=env, capture_output=True, text=True)  # fmt: skip
    if done.returncode:
        raise SystemExit(f"the stage failed in {root}:\n{(done.stdout + done.stderr)[-3000:]}")
    return time.perf_counter() - start, children_cpu() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=20000, help="games per configuration")
    parser.add_argument("--hidden", default="20,40", help="the grid's hidden sizes (x 2 rules)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/out/sweep-processes"))
    args = parser.parse_args()
    hidden = [int(h) for h in args.hidden.split(",")]
    before, load_before = yardstick(), os.getloadavg()
    serial = stage(args.out / "serial", 1, args.games, hidden)
    pooled = stage(args.out / "pooled", args.workers, args.games, hidden)
    after, load_after = yardstick(), os.getloadavg()
    folder = Path("trained/othello/td")
    same = all((args.out / "serial" / folder / name).read_bytes()
               == (args.out / "pooled" / folder / name).read_bytes() for name in KEPT)  # fmt: skip
    print(json.dumps({
        "benchmark": "sweep_processes",
        "configurations": 2 * len(hidden),
        "games_per_configuration": args.games,
        "workers": args.workers,
        "same_bytes": same,
        "serial_wall_s": round(serial[0], 1),
        "serial_cpu_s": round(serial[1], 1),
        "pooled_wall_s": round(pooled[0], 1),
        "pooled_cpu_s": round(pooled[1], 1),
        "speedup": round(serial[0] / pooled[0], 2),
        "load_average_1min": [round(load_before[0], 2), round(load_after[0], 2)],
        "yardstick_games_per_s": [before, after],
    }))  # fmt: skip


if __name__ == "__main__":
    main()
