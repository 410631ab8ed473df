"""Training runs on MLflow: one run per configuration, a sweep as a parent with nested runs.

Each run records every parameter, the dataset (path, file hash, the generation manifest's
content hash when the encoded file carries it; as MLflow inputs, models.run_inputs: the encoded
file and the validated dataset folders it came from), per-epoch metrics as the family reports
them through its `progress` callback, the final held-out metrics (`final.<name>`), the model
artifact (ONNX through `mlflow.onnx.log_model` with a signature read from the graph; JSON and
CRFsuite files as plain artifacts under `model/`) and a training-curve PNG. A sweep's parent run
tags the best child and the metric that chose it, so `--register` registers the child that
earned it.

Where runs are written (tracking URI, experiments) and how a model file is logged into one is
models.mlflow_store; this module decides what a run holds. MLflow is imported lazily (it takes
seconds); no TensorFlow here.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from models import sweep_state as kept  # a killed training's record in its work folder
from models.base import ARTIFACT_KINDS, ModelError, TrainingResult, family, learns_by_playing
from models.mlflow_store import (  # noqa: F401 (re-exported: callers import them from here)
    DEFAULT_URI,
    EXPERIMENT_KIND,
    UI_VIEW,
    TrainedRun,
    artifact_root,
    client,
    experiment_id,
    experiment_links,
    log_artifact,
    onnx_signature,
    parity_of,
    read_onnx,
    sidecars,
    tracking_uri,
    ui_url,
)
from models.run_inputs import encoded_inputs, log_inputs
from models.training_inputs import (  # noqa: F401 (re-exported: callers import them from here)
    OBJECTIVES,
    coerce,
    file_hash,
    load_dataset,
    objective,
    parse_assignments,
    sweep_grid,
)
from models.training_plots import curve_png


# ---- runs --------------------------------------------------------------------------------------
@dataclass
class TrainOutcome:
    experiment_id: str
    runs: list[TrainedRun]
    best: TrainedRun
    metric: str
    direction: str
    parent_run_id: str | None = None
    version: str | None = None  # registered version, with --register
    notes: list[str] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)  # each run's configuration, as `runs`


# ---- the runs of every family -------------------------------------------------------------------
# Every MLflow run gridbots writes is opened by `family_run` (or, for a run that outlives its
# process, `open_run`) and its model logged by `log_model`,
# whether the family trains here (`train`: every family, a dataset's or one that learns by
# playing, its sweep a parent with nested runs) or elsewhere and is logged afterwards from what
# it returned (`log_record`, `log_records`, `log_played`: study 002's configurations, which train
# in worker processes that open no run, or a script's network); `register_trained` is the one
# way a logged model becomes a registry version.
def log_params(params: dict[str, Any]) -> None:
    """A configuration's parameters into the active run (anything but text as JSON)."""
    import mlflow

    mlflow.log_params(
        {k: json.dumps(v) if not isinstance(v, str) else v for k, v in params.items()}
    )


def metric_name(key: str) -> str:
    """MLflow's metric names allow no `=` or `,`: `score_vs_alphabeta:depth-3`."""
    return re.sub(r"[^A-Za-z0-9_.\- /:]", "-", key)


def finite(metrics: dict[str, Any]) -> dict[str, float]:
    """The numbers among `metrics` MLflow can hold, under names it accepts."""
    out = {}
    for key, value in metrics.items():
        try:
            number = float(value)
        except (TypeError, ValueError):
            continue
        if math.isfinite(number):
            out[metric_name(key)] = number
    return out


def log_curves(curves: dict[str, Sequence[tuple[int, float]]]) -> None:
    """Per-step metrics into the active run: name → (step, value) pairs."""
    import mlflow

    for key, points in curves.items():
        for step, value in points:
            if math.isfinite(float(value)):
                mlflow.log_metric(metric_name(key), float(value), step=int(step))


