"""Study 002's configurations and jobs (the study stage, flows/pipeline/stages/td.py): which
configurations the study trains, each as a job of plain values, and the work a job does.

`study_design` is the study's one-parameter-at-a-time design. A job (`job`) is a dict with its
paths absolute, so that in a worker process or on a cluster worker sharing the data root it
trains and measures one configuration (`train_and_measure`). No job opens an MLflow run: the
flow logs what they return (models.tracking.log_records). TD networks trained for play (a grid
as a sweep, long runs) are `GAME.models` entries: models.td.learn through models.tracking.train.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from models import td
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


def train_and_measure(job: dict[str, Any]) -> dict[str, Any]:
    """Trains `job["params"]` on `job["game"]` into `job["out"]`, then measures the exported
    file (float32 weights, as deployed): greedy score against each `job["measure"]` spec
    ("random" runs in numba) over seeded openings with sides swapped."""
    from agents.td.agent import read_network
    from engine import parse_game_spec
    from models.td_matches import score_vs_random, versus_agent

    game = parse_game_spec(job["game"])
    began = time.perf_counter()
    result = td.train(job["game"], job["params"], job["out"])
    network, _ = read_network(result.artifact, game)
    metrics = dict(result.metrics)
    games, seed, opening = job.get("measure_games", 0), job.get("seed", 0), job.get("opening", 4)
    for spec in job.get("measure", ()):
        found = (
            score_vs_random(game, network, games, seed, opening)
            if spec == "random"
            else versus_agent(game, network, spec, games, seed, opening)
        )
        metrics[f"score_vs_{spec}"] = found["score"]
        metrics[f"score_low_vs_{spec}"] = found["score_low"]
    return {
        "label": td.label(result.params),
        "params": result.params,
        "metrics": metrics,
        "history": result.history,
        "artifact": str(result.artifact),
        "seconds": time.perf_counter() - began,
    }
