"""Generation on a real gridbots cluster (flows/cluster.py): 2 workers vs 1, the per-task
scheduling overhead, and a projection of the full profile's generation stages on 8 and 64 cores.

One run, on one machine: `gridbots cluster up` (Prefect server, MLflow server, Dask scheduler, 2
workers of one thread each), a warm-up, then the pipeline's own generate flow on it:

- throughput: the same self-play dataset (connect4, MCTS, one game a shard) with 2 workers, then
  with 1 (the other stopped), each into its own data root; the ratio of games/s;
- overhead: tiny shards (randomized, ~10 ms of work) on 1 worker: (wall - the shards' own
  seconds) / shards is what one task costs the scheduler, Prefect and the commit; the task size
  that keeps it under 5% is overhead / 0.05;
- projection (a model, not a measurement): one sample shard of each `params-full.yaml` dataset
  gives seconds per game; each generation stage on n workers takes ceil(shards / n) x (shard
  seconds + overhead), stages one after another as `dvc repro` runs them.

The plain-C Connect 4 yardstick runs before and after (the machine is shared). Prints JSON.

    .venv/bin/python benchmarks/cluster.py [--shards 16] [--sims 40000]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.neat_generation import yardstick  # noqa: E402
from flows import cluster  # noqa: E402


def _params(dataset: dict) -> dict:
    return {
        "games": ["connect4"],
        "workers": 1,
        "dask": {"address": ""},
        "connect4": {"spec": "connect4", "datasets": {dataset["technique"]: dataset}},
    }


def run_stage(root: Path, technique: str, options: dict, seed: int = 0) -> dict:
    """The pipeline's generate flow on the cluster (GRIDBOTS_DASK_ADDRESS); wall and shards."""
    from features import store
    from flows.stages.generate import generate_flow

    dataset = {"technique": technique, "seed": seed, "options": options}
    started = time.perf_counter()
    generate_flow(root, _params(dataset), "connect4", technique)
    wall = time.perf_counter() - started
    shards = store.read_manifest(root / "data" / "connect4" / technique)["shards"].values()
    own = sum(s["seconds"]["generate"] + s["seconds"]["write"] for s in shards)
    return {
        "wall_s": round(wall, 3),
        "shards": len(shards),
        "games": sum(s["rows"]["games"] for s in shards),
        "shard_seconds": round(own, 3),
        "workers": sorted({s["worker"] for s in shards}),
    }


def warm_every_worker(address: str, folder: Path) -> None:
    """One small shard of each measured technique on every worker first, so that no run pays
    for a worker's first numba cache load."""
    from distributed import Client

    from features import store

    tasks = [
        store.plan(folder / technique, "connect4", technique, options).tasks[0]
        for technique, options in (
            ("selfplay", {"x": 1, "shard_size": 1, "agent": "mcts:sims=50"}),
            ("randomized", {"x": 1, "y": 1, "shard_size": 1}),
        )
    ]
    with Client(address, set_as_default=False) as client:
        client.run(lambda: [store.run_shard(dict(task)) for task in tasks])


def cpu_by_process(state_dir: Path) -> dict[str, float]:
    """CPU seconds so far of each cluster process group, and of this (the flow's) process."""
    import psutil

    totals = {"flow (this process)": sum(psutil.Process().cpu_times()[:2])}
    for entry in cluster.read_state(state_dir)["processes"]:
        seconds = 0.0
        for pid in cluster.group_members(entry["pgid"]):
            try:
                seconds += sum(psutil.Process(pid).cpu_times()[:2])
            except psutil.NoSuchProcess:
                continue
        totals[entry["name"]] = seconds
    return totals