@contextmanager
def family_run(
    experiment: str,
    name: str,
    family_name: str,
    game: str | None = None,
    *,
    params: dict[str, Any] | None = None,
    tags: dict[str, str] | None = None,
    inputs: Sequence[Any] = (),
    nested: bool = False,
) -> Iterator[Any]:
    """An MLflow run of `family_name` (nested in the active run with `nested`) in experiment
    `experiment` (made when missing), tagged with its family and game, its parameters and
    MLflow inputs logged; yields the run."""
    import mlflow

    mlflow_client = client()
    exp = experiment_id(mlflow_client, experiment)
    with mlflow.start_run(experiment_id=exp, run_name=name, nested=nested) as run:
        known = {"gridbots.family": family_name, **({"gridbots.game": game} if game else {})}
        mlflow.set_tags({**known, **(tags or {})})
        if params:
            log_params(params)
        if inputs:
            mlflow_client.log_inputs(run.info.run_id, datasets=list(inputs))
        yield run


def open_run(
    experiment: str,
    name: str,
    family_name: str | None,
    game: str | None = None,
    *,
    tags: dict[str, str] | None = None,
    params: dict[str, Any] | None = None,
    parent_run_id: str | None = None,
) -> str:
    """A run that outlives the process that opens it (a PlayerZero loop's, which later processes
    resume, and each generation's, nested in it by `parent_run_id`): created RUNNING through the
    client, tagged and given its parameters like `family_run`'s, ended by whoever finishes it
    (`client().set_terminated`); its id. A stage that trains nothing (evaluate, promote) opens
    its run here too, with no family."""
    mlflow_client = client()
    known = {"gridbots.family": family_name} if family_name else {}
    known.update({"gridbots.game": game} if game else {})
    parent = {"mlflow.parentRunId": parent_run_id} if parent_run_id else {}
    run = mlflow_client.create_run(
        experiment_id(mlflow_client, experiment), run_name=name,
        tags={**known, **parent, **(tags or {})},
    )  # fmt: skip
    for key, value in (params or {}).items():
        mlflow_client.log_param(run.info.run_id, key, value if isinstance(value, str) else
                                json.dumps(value))  # fmt: skip
    return run.info.run_id


def log_model(
    result: TrainingResult, dataset: dict[str, str], parity: str = "n/a", run_id: str | None = None
) -> TrainedRun:
    """`result`'s model file as the model of the active run (or of run `run_id`, reopened),
    tagged with its artifact's metadata, the model URI and the export parity; the TrainedRun
    `register_trained` registers."""
    import mlflow

    if run_id is not None and (mlflow.active_run() is None or
                               mlflow.active_run().info.run_id != run_id):  # fmt: skip
        with mlflow.start_run(run_id=run_id):
            return log_model(result, dataset, parity)
    model_uri, tags = log_artifact(result)
    tags.update({"gridbots.model_uri": model_uri, "export.parity_max_abs_diff": parity})
    mlflow.set_tags(tags)
    run_id = mlflow.active_run().info.run_id
    return TrainedRun(run_id, dict(result.params), result, model_uri, dataset, parity)


def register_trained(
    run: TrainedRun, play_spec: str | None = None, mlflow_client: Any = None
) -> str:
    """A logged model as a new version of `<game>-<family>` (models.registry.register_run)."""
    from models.registry import register_run

    return register_run(run, mlflow_client or client(), play_spec)


def log_record(
    record: dict[str, Any],
    family_name: str,
    game: str,
    curves: dict[str, Sequence[tuple[int, float]]],
    inputs: Sequence[Any] = (),
) -> str:
    """A configuration trained elsewhere (`record`: label, params, metrics and the model file
    as `artifact`, which may be missing) as the active run's content; its run id."""
    import mlflow

    run_id = mlflow.active_run().info.run_id
    log_params(record["params"])
    mlflow.set_tags(
        {"gridbots.family": family_name, "gridbots.game": game, "gridbots.config": record["label"]}
    )
    if inputs:
        client().log_inputs(run_id, datasets=list(inputs))
    log_curves(curves)
    mlflow.log_metrics({f"final.{k}": v for k, v in finite(record["metrics"]).items()})
    return run_id


