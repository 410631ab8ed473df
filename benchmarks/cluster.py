"""Generation on a real gridbots cluster (flows/cluster/local.py): 2 workers vs 1, the per-task
scheduling overhead, and a projection of the full profile's generation stages on 8 and 64 cores.

One run, on one machine: `gridbots cluster up` (Prefect server, MLflow server, Dask scheduler, 2
workers of one thread each), a warm-up, then the pipeline's own generate flow on it:

- throughput: the `full` profile's own Connect 4 self-play dataset (params-full.yaml: its games,
  shard size and MCTS agent) and the same agent in shards sized by the overhead rule below
  (`--games`, `--shard-size`), each with 2 workers, then with 1 (the other stopped), each into
  its own data root; the ratio of games/s;
- the machine's ceiling, no cluster: one sized shard alone, then two at once in two plain
  processes (what any scheduler could get from these two cores);
- overhead: tiny shards (randomized, ~10 ms of work) on 1 worker: (wall - the shards' own
  seconds) / shards is what one task costs the scheduler, Prefect and the commit; the task size
  that keeps it under 5% is overhead / 0.05;
- projection (a model, not a measurement; `--no-projection` skips it): one sample shard of each
  `params-full.yaml` dataset gives seconds per game; each generation stage on n workers takes
  ceil(shards / n) x (shard seconds + overhead), stages one after another as `dvc repro` runs
  them.

The plain-C Connect 4 yardstick runs before and after (the machine is shared). Prints JSON Lines:
the measured figures as soon as they exist, then the projection.

    .venv/bin/python benchmarks/cluster.py [--games 8000] [--shard-size 500] [--agent SPEC]
        [--no-projection]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.neat_generation import yardstick  # noqa: E402
from flows.cluster import local as cluster  # noqa: E402


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
    from flows.pipeline.stages.generate import generate_flow

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


def full_profile_datasets() -> list[tuple[str, str, tuple[str, dict]]]:
    """(game, spec, (technique, settings)) of every `params-full.yaml` generation stage (a
    dataset is named after its technique unless it names one)."""
    import yaml

    full = yaml.safe_load((REPO / "params-full.yaml").read_text())
    return [
        (game, full[game]["spec"], (settings.get("technique", name), {**settings, "name": name}))
        for game in full["games"]
        for name, settings in (full[game].get("datasets") or {}).items()
    ]


def sample_full_profile(work: Path) -> list[dict]:
    """Seconds per unit of `x` (the technique's games or starts) of each full-profile dataset,
    from one small shard run here."""
    from rich.console import Console
    from rich.progress import Progress

    from engine import parse_game_spec
    from features import store
    from features.generate import num_shards, parse_params

    rows = []
    datasets = [d for d in full_profile_datasets() if d[2][0] not in WHOLE]
    with Progress(console=Console(stderr=True), transient=True) as progress:  # stdout: JSON
        bar = progress.add_task("full-profile sample shards", total=len(datasets))
        for game, spec, (technique, settings) in datasets:
            options = dict(settings["options"])
            module, parsed = parse_params(parse_game_spec(spec), technique, options)
            shards = num_shards(module, parse_game_spec(spec), parsed)
            sample_x = min(SAMPLE.get(technique, 10), int(options["x"]))
            sample = {**options, "x": sample_x, "shard_size": 10**9}
            folder = work / game / settings["name"]
            job = store.plan(folder, spec, technique, sample, settings["seed"])
            result = store.run_shard(job.tasks[0])
            rows.append(
                {
                    "dataset": f"{game}/{settings['name']}",
                    "x": int(options["x"]),
                    "shards": shards,
                    "sample_x": sample["x"],
                    "seconds_per_x": result["seconds"]["generate"] / sample["x"],
                }
            )
            progress.advance(bar)
    return rows


#: techniques whose dataset is one shard (a tree to a depth): the same wall on any number of
#: workers, and no small sample of it exists (Othello's depth-7 tree ran > 6 min here), so the
#: projection leaves them out and says so
WHOLE = ("thorough",)
#: `x` of each technique's sample shard (slow techniques get fewer)
SAMPLE = {"randomized": 400, "battle": 20, "imitation": 20, "selfplay": 4}


def project(rows: list[dict], overhead: float, cores: int) -> float:
    """Generation stages' wall on `cores` one-thread workers: whole shards per round."""
    total = 0.0
    for row in rows:
        per_shard = row["seconds_per_x"] * row["x"] / row["shards"]
        total += math.ceil(row["shards"] / cores) * (per_shard + overhead)
    return total


def workloads(args: argparse.Namespace) -> dict[str, dict]:
    """The full profile's Connect 4 self-play dataset as it is, and the same agent in shards
    sized by the overhead rule (`--games` / `--shard-size`)."""
    full = dict(next(d for g, _, (_, d) in full_profile_datasets()
                     if (g, d["name"]) == ("connect4", "selfplay"))["options"])  # fmt: skip
    agent = args.agent or full["agent"]
    return {
        "full_profile": {"x": full["x"], "shard_size": full["shard_size"], "agent": agent},
        "sized": {"x": args.games, "shard_size": args.shard_size, "agent": agent},
    }


def _one_shard(job: dict) -> float:
    from features import store

    return store.run_shard(job)["seconds"]["generate"]


def plain_processes(folder: Path, selfplay: dict, rounds: int = 2) -> dict:
    """The machine's own ceiling, no cluster: one shard of the workload in one process, then in
    two processes at once (spawned, each warmed by a first shard); each shard's seconds."""
    import multiprocessing as mp

    from features import store

    options = {**selfplay, "x": 2 * selfplay["shard_size"]}
    tasks = store.plan(folder, "connect4", "selfplay", options, 0).tasks[:2]
    with mp.get_context("spawn").Pool(2) as pool:  # temporary files only: nothing commits
        pool.map(_one_shard, tasks)  # a warm-up: each process loads its kernels
        alone, paired = [], []
        for _ in range(rounds):
            alone += pool.map(_one_shard, tasks[:1])
            paired += pool.map(_one_shard, tasks)
    return {
        "alone_s": [round(x, 3) for x in alone],
        "side_by_side_s": [round(x, 3) for x in paired],
        "slowdown_side_by_side": round(statistics.mean(paired) / statistics.mean(alone), 3),
        "ceiling_ratio_2_vs_1": round(2 * statistics.mean(alone) / statistics.mean(paired), 3),
    }


def emit(record: dict) -> None:
    print(json.dumps(record), flush=True)


def ratio(two: dict, one: dict) -> dict:
    return {
        "throughput_ratio_2_vs_1": round(
            (two["games"] / two["wall_s"]) / (one["games"] / one["wall_s"]), 3
        ),
        # shard seconds per wall second: how many cores the two workers really had
        "two_workers_concurrency": round(two["shard_seconds"] / two["wall_s"], 2),
        # a shard's own seconds side by side over alone: what sharing the machine costs
        "shard_slowdown_side_by_side": round(
            (two["shard_seconds"] / two["shards"]) / (one["shard_seconds"] / one["shards"]), 3
        ),
        "seconds_per_shard_alone": round(one["shard_seconds"] / one["shards"], 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=8000, help="games of the sized workload")
    parser.add_argument("--shard-size", type=int, default=500,
                        help="games per shard of the sized workload")  # fmt: skip
    parser.add_argument("--agent", help="self-play agent (default: the full profile's)")
    parser.add_argument("--tiny", type=int, default=40, help="tiny shards for the overhead")
    parser.add_argument("--no-projection", action="store_true",
                        help="skip the full-profile sample shards and the projection")  # fmt: skip
    args = parser.parse_args()
    loads = workloads(args)
    before = yardstick()
    work = Path(tempfile.mkdtemp(prefix="gridbots-cluster-bench-"))
    state_dir = work / ".cluster"
    cluster.up(state_dir, workers=2, data_root=work)
    stack = contextlib.ExitStack()
    runs: dict[str, dict] = {}
    try:
        from prefect.settings import PREFECT_API_URL, temporary_settings

        env = cluster.client_env(cluster.read_state(state_dir))
        os.environ.update(env)  # prefect read its settings at import: they are set below too
        stack.enter_context(temporary_settings({PREFECT_API_URL: env["PREFECT_API_URL"]}))
        warm_every_worker(env[cluster.DASK_ENV], work / "warm")
        for name, selfplay in loads.items():
            started = cpu_by_process(state_dir)
            two = run_stage(work / f"{name}-two", "selfplay", selfplay)
            ended = cpu_by_process(state_dir)
            two["cpu_s_by_process"] = {
                process: round(ended[process] - started.get(process, 0.0), 2) for process in ended
            }
            runs[name] = {"workload": selfplay, "two_workers": two}
        cluster.stop_worker(state_dir, "worker-1", hard=False)
        deadline = time.time() + 60
        while len(cluster.scheduler_workers(cluster.read_state(state_dir)["scheduler"])) > 1:
            if time.time() > deadline:
                raise SystemExit("worker-1 did not leave the scheduler")
            time.sleep(0.5)
        for name, selfplay in loads.items():
            runs[name]["one_worker"] = run_stage(work / f"{name}-one", "selfplay", selfplay)
            runs[name].update(ratio(runs[name]["two_workers"], runs[name]["one_worker"]))
        tiny = run_stage(work / "tiny", "randomized", {"x": args.tiny, "y": 1, "shard_size": 1})
    finally:
        stack.close()
        cluster.down(state_dir)
    overhead = (tiny["wall_s"] - tiny["shard_seconds"]) / tiny["shards"]
    ceiling = plain_processes(work / "plain", loads["sized"])
    after = yardstick()
    emit(
        {
            "yardstick_games_per_s": {"before": before, "after": after},
            "selfplay": runs,
            "no_cluster_two_processes": ceiling,
            "target_ratio": 1.8,
            "tiny_shards_one_worker": tiny,
            "overhead_per_task_s": round(overhead, 4),
            "task_seconds_for_overhead_under_5pct": round(overhead / 0.05, 3),
        }
    )
    if args.no_projection:
        return
    rows = sample_full_profile(work / "sample")
    emit(
        {
            "full_profile_generation": rows,
            "projection_note": "model, not a measurement: ceil(shards/n) x (shard + overhead)"
            " per generation stage, one stage after another; training is not included",
            "not_projected": [
                f"{g}/{d['name']}" for g, _, (t, d) in full_profile_datasets() if t in WHOLE
            ],
            "projected_generation_wall_s": {
                str(n): round(project(rows, overhead, n), 1) for n in (1, 2, 8, 64)
            },
        }
    )


if __name__ == "__main__":
    main()