def sample_full_profile(work: Path) -> list[dict]:
    """Seconds per unit of `x` (the technique's games or starts) of each full-profile dataset,
    from one small shard run here."""
    import yaml

    from engine import parse_game_spec
    from features import store
    from features.generate import num_shards, parse_params

    full = yaml.safe_load((REPO / "params-full.yaml").read_text())
    rows = []
    for game in full["games"]:
        for technique, settings in (full[game].get("datasets") or {}).items():
            options = dict(settings["options"])
            spec = full[game]["spec"]
            module, parsed = parse_params(parse_game_spec(spec), technique, options)
            shards = num_shards(module, parse_game_spec(spec), parsed)
            sample = {**options, "x": SAMPLE.get(technique, 10), "shard_size": 10**9}
            job = store.plan(work / game / technique, spec, technique, sample, settings["seed"])
            result = store.run_shard(job.tasks[0])
            rows.append(
                {
                    "dataset": f"{game}/{technique}",
                    "x": int(options["x"]),
                    "shards": shards,
                    "sample_x": sample["x"],
                    "seconds_per_x": result["seconds"]["generate"] / sample["x"],
                }
            )
    return rows


#: `x` of each technique's sample shard (slow techniques get fewer)
SAMPLE = {"randomized": 400, "battle": 20, "imitation": 20, "selfplay": 4}


def project(rows: list[dict], overhead: float, cores: int) -> float:
    """Generation stages' wall on `cores` one-thread workers: whole shards per round."""
    total = 0.0
    for row in rows:
        per_shard = row["seconds_per_x"] * row["x"] / row["shards"]
        total += math.ceil(row["shards"] / cores) * (per_shard + overhead)
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shards", type=int, default=16, help="self-play shards per run")
    parser.add_argument("--sims", type=int, default=40000, help="MCTS simulations per move")
    parser.add_argument("--tiny", type=int, default=40, help="tiny shards for the overhead")
    args = parser.parse_args()
    before = yardstick()
    work = Path(tempfile.mkdtemp(prefix="gridbots-cluster-bench-"))
    state_dir = work / ".cluster"
    cluster.up(state_dir, workers=2, data_root=work)
    stack = contextlib.ExitStack()
    try:
        from prefect.settings import PREFECT_API_URL, temporary_settings

        env = cluster.client_env(cluster.read_state(state_dir))
        os.environ.update(env)  # prefect read its settings at import: they are set below too
        stack.enter_context(temporary_settings({PREFECT_API_URL: env["PREFECT_API_URL"]}))
        selfplay = {"x": args.shards, "shard_size": 1, "agent": f"mcts:sims={args.sims}"}
        warm_every_worker(env[cluster.DASK_ENV], work / "warm")
        before_two = cpu_by_process(state_dir)
        two = run_stage(work / "two", "selfplay", selfplay)
        after_two = cpu_by_process(state_dir)
        two["cpu_s_by_process"] = {
            name: round(after_two[name] - before_two.get(name, 0.0), 2) for name in after_two
        }
        cluster.stop_worker(state_dir, "worker-1", hard=False)
        deadline = time.time() + 60
        while len(cluster.scheduler_workers(cluster.read_state(state_dir)["scheduler"])) > 1:
            if time.time() > deadline:
                raise SystemExit("worker-1 did not leave the scheduler")
            time.sleep(0.5)
        one = run_stage(work / "one", "selfplay", selfplay)
        tiny = run_stage(work / "tiny", "randomized", {"x": args.tiny, "y": 1, "shard_size": 1})
    finally:
        stack.close()
        cluster.down(state_dir)
    overhead = (tiny["wall_s"] - tiny["shard_seconds"]) / tiny["shards"]
    rows = sample_full_profile(work / "sample")
    after = yardstick()
    speedup = (two["games"] / two["wall_s"]) / (one["games"] / one["wall_s"])
    print(
        json.dumps(
            {
                "yardstick_games_per_s": {"before": before, "after": after},
                "two_workers": two,
                "one_worker": one,
                "throughput_ratio_2_vs_1": round(speedup, 3),
                # shard seconds per wall second: how many cores the two workers really had
                "two_workers_concurrency": round(two["shard_seconds"] / two["wall_s"], 2),
                "target_ratio": 1.8,
                "tiny_shards_one_worker": tiny,
                "overhead_per_task_s": round(overhead, 4),
                "task_seconds_for_overhead_under_5pct": round(overhead / 0.05, 3),
                "full_profile_generation": rows,
                "projection_note": "model, not a measurement: ceil(shards/n) x (shard + overhead)"
                " per generation stage, one stage after another; training is not included",
                "projected_generation_wall_s": {
                    str(n): round(project(rows, overhead, n), 1) for n in (1, 2, 8, 64)
                },
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
