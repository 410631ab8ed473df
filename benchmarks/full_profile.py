"""Projected wall-clock of the `full` profile's `dvc repro` on 1, 2, 8 and 64 one-thread workers.

A model fitted to two measured runs (issue 18), not a run of the full profile, which would take
days on 2 cores. The method, every step stated so the figure can be checked:

1. Two scaled copies of params-full.yaml run for real. Every count that sets how much work a
   stage does is multiplied by the scale (at least its smallest legal value): dataset games,
   match and gate games, the validation sample, NEAT generations, TD games and PlayerZero games
   per generation. Everything else stays as in the full profile: sweeps, epochs, network sizes,
   the NEAT population, search budgets. PlayerZero runs two generations (0 from MCTS, 1 from
   PUCT) with no hour limit. Each copy runs as `gridbots repro` runs it: `dvc repro` on a
   throw-away clone, through the warm stage host, with no cluster and one process
   (`workers: 1`). Every stage's wall-clock is read from dvc's output as it runs.
2. Each stage's two points (the share of its full-profile work it did, seconds) give a line.
   - The intercept is what does not grow with the work: imports, compilation, per-shard and
     per-configuration costs.
   - The slope is the seconds its full-profile work takes on one core.
   - A stage that does not scale (export, report, the territory study) keeps its mean.
   - Othello's `thorough` tree grows with depth, not with a count: the two runs build it to
     `--thorough-depths` (5 and 6: the full profile's 7 is projected at 3,712 s on one core), and
     its work, for it and the stages that read it, is the tree's states (the sum of perft
     counts to that depth: 1,713, 9,913 and 65,005), checked against the states each run's
     manifest holds.
3. On n workers a stage takes intercept + slope x ceil(T/n)/T + ceil(T/n) x overhead. T is the
   stage's fan-out in the full profile: shards, sweep configurations, pairings, NEAT seeds, TD
   configurations and runs, or 1 where the stage works in its own process only. The overhead is
   the per-task cost that `benchmarks/cluster.py` measures (`--overhead`).
4. A PlayerZero loop is projected per generation from its state.json. Self-play fans out over
   its shards; training, the arena and the evaluation are counted as serial. Generation 0 is
   followed by PUCT generations up to `generations`, and the loop stops at the profile's
   `hours`, as the loop itself does.

Stages run one after another, as `dvc repro` runs them. Prints JSON Lines: each measured run,
then the projection. A run's seconds are kept in `--work` (default: a new temporary folder) as
`<scale>.json` beside its clone, so a stopped benchmark given the same folder goes on from the
runs it finished.

    .venv/bin/python benchmarks/full_profile.py [--scales 0.002 0.006] [--thorough-depths 5 6]
        [--overhead 0.213] [--work DIR]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from flows.pipeline.params import scaled_profile  # noqa: E402

BIN = Path(sys.executable).parent
WORKERS = (1, 2, 8, 64)


def run_profile(params: dict[str, Any], work: Path, label: str) -> dict[str, Any]:
    """`dvc repro` of `params` on a clone of this commit through a stage host; seconds per stage
    (a run finished before, its `<label>.json` in `work`, is read back instead)."""
    done = work / f"{label}.json"
    if done.is_file():
        return {**json.loads(done.read_text()), "root": work / label}
    import yaml
    from prefect.settings import PREFECT_API_URL
    from prefect.testing.utilities import prefect_test_harness
    from rich.console import Console
    from rich.progress import Progress

    from flows.pipeline.host import start_host

    root = work / label
    if root.exists():  # a run stopped midway: its stages' seconds were not kept
        shutil.rmtree(root)
    subprocess.run(["git", "clone", "-q", str(REPO), str(root)], check=True)
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    listed = subprocess.run([str(BIN / "dvc"), "stage", "list"], cwd=root, capture_output=True,
                            text=True, check=True).stdout.splitlines()  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "PREFECT_", "DVC_"))}
    env.update(PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}", DVC_NO_ANALYTICS="1",
               DO_NOT_TRACK="1", MLFLOW_DISABLE_TELEMETRY="1", GX_ANALYTICS_ENABLED="false",
               PREFECT_SERVER_ANALYTICS_ENABLED="false", PYTHONPATH=str(root),
               GRIDBOTS_MODEL_CACHE=str(work / f"{label}-model-cache"))  # fmt: skip
    seconds: dict[str, float] = {}
    with prefect_test_harness(server_startup_timeout=180):
        env["PREFECT_API_URL"] = PREFECT_API_URL.value()
        host, env = start_host(env)
        progress = Progress(console=Console(stderr=True), transient=True)
        try:
            with progress:
                bar = progress.add_task(f"dvc repro, scale {label}", total=len(listed))
                started = time.perf_counter()
                repro = subprocess.Popen([str(BIN / "dvc"), "repro"], cwd=root, env=env,
                                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                         text=True)  # fmt: skip
                stage, since, tail = None, started, []
                for line in repro.stdout:
                    tail = [*tail[-40:], line]
                    found = re.match(r"Running stage '([^']+)'", line)
                    if found:
                        now = time.perf_counter()
                        if stage:
                            seconds[stage] = round(now - since, 2)
                        stage, since = found.group(1), now
                        progress.advance(bar)
                        progress.update(bar, description=f"scale {label}: {stage}")
                if repro.wait():
                    raise SystemExit(f"dvc repro at scale {label} failed:\n{''.join(tail)}")
                seconds[stage] = round(time.perf_counter() - since, 2)
        finally:
            host.terminate()
            host.wait(timeout=60)
    result = {"seconds": seconds, "wall_s": round(sum(seconds.values()), 1)}
    scratch = done.with_suffix(".tmp")
    scratch.write_text(json.dumps(result))
    scratch.replace(done)
    return {**result, "root": root}


def tree_states(spec: str, depth: int) -> int:
    """States of the game tree down to `depth` moves: what a `thorough` dataset enumerates."""
    from engine import load_game
    from engine.loops import count_leaves

    game = load_game(spec)
    start = game.new_initial_state().array
    return sum(count_leaves(game, start, d) for d in range(depth + 1))


def _dataset_size(params: dict, root: Path | None, game: str, name: str) -> float:
    """A dataset's work: its games (`x`), or for a depth tree the states it enumerates (checked
    against the positions its manifest holds, where a run made it)."""
    dataset = params[game]["datasets"][name]
    if dataset.get("technique", name) != "thorough":
        return float(dataset["options"]["x"])
    states = tree_states(params[game]["spec"], int(dataset["options"]["x"]))
    manifest = root / "data" / game / name / "manifest.json" if root else None
    if manifest and manifest.is_file():
        held = json.loads(manifest.read_text())["counts"]["positions"]
        if held != states:
            raise SystemExit(f"{game}/{name}: the manifest holds {held} states, perft {states}")
    return float(states)


def stage_work(params: dict, root: Path | None, stage: str) -> float | None:
    """How much work `stage` does under `params` (None: the same at every scale)."""
    head, _, item = stage.partition("@")
    kind, _, game = head.partition("-")
    if kind == "study" and game == "othello":  # study 002's design: games per configuration
        return float(params["othello"]["study"]["games"])
    if kind in ("generate", "validate"):
        return _dataset_size(params, root, game, item)
    if kind == "encode":
        return _dataset_size(params, root, game, params[game]["encodings"][item]["dataset"])
    if kind == "train":
        model = params[game]["models"][item]
        if model["family"] == "neat":  # families that learn by playing: their own count
            return float(model["params"]["generations"])
        if model["family"] == "td":
            return float(model["params"]["games"])
        encoding = model["encoding"]
        return _dataset_size(params, root, game, params[game]["encodings"][encoding]["dataset"])
    if kind == "evaluate":
        return float(params[game]["evaluate"]["games"])
    if kind == "promote":
        return float(params["promote"]["games"])
    return None


def fan_out(full: dict, root: Path, stage: str) -> int:
    """Tasks the stage hands a cluster in the full profile (1: it works in its own process)."""
    from engine import parse_game_spec
    from features.generate import num_shards, parse_params

    head, _, item = stage.partition("@")
    kind, _, game = head.partition("-")
    if kind == "generate":
        dataset = full[game]["datasets"][item]
        spec = parse_game_spec(full[game]["spec"])
        technique = dataset.get("technique", item)
        module, parsed = parse_params(spec, technique, dict(dataset["options"]))
        return num_shards(module, spec, parsed)
    if kind == "train":  # a sweep's configurations (a NEAT case's seeds are a sweep too)
        model = full[game]["models"][item]
        seeds = model.get("seeds") if model["family"] == "neat" else None
        return max(len(seeds or ()), math.prod(len(v) for v in model.get("sweep", {}).values()))
    if kind == "study" and game == "othello":
        return len(json.loads((root / "studies/othello/study.json").read_text())["configs"])
    if kind == "evaluate":
        summary = json.loads((root / "evaluation" / game / "summary.json").read_text())
        return len(summary.get("pairings") or summary["levels"])
    return 1


def line(points: list[tuple[float, float]]) -> tuple[float, float]:
    """(intercept, slope) through two (work share, seconds) points, neither below zero."""
    (x1, y1), (x2, y2) = points
    slope = max(0.0, (y2 - y1) / (x2 - x1))
    return max(0.0, y1 - slope * x1), slope


def on_workers(intercept: float, slope: float, tasks: int, overhead: float, n: int) -> float:
    rounds = math.ceil(tasks / n)
    return intercept + slope * rounds / tasks + rounds * overhead


def project_stage(full: dict, runs: list[dict], scaled: list[dict], stage: str) -> dict:
    measured = [run["seconds"][stage] for run in runs]
    work = [stage_work(p, run["root"], stage) for p, run in zip(scaled, runs, strict=True)]
    full_work = stage_work(full, None, stage)
    row: dict[str, Any] = {"stage": stage, "measured_s": measured}
    if full_work is None or work[0] == work[1]:
        row.update(intercept_s=round(sum(measured) / 2, 2), slope_s=0.0, tasks=1)
        return row
    shares = [w / full_work for w in work]
    intercept, slope = line(list(zip(shares, measured, strict=True)))
    row.update(work_share=[round(s, 6) for s in shares], intercept_s=round(intercept, 2),
               slope_s=round(slope, 1), tasks=fan_out(full, runs[-1]["root"], stage))  # fmt: skip
    return row


def project_playerzero(full: dict, runs: list[dict], scaled: list[dict], game: str,
                       overhead: float) -> dict:  # fmt: skip
    """One loop: its generations projected from their own seconds, capped at `hours`."""
    loop = full["playerzero"][game]
    stage = f"playerzero@{game}"
    histories = [json.loads((run["root"] / "playerzero" / game / "state.json").read_text())
                 ["history"] for run in runs]  # fmt: skip
    generations = {}
    for g, step in ((0, "first"), (1, "selfplay")):
        shares = [p["playerzero"][game][step]["games"] / loop[step]["games"] for p in scaled]
        play = [h[g]["selfplay"]["seconds"] for h in histories]
        rest = [h[g]["seconds"] - h[g]["selfplay"]["seconds"] for h in histories]
        generations[g] = {
            "selfplay": line(list(zip(shares, play, strict=True))),
            "rest": line(list(zip(shares, rest, strict=True))),
            "tasks": math.ceil(loop[step]["games"] / loop[step]["shard_size"]),
        }
    outside = [run["seconds"][stage] - sum(h["seconds"] for h in hist)
               for run, hist in zip(runs, histories, strict=True)]  # fmt: skip
    start = max(0.0, sum(outside) / 2)

    def generation(g: int, n: int) -> float:
        play, rest = generations[g]["selfplay"], generations[g]["rest"]
        return on_workers(*play, generations[g]["tasks"], overhead, n) + sum(rest)

    walls = {}
    for n in WORKERS:
        uncapped = generation(0, n) + (loop["generations"] - 1) * generation(1, n)
        walls[n] = start + min(uncapped, float(loop["hours"]) * 3600 or uncapped)
    return {
        "stage": stage,
        "measured_s": [run["seconds"][stage] for run in runs],
        "generation_0_one_core_s": round(generation(0, 1), 1),
        "generation_1_one_core_s": round(generation(1, 1), 1),
        "hours_cap": loop["hours"],
        "projected_s": {str(n): round(w, 1) for n, w in walls.items()},
    }


def main() -> None:
    import yaml

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scales", type=float, nargs=2, default=(0.002, 0.006),
                        help="the two scales run for real")  # fmt: skip
    parser.add_argument("--thorough-depths", type=int, nargs=2, default=(5, 6),
                        help="the two runs' Othello tree depths")  # fmt: skip
    parser.add_argument(
        "--overhead",
        type=float,
        default=0.213,
        help="seconds a cluster task costs (benchmarks/cluster.py measures it)",
    )
    parser.add_argument("--work", type=Path, help="folder of the runs (kept; reused if given)")
    args = parser.parse_args()
    full = yaml.safe_load((REPO / "params-full.yaml").read_text())
    work = args.work or Path(tempfile.mkdtemp(prefix="gridbots-full-projection-"))
    work.mkdir(parents=True, exist_ok=True)
    scaled = [scaled_profile(full, args.scales[0], args.thorough_depths[0]),
              scaled_profile(full, args.scales[1], args.thorough_depths[1], floor=3)]  # fmt: skip
    runs = []
    for scale, params in zip(args.scales, scaled, strict=True):
        run = run_profile(params, work, str(scale))
        runs.append(run)
        print(json.dumps({"scale": scale, "wall_s": run["wall_s"], "seconds": run["seconds"]}),
              flush=True)  # fmt: skip
    rows, loops = [], []
    for stage in runs[0]["seconds"]:
        if stage.startswith("playerzero@"):
            loops.append(project_playerzero(full, runs, scaled, stage.split("@")[1],
                                            args.overhead))  # fmt: skip
            continue
        rows.append(project_stage(full, runs, scaled, stage))
    totals = {}
    for n in WORKERS:
        stages = sum(on_workers(r["intercept_s"], r["slope_s"], r["tasks"], args.overhead, n)
                     for r in rows)  # fmt: skip
        totals[str(n)] = {
            "hours": round((stages + sum(p["projected_s"][str(n)] for p in loops)) / 3600, 2),
            "without_playerzero_hours": round(stages / 3600, 2),
        }
    largest = sorted(rows, key=lambda r: -on_workers(r["intercept_s"], r["slope_s"], r["tasks"],
                                                     args.overhead, 64))[:8]  # fmt: skip
    print(json.dumps({
        "projection_note": "a model fitted to the two measured runs above (module docstring), "
                           "not a run of the full profile",
        "overhead_per_task_s": args.overhead,
        "stages": rows,
        "playerzero": loops,
        "projected_wall": totals,
        "largest_on_64_workers": [
            {"stage": r["stage"], "tasks": r["tasks"],
             "seconds": round(on_workers(r["intercept_s"], r["slope_s"], r["tasks"],
                                         args.overhead, 64), 1)} for r in largest],
    }), flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