def _played(family_name: str, game: str, record: dict[str, Any]) -> tuple[dict, list]:
    """(curves, MLflow inputs) of a record of a family that learns by playing (models.base)."""
    module = family(family_name)
    return module.curves(record.get("history") or {}), module.inputs(game, record["params"])


def log_records(
    experiment: str,
    name: str,
    family_name: str,
    game: str,
    records: Sequence[dict[str, Any]],
    summary: dict[str, Any],
    files: Sequence[Path] = (),
) -> dict[str, Any]:
    """A sweep of a family that learns by playing, trained elsewhere: a parent run `name` (the
    summary's numbers, `files`) with one nested run per record (label, params, metrics,
    history, the model file as `artifact` where kept, logged under `model/`); the parent names
    `summary["best"]`'s run."""
    import mlflow

    ids: dict[str, str] = {}
    tags = {"gridbots.size": str(len(records))}
    with family_run(experiment, name, family_name, game, tags=tags) as parent:
        mlflow.log_metrics(finite({k: v for k, v in summary.items() if not isinstance(v, dict)}))
        for path in files:
            if Path(path).is_file():
                mlflow.log_artifact(str(path))
        for record in records:
            curves, inputs = _played(family_name, game, record)
            with family_run(experiment, record["label"], family_name, game, nested=True):
                ids[record["label"]] = log_record(record, family_name, game, curves, inputs)
                artifact = Path(record.get("artifact") or "")
                if artifact.is_file():
                    mlflow.log_artifact(str(artifact), artifact_path="model")
        if summary.get("best"):
            best = str(summary["best"])
            mlflow.set_tags({"best.config": best, "best.run_id": ids.get(best, "")})
    return {"parent_run_id": parent.info.run_id, "runs": ids,
            "experiment_id": parent.info.experiment_id}  # fmt: skip


def log_played(
    experiment: str, name: str, family_name: str, game: str, record: dict[str, Any]
) -> dict[str, Any]:
    """One configuration of a family that learns by playing, trained elsewhere, as a run with
    its model (`record["artifact"]`, ONNX), registered as a new `<game>-<family>` version."""
    module = family(family_name)
    curves, inputs = _played(family_name, game, record)
    source = module.source(game, record["params"])
    with family_run(experiment, name, family_name, game):
        log_record(record, family_name, game, curves, inputs)
        result = TrainingResult(
            family_name,
            game,
            source["dataset.encoding"],
            record["params"],
            Path(record["artifact"]),
            "onnx",
            metrics=finite(record["metrics"]),
        )
        parity = str(record["metrics"].get("parity_max_abs_diff", "n/a"))
        trained = log_model(result, source, parity)
    version = register_trained(trained)
    return {"run_id": trained.run_id, "model_uri": trained.model_uri, "version": version}


