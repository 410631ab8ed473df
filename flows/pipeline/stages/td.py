"""Study 002 reproduced on a game (`gridbots stage study othello`, params `GAME.study`, dvc
`study-othello`): the study's design, the base configuration and one parameter changed at a
time, each trained for `games` games; its six comparison matrices (row plays black,
`matrix_games` per cell, plus each against random); the base configuration against the
study's minimax (the study: 42 / 100). Written to studies/GAME (study.json and the networks).

A study is not a training: the networks TD trains for play (the full grid as a sweep, the long
runs) are `GAME.models` entries of family `td`, trained, exported, evaluated and promoted by the
generic stages like every family. The configurations are tasks (stage_io.fan_out) on the
stage's local pool of `workers` processes or, with a Dask address, on a cluster
(stage_io.run_flow); the flow logs each as a nested MLflow run under one parent. What DVC keeps
is what a rerun writes alike: the clock (seconds, rates, move times) and the MLflow ids go to
`metrics/GAME/study-run.json`.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from prefect import flow, task

from flows.pipeline.stage_io import RETRIES, atomic_dir, fan_out, use_tracking, write_json
from models.td_sweep import job, study_design, train_and_measure

#: what a study's figures measure of the machine, not of the networks (kept out of study.json)
CLOCK = ("time_mean_ms", "time_p95_ms", "peak_kb")


def timeless(value: Any) -> Any:
    """`value` without its clock figures, at any depth (models.base.measured, move times)."""
    from models.base import measured

    if isinstance(value, dict):
        return {k: timeless(v) for k, v in value.items() if not measured(k) and k not in CLOCK}
    if isinstance(value, list):
        return [timeless(v) for v in value]
    return value


@task(**RETRIES)
def study_matrices(
    spec: str, models: dict[str, dict], rows: dict[str, list], games: int, seed: int
) -> dict[str, Any]:
    """The six matrices, each agent moving by the rule it trained with."""
    from agents.td.agent import read_network
    from engine import parse_game_spec
    from models.td import play_settings
    from models.td_matches import Side, study_matrix

    game = parse_game_spec(spec)
    sides = {}
    for name, entry in models.items():
        network, _ = read_network(entry["artifact"], game)
        sides[name] = Side(network, *play_settings(entry["params"]))
    out = {}
    for k, (key, values) in enumerate(rows.items()):
        chosen = {value: sides[name] for value, name in values}
        out[key] = study_matrix(game, chosen, games, seed + 100_000 * k)
        out[key]["configs"] = dict(values)
    return out


@task(**RETRIES)
def against_minimax(spec: str, entry: dict, opponent: str, games: int, seed: int) -> dict:
    """The study's comparison in two protocols: greedy over seeded openings, sides swapped
    (gridbots'), and moving by its training rule from the initial position (the study's)."""
    from agents.td.agent import read_network
    from engine import parse_game_spec
    from models.td_matches import versus_agent

    game = parse_game_spec(spec)
    network, _ = read_network(entry["artifact"], game)
    p = entry["params"]
    return {
        "opponent": opponent,
        "config": entry["label"],
        "greedy_openings": versus_agent(game, network, opponent, games, seed, opening=4),
        "as_trained_initial": versus_agent(
            game,
            network,
            opponent,
            games,
            seed,
            opening=0,
            select=p["selection"],
            epsilon=p["random_factor"],
        ),
    }


def _home(root: Path, on_cluster: bool) -> Path:
    """The repository root; absolute on a cluster, whose workers may run elsewhere."""
    return Path(root).resolve() if on_cluster else Path(root)


@flow(name="study-td")
def study_flow(root: Path, params: dict, game: str, on_cluster: bool = False) -> dict[str, Any]:
    """studies/GAME: the study's networks, matrices and minimax match (study.json)."""
    root = _home(root, on_cluster)
    use_tracking(params, root)
    settings, spec = params[game]["study"], params[game]["spec"]
    configs, rows = study_design(settings["base"], settings["vary"])
    seed = int(settings["seed"])
    began = time.perf_counter()
    with atomic_dir(root / "studies" / game) as scratch:
        jobs = [
            job(
                spec,
                {**p, "games": int(settings["games"]), "seed": seed},
                scratch / "models" / name,
                ["random"],
                int(settings["matrix_games"]),
                seed,
            )
            for name, p in configs.items()
        ]
        title = f"{game}: study configurations"  # tasks: stage_io.run_flow's pool or cluster
        trained = list(fan_out(train_and_measure, jobs, title))
        models = {name: entry for name, entry in zip(configs, trained, strict=True)}
        matrices = study_matrices(spec, models, rows, int(settings["matrix_games"]), seed)
        base = models[next(iter(configs))]
        minimax = against_minimax(
            spec, base, settings["minimax"]["opponent"], int(settings["minimax"]["games"]), seed
        )
        stored = {
            name: {**e, "artifact": str(Path(e["artifact"]).relative_to(scratch))}
            for name, e in models.items()
        }  # relative: the output folder moves
        study = {
            "game": spec,
            "games_per_config": int(settings["games"]),
            "configs": timeless(stored),
            "rows": rows,
            "matrices": timeless(matrices),
            "minimax": timeless(minimax),
            "base": base["label"],
        }
        write_json(scratch / "study.json", study)
        runs = log_runs(
            game, f"{game}-td-study", trained, {"base": base["label"]}, [scratch / "study.json"]
        )
    greedy = minimax["greedy_openings"]
    figures = {
        "base_vs_minimax.score": greedy["score"],
        "base_vs_minimax.low": greedy["score_low"],
        "base_vs_minimax.high": greedy["score_high"],
        "base_as_trained_vs_minimax.wins": minimax["as_trained_initial"]["wins"],
    }
    write_json(root / "metrics" / game / "study.json", figures)
    clock = {"seconds": time.perf_counter() - began, "runs": runs,
             "configs": {e["label"]: e.get("seconds") for e in trained}}  # fmt: skip
    write_json(root / "metrics" / game / "study-run.json", clock)
    return study


@task(**RETRIES)
def log_runs(game: str, name: str, entries: list[dict], summary: dict, files: list) -> dict:
    from models.tracking import log_records

    return log_records(game, name, "td", game, entries, summary, files=files)
