"""The train stage of every family: a sweep on MLflow, the best run registered, its files kept.

`GAME.models.KEY` names the family, its params and sweep, and for a family that trains on a
dataset its encoding; a family that learns by playing (TD, NEAT) gets no encoded data and plays
GAME (models.tracking.train either way). A game the family cannot train on, or an entry that
lacks what its family needs, gets one line and exit 2 (models.training_inputs.model_entry).

What DVC keeps (trained/GAME/KEY) is what a rerun of the same inputs writes alike: the best
run's files, its params and metrics, and each configuration's (the sweep's ranking); MLflow's
ids and the registry version go to the run record (stage_io.run_record_path; trained_run reads
both), the clock (seconds, rates: models.base.measured) to `metrics/GAME/train-KEY.json` and
MLflow."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

from prefect import flow, task

from flows.pipeline.params import stage_label
from flows.pipeline.stage_io import (
    RETRIES,
    atomic_dir,
    fan_out,
    lineage,
    run_flow,
    run_record_path,
    use_tracking,
    write_json,
)


def sweep_items(sweep: dict[str, Any]) -> list[str]:
    """params.yaml `sweep: {key: [v1, v2]}` → tracking's `key=v1,v2` strings."""
    items = []
    for key, values in sweep.items():
        values = values if isinstance(values, list) else [values]
        items.append(f"{key}={','.join(str(v) for v in values)}")
    return items


@task(**RETRIES)
def tag_runs(run_ids: list[str], tags: dict[str, str]) -> None:
    from models.tracking import client

    mlflow_client = client()
    for run_id in run_ids:
        for key, value in tags.items():
            mlflow_client.set_tag(run_id, key, value)