def _run_one(
    module: Any,
    family_name: str,
    arrays: dict,
    meta: dict,
    params: dict[str, Any],
    dataset: dict[str, str],
    out_dir: Path,
    work: Path | None = None,
) -> TrainedRun:
    """Trains inside the active MLflow run and logs everything about it. A family that learns
    by playing (`learn`: no arrays) names its setting through its `source` and `inputs`, and
    keeps its checkpoints in `work` so a killed run resumes."""
    import mlflow

    run_id = mlflow.active_run().info.run_id
    played = learns_by_playing(module)
    if played:
        dataset = module.source(dataset["game"], params)
    log_params(params)
    if not played:  # a played family's after it trained: the game its network plays
        mlflow.log_params({**dataset, "family": family_name})
    mlflow.set_tags({"gridbots.family": family_name, "gridbots.game": dataset["game"]})
    if played:
        setting = list(module.inputs(dataset["game"], params))
        if setting:
            client().log_inputs(run_id, datasets=setting)
    else:
        path, digest = Path(dataset["dataset.path"]), dataset["dataset.sha256"]
        log_inputs(client(), run_id, encoded_inputs(path, meta, digest))
    curves: dict[str, list[float]] = {}

    def progress(epoch: int, metrics: dict[str, float]) -> None:
        clean = {k: float(v) for k, v in metrics.items() if math.isfinite(float(v))}
        for key, value in clean.items():
            curves.setdefault(key, []).append(value)
        mlflow.log_metrics({metric_name(k): v for k, v in clean.items()}, step=int(epoch))

    if played:
        result = module.learn(dataset["game"], params, out_dir, work, progress)
        dataset = {**dataset, "game": result.game}  # what its network plays (a map's size)
        result.metrics = finite(result.metrics)  # MLflow's names (a curve opponent's spec)
        mlflow.log_params({**dataset, "family": family_name})
    else:
        result = module.train(arrays, meta, params, out_dir, progress)
    if not isinstance(result, TrainingResult):
        raise ModelError(f"{family_name}.train returned {type(result).__name__}, not a result")
    history = curves or {k: list(v) for k, v in result.history.items()}
    if not curves:  # the family kept its curves without reporting them: log them now
        for key, values in history.items():
            for step, value in enumerate(values):
                mlflow.log_metric(metric_name(key), float(value), step=step)
    finals = {k: float(v) for k, v in result.metrics.items()}
    mlflow.log_metrics({f"final.{k}": v for k, v in finite(finals).items()})
    trained = log_model(result, dataset, parity_of(result))  # parity now: a scratch report
    for extra in result.extra_artifacts:
        if Path(extra).is_file() and Path(extra) not in sidecars(result):
            mlflow.log_artifact(str(extra), artifact_path="extra")
    png = out_dir / "training_curve.png"
    curve_png(history, finals, png, f"{family_name} on {dataset['game']} ({run_id[:8]})")
    mlflow.log_artifact(str(png), artifact_path="plots")
    trained.params = params
    return trained


