"""The TD chain's configurations and jobs (study 002): which configurations a sweep trains,
each as a job of plain values, and the work a job does wherever it runs.

`study_design` is the study's one-parameter-at-a-time design, `grid_configs` the full factorial
grid, `rank_key` how the grid's best is chosen. A job (`job`) is a dict with its paths absolute,
so that in a worker process or on a cluster worker sharing the data root it trains and measures
one configuration (models.td_matches.train_and_measure); `kept_job` keeps its result beside its
model so a killed sweep resumes, and `long_job` is one long run with its learning curve. No job
opens an MLflow run: the flow logs what they return (models.tracking.log_records, log_played).
"""

from __future__ import annotations

import itertools
import json
import time
from pathlib import Path

from engine.files import write_json
from models.td import label


def study_design(base: dict, vary: dict[str, list]) -> tuple[dict[str, dict], dict[str, list]]:
    """(configurations by label, {parameter: [label of each value]}): the base configuration and
    one parameter changed at a time; a configuration shared by several rows is trained once."""
    configs = {label(base): dict(base)}
    rows: dict[str, list] = {}
    for key, values in vary.items():
        rows[key] = []
        for value in values:
            params = {**base, key: value}
            configs.setdefault(label(params), params)
            rows[key].append([str(value), label(params)])
    return configs, rows


def grid_configs(base: dict, axes: dict[str, list]) -> dict[str, dict]:
    """Every combination of the axes (softmax ignores the random factor: one run per rest)."""
    keys = list(axes)
    configs: dict[str, dict] = {}
    for combo in itertools.product(*(axes[k] for k in keys)):
        params = {**base, **dict(zip(keys, combo, strict=True))}
        configs.setdefault(label(params), params)
    return configs


def rank_key(entry: dict, opponent: str) -> tuple[float, float]:
    """A grid configuration's standing: its score against `opponent`, then against random."""
    m = entry["metrics"]
    return (m.get(f"score_vs_{opponent}", 0.0), m.get("score_vs_random", 0.0))


def job(game: str, params: dict, out: Path, measure: list[str], games: int, seed: int) -> dict:
    """One configuration to train into `out` and measure against each `measure` spec."""
    return {
        "game": game,
        "params": params,
        "out": str(out),
        "measure": measure,
        "measure_games": games,
        "seed": seed,
        "opening": 4,
    }


def kept_job(job: dict) -> dict:
    """train_and_measure that keeps its result beside its model (OUT/entry.json, written
    last) and returns that one when the same job runs again: a killed sweep resumes where it
    stopped instead of training every configuration again."""
    from models.td_matches import train_and_measure

    done = Path(job["out"]) / "entry.json"
    if done.is_file():
        entry = json.loads(done.read_text())
        if entry.get("job") == job and Path(entry["artifact"]).is_file():
            return entry
    entry = {**train_and_measure(job), "job": job}
    write_json(done, entry)
    return entry


def long_job(job: dict) -> dict:
    """One long run in a worker process: resumable training with its learning curve."""
    from engine import parse_game_spec
    from models import td
    from models.td_matches import curve_point

    began = time.perf_counter()
    game = parse_game_spec(job["game"])
    point = curve_point(game, job["curve_opponents"], job["curve_games"], job["params"]["seed"])

    def progress(games: int, metrics: dict) -> None:
        if "curve_games" in metrics:
            scores = ", ".join(
                f"{k[9:]} {v:.3f}" for k, v in metrics.items() if k.startswith("score_vs_")
            )
            print(f"{job['name']}: {games:,} games: {scores}", flush=True)

    result = td.train(
        job["game"],
        job["params"],
        job["out"],
        progress=progress,
        curve=point,
        curve_every=job["curve_every"],
        checkpoint=job["checkpoint"],
    )
    return {
        "label": td.label(result.params),
        "params": result.params,
        "metrics": result.metrics,
        "history": result.history,
        "artifact": str(result.artifact),
        "seconds": time.perf_counter() - began,
    }