def _as_tasks(title: str, jobs: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Each sweep configuration a nested MLflow run (models.tracking.train_config) on
    whichever worker, or local pool process, is free; records in job order as they come."""
    from models.tracking import train_config

    return fan_out(train_config, jobs, title)


def train_flow(root: Path, params: dict, game: str, name: str, dask: str | None = None):
    """The train stage; with a Dask address (flows.pipeline.stage_io.dask_address) the sweep's
    configurations are cluster tasks; without one, a played family's sweep trains
    `sweep_processes` configurations side by side in local processes, any other sweep one
    after another here (each training already uses both cores). An entry its family cannot
    train is refused before any flow."""
    from agents.onnx.runtime import process_pool

    settings = model_settings(params, game, name)
    processes = sweep_processes(params, settings)
    pool = process_pool if processes > 1 else None
    args = (root, params, game, name)
    return run_flow(_train, params, dask, *args, processes=processes, pool=pool)


def sweep_processes(params: dict, settings: dict[str, Any]) -> int:
    """How many configurations of a sweep train side by side without a cluster. A family that
    learns by playing trains one configuration on one core (TD: numba, one thread; the full
    profile's grid is 432 of them), so its sweep takes the profile's `workers` processes,
    divided by the threads one configuration already uses (the family's own `workers`: NEAT's
    fitness games), at most one per configuration. A dataset family's training uses every core
    itself: one."""
    from models.base import family, learns_by_playing
    from models.training_inputs import sweep_grid

    if not learns_by_playing(family(settings["family"])) or not settings["sweep"]:
        return 1
    configs = len(sweep_grid(sweep_items(settings["sweep"])))
    threads = max(1, int(settings["params"].get("workers", 1)))
    return max(1, min(configs, int(params.get("workers", 1)) // threads))


def model_settings(params: dict, game: str, name: str) -> dict[str, Any]:
    """GAME.models.NAME checked (models.training_inputs.model_entry: StageError-like exit 2),
    with the profile's `workers` for a family that takes them and is not told otherwise."""
    from models.base import family
    from models.training_inputs import model_entry

    settings = model_entry(game, name, params[game]["models"][name])
    if "workers" in family(settings["family"]).DEFAULTS and "workers" in params:
        settings["params"].setdefault("workers", int(params["workers"]))
    return settings


def _timeless(values: dict[str, Any]) -> dict[str, Any]:
    from models.base import measured

    return {k: v for k, v in values.items() if not measured(k)}


@flow(name="train")
def _train(root: Path, params: dict, game: str, name: str, on_cluster: bool = False) -> dict:
    """A sweep from params.yaml on MLflow; the best run registered; its files kept. With
    `on_cluster` its configurations are tasks (a cluster's, or the local pool's: run_flow)."""
    from models.base import family, learns_by_playing
    from models.sweep_state import SWEEP_STATE
    from models.tracking import train

    use_tracking(params, root)
    settings = model_settings(params, game, name)
    root = Path(root).resolve() if on_cluster else Path(root)  # workers may run elsewhere
    encoding = settings["encoding"]
    data = root / "encoded" / game / f"{encoding}.npz" if encoding else None
    # outside DVC's outputs and kept until the stage succeeds: a killed sweep resumes there at
    # the configuration in flight (models.tracking keeps what each finished one left, and a
    # family that learns by playing its checkpoints under `resume/`)
    work = root / "checkpoints" / game / f"train-{name}"
    if not settings["sweep"]:  # one run: nothing to resume or copy; the record of a run a kill
        for path in work.glob("*"):  # interrupted stays, so that it is closed (KILLED)
            if path.name not in (SWEEP_STATE, "resume"):
                shutil.rmtree(path) if path.is_dir() else path.unlink()
    title = f"{game}: {name} configurations"
    with atomic_dir(root / "trained" / game / name) as scratch:
        outcome = train(
            data,
            settings["family"],
            settings["params"],
            sweep_items(settings["sweep"]),
            experiment=game,
            register=True,
            out_dir=work,
            expect_game=game,
            map_configs=partial(_as_tasks, title) if on_cluster else None,
            game=params[game].get("spec", game),
        )
        best = outcome.best
        artifact = Path(best.result.artifact)
        for path in artifact.parent.iterdir():  # the curve's PNG names its run: not kept
            if path.is_file() and path.name != "training_curve.png":
                shutil.copy2(path, scratch / path.name)
        run_ids = [r.run_id for r in outcome.runs]
        if outcome.parent_run_id:
            run_ids.append(outcome.parent_run_id)
        tag_runs(run_ids, {**lineage(root), "gridbots.stage": stage_label("train", game, name)})
        ids = {  # the run record, not the output: they differ on every run (issue 68)
            "run_id": best.run_id,
            "parent_run_id": outcome.parent_run_id,
            "version": outcome.version,
        }
        summary = {
            "name": name,
            "family": best.result.family,
            "encoding": best.result.encoding,
            "artifact": artifact.name,
            "artifact_kind": best.result.artifact_kind,
            "objective": {"metric": outcome.metric, "direction": outcome.direction},
            "metrics": _timeless(best.result.metrics),
            "params": best.params,
            "parity": best.parity,
            "configurations": len(outcome.runs),
            "best": outcome.labels[outcome.runs.index(best)] if outcome.labels else "defaults",
            "sweep": [
                {"label": label, "params": run.params,
                 "metrics": _timeless(run.result.metrics),
                 "history": _timeless(run.result.history)}
                for label, run in zip(outcome.labels, outcome.runs, strict=False)
            ],
        }  # fmt: skip
        write_json(scratch / "run.json", summary)
        write_json(run_record_path(root, game, name), ids)
    shutil.rmtree(work, ignore_errors=True)
    metrics = {k: float(v) for k, v in best.result.metrics.items()}
    write_json(root / "metrics" / game / f"train-{name}.json", metrics)
    history = _timeless(best.result.history)
    module = family(settings["family"])
    points = module.curves(history) if learns_by_playing(module) else None
    write_curve(root / "plots" / game / f"{name}.csv", history, points)
    return {**summary, **ids}


def write_curve(
    path: Path, history: dict[str, list[float]], points: dict[str, list] | None = None
) -> None:
    """Per-epoch curves as CSV (dvc plots reads it); one `step` row when there is no curve.
    `points` (a played family's `curves(history)`: name → (step, value)) puts each value at
    its own step (a TD curve point every N games, its chunk reports every 1,000)."""
    if points is None:
        points = {k: list(enumerate(v, start=1)) for k, v in history.items()}
    keys = sorted(k for k, v in points.items() if v)
    rows: dict[float, dict[str, float]] = {}
    for key in keys:
        for step, value in points[key]:
            rows.setdefault(float(step), {})[key] = float(value)
    names = [re.sub(r"[,=]", "-", key) for key in keys]  # a CSV header of MLflow-like names
    lines = [",".join(["step", *names])] if keys else ["step,none"]
    for step in sorted(rows):
        cells = [f"{rows[step][k]:.6g}" if k in rows[step] else "" for k in keys]
        lines.append(",".join([f"{step:g}", *cells]))
    if not keys:
        lines.append("1,0")
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.tmp")
    temp.write_text("\n".join(lines) + "\n")
    os.replace(temp, path)