def _label(config: dict[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in config.items()) or "defaults"


def _work(base: Path, module: Any, params: dict[str, Any]) -> Path | None:
    """Where a family that learns by playing keeps a configuration's checkpoints: one folder
    per configuration under the training's work folder, so a rerun resumes it."""
    if not learns_by_playing(module):
        return None
    import hashlib

    text = json.dumps(params, sort_keys=True, default=str)
    return Path(base) / "resume" / hashlib.sha256(text.encode()).hexdigest()[:16]


def training_data(
    module: Any, family_name: str, data: Path | None, game: str | None
) -> tuple[dict, dict, dict[str, str]]:
    """(arrays, meta, dataset) of an encoded file (models.training_inputs.load_dataset), or for
    a family that learns by playing, no arrays and the game it plays (it needs no data)."""
    if learns_by_playing(module) and data is None:
        if not game:
            raise ModelError(f"{family_name} learns by playing: name the game it plays")
        return {}, {}, {"game": game}
    return load_dataset(Path(data or ""), module, family_name)


def train(
    data: Path | None,
    family_name: str,
    params: dict[str, str] | None = None,
    sweep: Sequence[str] = (),
    experiment: str | None = None,
    register: bool = False,
    out_dir: Path | None = None,
    echo: Callable[[str], None] | None = None,
    expect_game: str | None = None,
    metric: str | None = None,
    map_configs: Callable[[list[dict[str, Any]]], Iterable[dict[str, Any]]] | None = None,
    game: str | None = None,
) -> TrainOutcome:
    """Trains one configuration (or a sweep's grid) on an encoded file, logged to MLflow; a
    family that learns by playing trains on no file (`data` None) by playing `game`.

    `expect_game` (a game name) guards against training on another game's dataset; `metric`
    (`NAME[:min|max]`) ranks a sweep instead of the default objective. `map_configs` trains a
    sweep's unfinished configurations elsewhere (a cluster's workers, a stage's local process
    pool): it gets `train_config` jobs and yields their records in job order, each kept as it
    arrives; without it they train here, one after another."""
    module = family(family_name)
    given = dict(params or {})
    grid = sweep_grid(sweep) if sweep else [{}]
    clash = sorted(set(given) & set(grid[0]))
    if clash:
        raise ModelError(f"{clash} given both as --param and --sweep")
    configs = [coerce(family_name, module.DEFAULTS, {**given, **g}) for g in grid]
    arrays, meta, dataset = training_data(module, family_name, data, game)
    if learns_by_playing(module):
        dataset = module.source(dataset["game"], configs[0])
    from engine import parse_game_spec

    game_name = parse_game_spec(dataset["game"]).name
    if expect_game and expect_game != game_name:
        raise ModelError(f"{data} holds {game_name} data, not {expect_game}")
    import mlflow

    mlflow_client = client()
    exp_id = experiment_id(mlflow_client, experiment or game_name)
    say = echo or (lambda _text: None)
    runs: list[TrainedRun] = []
    with kept.work_folder(out_dir) as folder:
        base = Path(folder)
        if not sweep:
            if out_dir:  # a run a kill left RUNNING here is closed, then trained again
                kept.close_interrupted(mlflow_client, base, exp_id)
            run_name, tags = f"{game_name}-{family_name}", kept.work_tag(base)
            with mlflow.start_run(experiment_id=exp_id, run_name=run_name, tags=tags) as single:
                base.mkdir(parents=True, exist_ok=True)
                if out_dir:
                    kept.save_state(base, {"key": None, "running": {"0": single.info.run_id}})
                work = _work(base, module, configs[0])
                runs.append(
                    _run_one(module, family_name, arrays, meta, configs[0], dataset, base, work)
                )
            if out_dir:
                kept.save_state(base, {"key": None, "running": {}, "finished": True})
            best = runs[0]
            metric, direction = (
                objective(module, best.result.metrics, metric)
                if best.result.metrics or metric
                else ("", "")
            )
            best.objective = best.result.metrics.get(metric.split(">")[0])
            outcome = TrainOutcome(exp_id, runs, best, metric, direction, labels=[_label({})])
        else:
            name = f"{game_name}-{family_name}-sweep"
            state = kept.sweep_state(base, family_name, dataset, configs) if out_dir else None
            resumed = state["parent"] if state else None
            kept.close_orphans(mlflow_client, exp_id, base, keep=resumed)
            fresh = {"experiment_id": exp_id, "run_name": name, "tags": kept.work_tag(base)}
            start = {"run_id": resumed} if resumed else fresh
            with mlflow.start_run(**start) as parent:
                if not resumed:
                    mlflow.log_params({**dataset, "family": family_name})
                    if not learns_by_playing(module):
                        path, digest = Path(dataset["dataset.path"]), dataset["dataset.sha256"]
                        log_inputs(
                            mlflow_client, parent.info.run_id, encoded_inputs(path, meta, digest)
                        )
                    mlflow.set_tags(
                        {"gridbots.sweep": json.dumps(list(sweep)), "gridbots.size": len(grid)}
                    )
                if state is not None:
                    state["parent"] = parent.info.run_id
                    kept.save_state(base, state)
                jobs = [
                    {"data": str(Path(data).resolve()) if data else None, "game": game,
                     "family": family_name, "params": params_i, "label": _label(config),
                     "experiment_id": exp_id, "parent": parent.info.run_id,
                     "dir": str(base / f"config-{index:03d}"), "index": index,
                     "work": str(_work(base.resolve(), module, params_i) or "") or None}
                    for index, (config, params_i) in enumerate(zip(grid, configs, strict=True))
                    if not (state and str(index) in state["done"])
                ] if map_configs else []  # fmt: skip
                remote: dict[int, dict[str, Any]] = {}
                for job, record in zip(jobs, map_configs(jobs) if jobs else [], strict=True):
                    remote[job["index"]] = record
                    if state is not None:  # kept as it arrives: a kill loses the rest only
                        state["done"][str(job["index"])] = record
                        kept.save_state(base, state)
                for index, (config, params_i) in enumerate(zip(grid, configs, strict=True)):
                    key = str(index)
                    if map_configs:  # trained elsewhere, now or before a kill
                        runs.append(_restore(remote.get(index) or state["done"][key]))
                        continue
                    if state and key in state["done"]:  # finished before a kill: not again
                        say(f"[{index + 1}/{len(grid)}] {_label(config)}: done before")
                        runs.append(_restore(state["done"][key]))
                        continue
                    if state and key in state["running"]:  # in flight at the kill
                        kept.close_stale(mlflow_client, state["running"][key])
                    say(f"[{index + 1}/{len(grid)}] {_label(config)}")
                    child_dir = base / f"config-{index:03d}"
                    shutil.rmtree(child_dir, ignore_errors=True)  # a killed attempt's files
                    child_dir.mkdir(parents=True, exist_ok=True)
                    with mlflow.start_run(
                        experiment_id=exp_id, run_name=_label(config), nested=True
                    ) as child:
                        if state is not None:
                            state["running"][key] = child.info.run_id
                            kept.save_state(base, state)
                        mlflow.set_tag("gridbots.sweep_config", _label(config))
                        work = _work(base, module, params_i)
                        runs.append(
                            _run_one(
                                module, family_name, arrays, meta, params_i, dataset, child_dir,
                                work,
                            )
                        )  # fmt: skip
                    if state is not None:
                        state["done"][key] = _record(runs[-1])
                        kept.save_state(base, state)
                metric, direction = objective(module, runs[0].result.metrics, metric)
                best = _choose_best(runs, metric, direction)
                mlflow.set_tags(
                    {
                        "best.run_id": best.run_id,
                        "best.metric": metric,
                        "best.direction": direction,
                        "best.value": str(best.objective),
                        "best.config": _label(grid[runs.index(best)]),
                    }
                )
                if best.objective is not None and math.isfinite(best.objective):
                    mlflow.log_metric(metric_name(f"best.{metric}"), best.objective)
            outcome = TrainOutcome(exp_id, runs, best, metric, direction, parent.info.run_id,
                                   labels=[_label(config) for config in grid])  # fmt: skip
            if state is not None:
                kept.save_state(base, {**state, "finished": True})
    if register:
        outcome.version = register_trained(best, mlflow_client=mlflow_client)
    return outcome


def train_config(job: dict[str, Any]) -> dict[str, Any]:
    """One sweep configuration as a nested run of `job["parent"]`, in any process that reaches
    the tracking server and `job["data"]` (a cluster worker); its record for `_restore`. Runs of
    this configuration an earlier attempt left RUNNING under the same parent (a worker killed
    mid-run, even between the run's creation and anything it wrote) are closed as KILLED first,
    so a retry on another worker leaves no run RUNNING. The configuration is a tag the run is
    created with, so no kill can leave a run that does not name it."""
    import socket

    import mlflow

    module = family(job["family"])
    data = Path(job["data"]) if job.get("data") else None
    arrays, meta, dataset = training_data(module, job["family"], data, job.get("game"))
    folder, mlflow_client = Path(job["dir"]), client()
    parent = job["parent"]
    for earlier in mlflow_client.search_runs(
        [job["experiment_id"]],
        f"tags.`mlflow.parentRunId` = '{parent}' and attributes.status = 'RUNNING'",
    ):
        if earlier.data.tags.get("gridbots.sweep_config") == job["label"]:
            kept.close_stale(mlflow_client, earlier.info.run_id)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    tags = {
        "gridbots.worker": f"{socket.gethostname()}:{os.getpid()}",  # which machine
        "gridbots.sweep_config": job["label"],
    }
    with mlflow.start_run(
        experiment_id=job["experiment_id"],
        run_name=job["label"],
        parent_run_id=parent,
        tags=tags,
    ):
        work = Path(job["work"]) if job.get("work") else None
        trained = _run_one(
            module, job["family"], arrays, meta, job["params"], dataset, folder, work
        )
    return _record(trained)


# ---- a killed sweep resumes (models/sweep_state.py keeps its record) ------------------------
def _record(run: TrainedRun) -> dict[str, Any]:
    r = run.result
    result = {**r.__dict__, "artifact": str(r.artifact),
              "extra_artifacts": [str(p) for p in r.extra_artifacts]}  # fmt: skip
    return {"run_id": run.run_id, "params": run.params, "model_uri": run.model_uri,
            "dataset": run.dataset, "parity": run.parity, "result": result}  # fmt: skip


def _restore(saved: dict[str, Any]) -> TrainedRun:
    r = dict(saved["result"])
    r["artifact"], r["extra_artifacts"] = (
        Path(r["artifact"]),
        [Path(p) for p in r["extra_artifacts"]],
    )
    fields = {k: v for k, v in saved.items() if k != "result"}
    return TrainedRun(result=TrainingResult(**r), **fields)


def _choose_best(runs: list[TrainedRun], metric: str, direction: str) -> TrainedRun:
    """The run with the best final `metric` (runs without it never win); `a>b` ranks by `a`,
    then `b` among equals (models.base: a family's OBJECTIVE)."""
    sign = 1.0 if direction == "min" else -1.0
    names = metric.split(">")
    keys: dict[int, tuple[float, ...]] = {}
    for index, run in enumerate(runs):
        values = [run.result.metrics.get(name) for name in names]
        run.objective = float(values[0]) if values[0] is not None else None
        if all(v is not None and math.isfinite(float(v)) for v in values):
            keys[index] = tuple(sign * float(v) for v in values)
    if not keys:
        raise ModelError(f"no run of the sweep reported {metric!r}; cannot choose the best")
    return runs[min(keys, key=lambda i: keys[i])]


def fetch_run_artifact(run_id: str, out: Path) -> tuple[Path, dict[str, str]]:
    """Copies a training run's model file (a sweep's: its best child's) to OUT/RUN_ID/; returns
    the file and what the run recorded about it (kind, metadata, parity, model URI)."""

    import mlflow
    from mlflow.exceptions import MlflowException

    mlflow_client = client()
    try:
        run = mlflow_client.get_run(run_id)
    except MlflowException:
        raise ModelError(f"no MLflow run {run_id!r} at {tracking_uri()}") from None
    tags = run.data.tags
    if "gridbots.model_uri" not in tags and tags.get("best.run_id"):
        run = mlflow_client.get_run(tags["best.run_id"])
        tags = run.data.tags
    if "gridbots.model_uri" not in tags:
        raise ModelError(f"run {run_id} logged no gridbots model")
    kind = tags.get("artifact.kind", "onnx")
    target = Path(out) / run.info.run_id
    with tempfile.TemporaryDirectory(prefix="gridbots-export-") as scratch:
        folder = Path(
            mlflow.artifacts.download_artifacts(
                artifact_uri=tags["gridbots.model_uri"], dst_path=scratch
            )
        )
        found = sorted(folder.rglob(f"*{ARTIFACT_KINDS[kind]}"))
        if not found:
            raise ModelError(f"run {run.info.run_id} holds no {ARTIFACT_KINDS[kind]} file")
        target.mkdir(parents=True, exist_ok=True)
        name = tags.get("artifact.file") or found[0].name
        path = target / name
        shutil.copyfile(found[0], path)
        for sidecar in found[0].parent.glob(f"{found[0].name}.*"):
            shutil.copyfile(sidecar, target / (name + sidecar.name[len(found[0].name) :]))
    if kind == "onnx":
        read_onnx(path)  # a corrupt file is named here, not where it is next used
    info = {k: v for k, v in tags.items() if k.startswith(("artifact.", "export.", "gridbots."))}
    info["run_id"] = run.info.run_id
    return path, info
