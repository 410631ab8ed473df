"""The TD chain of study 002 (params `<game>.td`, dvc stages `td-*-<game>`): Prefect flows.

  td-study       the study's design: the base configuration and one parameter changed at a
                 time, each trained for `games` games; its six comparison matrices (row plays
                 black, `matrix_games` per cell, plus each against random); the base
                 configuration against the study's minimax (the study: 42 / 100)
  td-grid        the full factorial grid the study skipped, every configuration measured
                 greedily against random and a named agent; the best one chosen
  td-long        the grid's best configuration trained for long (resumable checkpoints), with
                 a learning curve against minimax every `curve_every` games; registered
  td-tournament  the long-trained and the study-scale networks (and the dataset chain's exported
                 value networks, when `<game>.models` lists some) against alpha-beta at several
                 depths, MCTS and any other spec listed (evaluation/<game>, the usual format)
  td-promote     the registry's gate for the new `<game>-td` version and, with the same gate,
                 for the dataset chain's families (`<game>-value-mlp`)

Training configurations and tournament pairings run in worker processes (params `workers`), or
with a Dask address (stage_io.dask_address) as cluster tasks (stage_io.fan_out): each
writes its network into the stage's folder in the shared data root and returns its metrics, and
the flow logs every configuration as a nested MLflow run under its stage's parent run (no worker
opens a run, so a killed worker leaves none RUNNING). Outputs are written into scratch folders and
renamed into place when complete; the grid keeps each finished configuration and the long
training checkpoints outside their outputs (under .cache/td), so a killed run resumes where it
stopped.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

from prefect import flow, task

from flows.pipeline.stage_io import RETRIES, atomic_dir, fan_out, use_tracking, write_json
from flows.pipeline.stage_runs import log_stage_run
from flows.pipeline.td_jobs import read_output, run_jobs, write_curve
from models.td_sweep import grid_configs, job, kept_job, long_job, rank_key, study_design

CHECKPOINTS = Path(".cache") / "td"


# ---- td-study ------------------------------------------------------------------------------------
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


@flow(name="td-study")
def study_flow(root: Path, params: dict, game: str, on_cluster: bool = False) -> dict[str, Any]:
    root = _home(root, on_cluster)
    use_tracking(params, root)
    chain, spec = params[game]["td"], params[game]["spec"]
    settings = chain["study"]
    configs, rows = study_design(chain["base"], settings["vary"])
    seed = int(settings["seed"])
    began = time.perf_counter()
    with atomic_dir(root / "td" / game / "study") as scratch:
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
        trained = run_jobs(jobs, int(params["workers"]), f"{game}: study configurations",
                           mapper=fan_out if on_cluster else None)  # fmt: skip
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
            "configs": stored,
            "rows": rows,
            "matrices": matrices,
            "minimax": minimax,
            "base": base["label"],
            "seconds": time.perf_counter() - began,
        }
        write_json(scratch / "study.json", study)
        runs = log_runs(
            game, f"{game}-td-study", trained, {"base": base["label"]}, [scratch / "study.json"]
        )
        write_json(scratch / "runs.json", runs)
    greedy = minimax["greedy_openings"]
    write_json(
        root / "metrics" / game / "td-study.json",
        {
            "base_vs_minimax.score": greedy["score"],
            "base_vs_minimax.low": greedy["score_low"],
            "base_vs_minimax.high": greedy["score_high"],
            "base_as_trained_vs_minimax.wins": minimax["as_trained_initial"]["wins"],
            "seconds": study["seconds"],
        },
    )
    return study


@task(**RETRIES)
def log_runs(game: str, name: str, entries: list[dict], summary: dict, files: list) -> dict:
    from models.tracking import log_records

    return log_records(game, name, "td", game, entries, summary, files=files)


# ---- td-grid -------------------------------------------------------------------------------------
@flow(name="td-grid")
def grid_flow(root: Path, params: dict, game: str, on_cluster: bool = False) -> dict[str, Any]:
    root = _home(root, on_cluster)
    use_tracking(params, root)
    chain, spec = params[game]["td"], params[game]["spec"]
    settings = chain["grid"]
    seed, opponent = int(settings["seed"]), str(settings["opponent"])
    configs = grid_configs(chain["base"], settings["axes"])
    began = time.perf_counter()
    kept = root / CHECKPOINTS / game / "grid"  # finished configurations, until the stage ends
    with atomic_dir(root / "td" / game / "grid") as scratch:
        jobs = [
            job(
                spec,
                {**p, "games": int(settings["games"]), "seed": seed},
                kept / name,
                ["random", opponent],
                int(settings["eval_games"]),
                seed,
            )
            for name, p in configs.items()
        ]
        resumed = sum((kept / name / "entry.json").is_file() for name in configs)
        trained = run_jobs(jobs, int(params["workers"]), f"{game}: full grid", work=kept_job,
                           mapper=fan_out if on_cluster else None)  # fmt: skip
        seconds = time.perf_counter() - began
        ranked = sorted(trained, key=lambda e: rank_key(e, opponent), reverse=True)
        best = ranked[0]
        shutil.copyfile(best["artifact"], scratch / "best.onnx")
        for entry in trained:  # only the best network is kept (logged from the scratch folder)
            entry.pop("job", None)
            entry["artifact"] = str(scratch / "best.onnx") if entry is best else ""
        summary = {
            "game": spec,
            "configs": len(trained),
            "seconds": seconds,
            "resumed": resumed,  # configurations a killed earlier run had finished
            "job_seconds": sum(e["seconds"] for e in trained),  # every job's own time, summed
            "workers": int(params["workers"]),
            "opponent": opponent,
            "games_per_config": int(settings["games"]),
            "best": best["label"],
            "best_params": best["params"],
            "best_metrics": best["metrics"],
            "ranking": [
                {"label": e["label"], "params": e["params"], **e["metrics"]} for e in ranked
            ],
        }
        write_json(scratch / "grid.json", summary)
        runs = log_runs(
            game,
            f"{game}-td-grid",
            trained,
            {"best": best["label"], "seconds": seconds},
            [scratch / "grid.json"],
        )
        write_json(scratch / "runs.json", runs)
    shutil.rmtree(kept, ignore_errors=True)  # the output is complete: a new run starts afresh
    write_json(
        root / "metrics" / game / "td-grid.json",
        {
            "seconds": seconds,
            "configs": len(trained),
            f"best.score_vs_{opponent}": best["metrics"][f"score_vs_{opponent}"],
        },
    )
    return summary


# ---- td-long -------------------------------------------------------------------------------------
def long_runs(root: Path, game: str, settings: dict) -> dict[str, dict]:
    """name → parameters: the grid's best configuration with the long run's games and seed,
    changed as each run says ({}: as it is; a run may set its own `games`)."""
    best = read_output(root, game, "grid/grid.json", "td-grid")["best_params"]
    base = {**best, "games": int(settings["games"]), "seed": int(settings["seed"])}
    return {
        name: {**base, **(change or {})}
        for name, change in (settings.get("runs") or {"best": {}}).items()
    }


@flow(name="td-long")
def long_flow(root: Path, params: dict, game: str, on_cluster: bool = False) -> dict[str, Any]:
    from models.tracking import log_played

    root = _home(root, on_cluster)
    use_tracking(params, root)
    chain, spec = params[game]["td"], params[game]["spec"]
    settings = chain["long"]
    runs = long_runs(root, game, settings)
    began = time.perf_counter()
    with atomic_dir(root / "td" / game / "long") as scratch:
        jobs = [
            {
                "game": spec,
                "name": name,
                "params": p,
                "out": str(scratch / name),
                "checkpoint": str(root / CHECKPOINTS / f"{game}-long-{name}.npz"),
                "curve_every": int(settings["curve_every"]),
                "curve_games": int(settings["curve_games"]),
                "curve_opponents": list(settings["curve_opponents"]),
            }
            for name, p in runs.items()
        ]
        done = run_jobs(jobs, int(params["workers"]), f"{game}: long training", work=long_job,
                        mapper=fan_out if on_cluster else None)  # fmt: skip
        summary = {}
        for name, entry in zip(runs, done, strict=True):
            entry["registered"] = log_played(game, f"{game}-td-long-{name}", "td", game, entry)
            entry["artifact"] = f"{name}/model.onnx"
            write_json(scratch / name / "run.json", entry)
            summary[name] = entry
        write_json(
            scratch / "runs.json", {"runs": list(summary), "seconds": time.perf_counter() - began}
        )
    write_curve(
        root / "plots" / game / "td-long.csv", {n: e["history"] for n, e in summary.items()}
    )
    write_json(
        root / "metrics" / game / "td-long.json",
        {
            f"{n}.{k}": v
            for n, e in summary.items()
            for k, v in e["metrics"].items()
            if isinstance(v, float) and k.startswith(("last_score", "training_games"))
        },
    )
    return summary


# ---- td-tournament and td-promote ----------------------------------------------------------------
@flow(name="td-tournament")
def tournament_flow(
    root: Path, params: dict, game: str, on_cluster: bool = False
) -> dict[str, Any]:
    from engine.tournament import standings, summarize_pairing
    from flows.pipeline.stages.evaluate import bot_specs, relabel
    from flows.reports.tournament import write_outputs
    from models.arena import play_job

    root = Path(root)
    chain, spec = params[game]["td"], params[game]["spec"]
    settings = chain["tournament"]
    study = read_output(root, game, "study/study.json", "td-study")
    long = read_output(root, game, "long/runs.json", "td-long")
    base = (root / "td" / game / "study" / study["configs"][study["base"]]["artifact"]).resolve()
    bots = {"td-study": f"td:model={base}"}
    for name in long["runs"]:
        bots[f"td-long-{name}"] = f"td:model={(root / 'td' / game / 'long' / name).resolve()}"
        bots[f"td-long-{name}"] += "/model.onnx"
    bots.update(settings.get("bots", {}))
    if params[game].get("models"):  # the dataset chain's exported value networks, same table
        bots.update(bot_specs(root, game))
    labels = {s: name for name, s in bots.items()}
    opponents = [str(o) for o in settings["opponents"]]
    skipped = []  # `optional` opponents (a PlayerZero bot not trained yet) that cannot play
    for candidate in settings.get("optional", []):
        why = unavailable(spec, str(candidate))
        opponents += [] if why else [str(candidate)]
        skipped += [{"spec": str(candidate), "why": why}] if why else []
    pairs = [(b, o) for b in bots.values() for o in opponents]
    jobs = [
        {
            "game": spec,
            "a": a,
            "b": b,
            "games": int(settings["games"]),
            "seed": int(settings["seed"]),
            "opening": int(settings["opening"]),
        }
        for a, b in pairs
    ]
    done = run_jobs(jobs, int(params["workers"]), f"{game}: tournament", work=play_job,
                    mapper=fan_out if on_cluster else None)  # fmt: skip
    rows, summaries = [], []
    for result in done:
        pairing = relabel(result, labels)
        rows.extend(pairing)
        summaries.append(summarize_pairing(pairing))
    summary = {
        "game": spec,
        "format": "each TD bot vs the opponents",
        "games_per_pairing": int(settings["games"]),
        "seed": int(settings["seed"]),
        "bots": list(bots),
        "baselines": opponents,
        "skipped": skipped,
        "pairings": summaries,
        "standings": standings([*bots, *opponents], summaries),
    }
    with atomic_dir(root / "evaluation" / game) as scratch:
        write_outputs(scratch, rows, summary, root / "metrics" / game / "evaluate-measured.json")
    metrics = {f"{s['spec_a']}.vs.{s['spec_b']}.score": s["score"] for s in summaries}
    write_json(root / "metrics" / game / "evaluate.json", metrics)
    log_stage_run(root, params, game, "td-tournament", metrics)
    return summary


def unavailable(game_spec: str, spec: str) -> str | None:
    """Why an agent spec cannot play here (None when it can)."""
    from agents import make
    from agents.base import AgentError
    from engine import parse_game_spec

    try:
        make(spec, parse_game_spec(game_spec), seed=0)
    except AgentError as error:
        return str(error)
    return None


@flow(name="td-promote")
def promote_flow(root: Path, params: dict, game: str) -> dict[str, Any]:
    """The registry's gate for each long run's version in turn (each faces the production
    version the previous decision left); promotion/<game>.json as the promote stage's."""
    from flows.pipeline.stages.promote import gate_families, production_version, promotion_gate
    from models.registry import model_name

    root = Path(root)
    use_tracking(params, root)
    gate = {**params["promote"], **params[game]["td"].get("promote", {})}
    runs = read_output(root, game, "long/runs.json", "td-long")["runs"]
    name = model_name(game, "td")
    labels, decisions = {}, []
    for run_name in runs:
        run = read_output(root, game, f"long/{run_name}/run.json", "td-long")
        version = str(run["registered"]["version"])
        labels[version] = f"td-long-{run_name}"
        decisions.append(
            promotion_gate(name, version, int(gate["games"]), gate["baseline"], int(gate["seed"]))
        )
    production = production_version(name)
    families = {
        "td": {
            "model": name,
            "production": production,
            "production_label": labels.get(str(production)),
            "decisions": decisions,
        }
    }
    # the dataset chain's families (value MLPs) face the same gate, so the evidence that ranks
    # the game's production bots (models.registry.production_bots) is comparable across families
    families.update(gate_families(root, game, params[game].get("models", {}), gate))
    result = {"game": game, "families": families}
    write_json(root / "promotion" / f"{game}.json", result)
    metrics = {f"{f}.promoted": float(v["production"] is not None) for f, v in families.items()}
    log_stage_run(root, params, game, "td-promote", metrics)
    return result
