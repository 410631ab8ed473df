"""`gridbots stage neat GAME NAME`: one NEAT training case (study 003: territory), every seed.

Export, tournament and promotion of the territory chain are the pipeline's generic stages: this
stage leaves `trained/GAME/NAME/run.json` in the shape they read, with the champion logged and
registered as a `GAME-neat` version; as the train stage, its MLflow ids, registry version and
seconds go to the run record `metrics/GAME/train-NAME-run.json` (stage_io.trained_run), not the
output. A model of GAME that is not a NEAT case, or a game NEAT does
not train on (models.base.check_game), gets one line and exit 2.

A killed stage resumes: every seed checkpoints its populations (JSON) after each generation under
`checkpoints/GAME/NAME/<parameters hash>/seed-N`, outside DVC's outputs, so a rerun with the
same parameters continues where it stopped and other parameters start afresh. With a Dask address
(stage_io.dask_address) every seed is a cluster task (models.neat_track.train_seed): it
trains from that checkpoint on a worker and writes its files into the stage's folder in the shared
data root; its MLflow run is logged here afterwards.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

from prefect import flow

from flows.pipeline.stage_io import (
    StageError,
    atomic_dir,
    fan_out,
    lineage,
    run_flow,
    run_record_path,
    use_tracking,
    write_json,
)
from flows.pipeline.stages.train import tag_runs, write_curve


def model_settings(params: dict, game: str, name: str) -> dict[str, Any]:
    """GAME.models.NAME as the case's settings; StageError (exit 2) when it is not a NEAT model
    or NEAT cannot train on GAME (models.base.check_game)."""
    from models.base import check_game

    settings = params[game]["models"][name]
    family = settings.get("family", "neat")
    if family != "neat":
        raise StageError(
            f"{game}.models.{name} is a {family} model, not a NEAT case: "
            f"gridbots stage train {game} {name}"
        )
    check_game("neat", game)
    return {
        "case": settings.get("case", name),
        "seeds": [int(s) for s in settings.get("seeds", [0])],
        "params": {"workers": int(params.get("workers", 2)), **dict(settings.get("params", {}))},
    }


def checkpoint_dir(root: Path, game: str, name: str, settings: dict[str, Any]) -> Path:
    """Where a model's checkpoints live: one folder per case + parameters (seeds apart)."""
    from models.neat import RESUMABLE

    lineage_params = {k: v for k, v in settings["params"].items() if k not in RESUMABLE}
    key = json.dumps({"case": settings["case"], "params": lineage_params}, sort_keys=True)
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    return Path(root) / "checkpoints" / game / name / digest


def neat_stage(
    root: Path, params: dict, game: str, name: str, dask: str | None = None
) -> dict[str, Any]:
    """The stage: the flow, its seeds on the cluster when it has a Dask address."""
    model_settings(params, game, name)  # refused before any flow starts
    return run_flow(neat_flow, params, dask, root, params, game, name)


@flow(name="neat")
def neat_flow(
    root: Path, params: dict, game: str, name: str, on_cluster: bool = False
) -> dict[str, Any]:
    """trained/GAME/NAME: every seed of one training case, the best seed's champion
    registered; metrics/GAME/train-NAME.json and plots/GAME/NAME.csv."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from models.neat_track import timeless, train_case

    use_tracking(params, root)
    root = Path(root).resolve() if on_cluster else Path(root)  # workers may run elsewhere
    settings = model_settings(params, game, name)
    generations = int(settings["params"].get("generations", 10))
    work = checkpoint_dir(root, game, name, settings)
    with (
        atomic_dir(root / "trained" / game / name) as scratch,
        Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[best]}"),
        ) as bar,
    ):
        tasks = {
            seed: bar.add_task(f"{name} seed {seed}", total=generations, best="")
            for seed in settings["seeds"]
        }

        def progress(seed: int, row: dict[str, float]) -> None:
            bar.update(
                tasks[seed],
                completed=int(row["generation"]) + 1,
                best=f"best {row['best_fitness']:.2f}",
            )

        outcome = train_case(
            settings["case"],
            settings["params"],
            settings["seeds"],
            work,
            scratch,
            experiment=game,
            progress=progress,
            tags={"gridbots.model": name},
            mapper=fan_out if on_cluster else None,
        )
        best = outcome["best"]
        result = best["result"]
        shutil.copyfile(best["onnx"], scratch / "champion.onnx")
        shutil.copyfile(
            scratch / f"seed-{best['seed']}" / "champion.json", scratch / "champion.json"
        )
        per_seed = {
            str(s["seed"]): {
                "history": timeless(s["result"].history),
                "champion_stats": s["result"].champion_stats,
                "parity": s["parity"],
            }
            for s in outcome["seeds"]
        }
        ids = {  # the run record, not the output: they differ on every run (issue 68)
            "run_id": best["run_id"],
            "parent_run_id": outcome["parent_run_id"],
            "version": outcome["version"],
            "seed_runs": {
                str(s["seed"]): {
                    "run_id": s["run_id"],
                    "seconds": s["result"].seconds,
                    "eval_seconds": [row.get("eval_seconds") for row in s["result"].history],
                }
                for s in outcome["seeds"]
            },
        }
        summary = {
            "name": name,
            "case": settings["case"],
            "family": "neat",
            "artifact": "champion.onnx",
            "artifact_kind": "onnx",
            "best_seed": best["seed"],
            "metrics": {"best_fitness": result.best_fitness},
            "params": best["trainer"].params,
            "parity": f"{best['parity']:.3g}",
            "seeds": per_seed,
        }
        write_json(scratch / "run.json", summary)
        write_json(run_record_path(root, game, name), ids)
    tag_runs(
        [s["run_id"] for s in outcome["seeds"]] + [outcome["parent_run_id"]],
        {**lineage(root), "gridbots.stage": f"neat-{game}@{name}"},
    )
    metrics = {
        "best_fitness": result.best_fitness,
        "last_best_fitness": result.history[-1]["best_fitness"],
        "generations": float(len(result.history)),
        "champion_rounds": result.champion_stats["moves"],
        "train_seconds": result.seconds,
    }
    write_json(root / "metrics" / game / f"train-{name}.json", metrics)
    curves = {
        key: [row[key] for row in result.history]
        for key in result.history[0]
        if key.endswith(("best_fitness", "mean_fitness"))
    }
    write_curve(root / "plots" / game / f"{name}.csv", curves)
    return {**summary, **ids}
