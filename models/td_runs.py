"""TD configurations as MLflow runs: a sweep is a parent run with one nested run per
configuration (parameters, final metrics, the training curve by games played, the ONNX file);
a long run is registered as a version of `<game>-td` with its evidence, like every family.

TD learners train by playing, so the run's "dataset" is the training setting itself
(self-play, or the opponent spec), recorded where other families record their data's hashes.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from models.base import TrainingResult


def metric_name(key: str) -> str:
    """MLflow's metric names allow no `=` or `,`: `score_vs_alphabeta:depth-3`."""
    return re.sub(r"[^A-Za-z0-9_.\- /:]", "-", key)


def _clean(metrics: dict[str, Any]) -> dict[str, float]:
    out = {}
    for key, value in metrics.items():
        try:
            number = float(value)
        except (TypeError, ValueError):
            continue
        if math.isfinite(number):
            out[metric_name(key)] = number
    return out


def training_source(game: str, params: dict[str, Any]) -> dict[str, str]:
    """What stands for the dataset of a run that learned by playing."""
    opponent = params.get("opponent", "self")
    return {
        "game": game,
        "dataset.path": f"{'self-play' if opponent == 'self' else 'play against ' + opponent}",
        "dataset.sha256": "none (trained by playing)",
        "dataset.manifest_hash": "none (trained by playing)",
        "dataset.encoding": "seat-observation",
        "dataset.rows": str(params.get("games", "?")),
    }


def played(game: str, params: dict[str, Any]) -> Any:
    """The MLflow input of a TD run: its self-play or its opponent, with games and seed."""
    from models.run_inputs import played_input

    opponent = str(params.get("opponent", "self"))
    setting = {"game": game, "opponent": opponent, "games": params.get("games"),
               "seed": params.get("seed"), "encoding": "seat-observation"}  # fmt: skip
    if opponent == "self":
        return played_input(f"{game} self-play", "self-play", setting)
    return played_input(f"{game} vs {opponent}", "opponent", setting)


def log_child(entry: dict[str, Any], game: str, log_model: bool = False) -> tuple[str, str]:
    """Logs one configuration into the active run; (run id, model URI)."""
    import mlflow

    from models.tracking import client

    params = entry["params"]
    mlflow.log_params(
        {k: json.dumps(v) if not isinstance(v, str) else v for k, v in params.items()}
    )
    mlflow.set_tags(
        {"gridbots.family": "td", "gridbots.game": game, "gridbots.config": entry["label"]}
    )
    client().log_inputs(mlflow.active_run().info.run_id, datasets=[played(game, params)])
    history = entry.get("history", {})
    chunks, curve = history.get("games", []), history.get("curve_games", [])
    for key, values in history.items():
        if key in ("games", "curve_games"):
            continue
        steps = curve if key.startswith("score") else chunks  # curve points vs chunk reports
        for step, value in zip(steps, values, strict=False):
            if math.isfinite(float(value)):
                mlflow.log_metric(metric_name(key), float(value), step=int(step))
    mlflow.log_metrics({f"final.{k}": v for k, v in _clean(entry["metrics"]).items()})
    artifact = Path(entry["artifact"])
    run_id = mlflow.active_run().info.run_id
    parity = entry["metrics"].get("parity_max_abs_diff", "n/a")
    if log_model:
        from models.tracking import log_artifact

        result = TrainingResult("td", game, "seat-observation", params, artifact, "onnx")
        model_uri, tags = log_artifact(result)
        mlflow.set_tags(
            {
                **tags,
                "gridbots.model_uri": model_uri,
                "export.parity_max_abs_diff": str(parity),
            }
        )
        return run_id, model_uri
    if artifact.is_file():
        mlflow.log_artifact(str(artifact), artifact_path="model")
    return run_id, f"runs:/{run_id}/model"


def log_sweep(
    name: str,
    game: str,
    entries: Sequence[dict[str, Any]],
    summary: dict[str, Any],
    experiment: str | None = None,
    files: Sequence[Path] = (),
) -> dict[str, Any]:
    """A parent run `name` with one nested run per entry; returns run ids by label."""
    import mlflow

    from models.tracking import client, experiment_id

    mlflow_client = client()
    exp = experiment_id(mlflow_client, experiment or game)
    ids: dict[str, str] = {}
    with mlflow.start_run(experiment_id=exp, run_name=name) as parent:
        mlflow.set_tags(
            {"gridbots.family": "td", "gridbots.game": game, "gridbots.size": str(len(entries))}
        )
        mlflow.log_metrics(_clean({k: v for k, v in summary.items() if not isinstance(v, dict)}))
        for path in files:
            if Path(path).is_file():
                mlflow.log_artifact(str(path))
        for entry in entries:
            with mlflow.start_run(experiment_id=exp, run_name=entry["label"], nested=True):
                ids[entry["label"]] = log_child(entry, game)[0]
        if summary.get("best"):
            mlflow.set_tags(
                {
                    "best.config": str(summary["best"]),
                    "best.run_id": ids.get(str(summary["best"]), ""),
                }
            )
    return {"parent_run_id": parent.info.run_id, "runs": ids, "experiment_id": exp}


def log_and_register(entry: dict[str, Any], game: str, name: str) -> dict[str, Any]:
    """One run with its model logged, registered as a new `<game>-td` version."""
    import mlflow

    from models.registry import register_run
    from models.tracking import TrainedRun, client, experiment_id

    mlflow_client = client()
    exp = experiment_id(mlflow_client, game)
    with mlflow.start_run(experiment_id=exp, run_name=name):
        run_id, model_uri = log_child(entry, game, log_model=True)
    result = TrainingResult(
        "td",
        game,
        "seat-observation",
        entry["params"],
        Path(entry["artifact"]),
        "onnx",
        metrics=_clean(entry["metrics"]),
    )
    run = TrainedRun(
        run_id,
        entry["params"],
        result,
        model_uri,
        training_source(game, entry["params"]),
        f"{entry['metrics'].get('parity_max_abs_diff', 'n/a')}",
    )
    version = register_run(run, mlflow_client)
    return {"run_id": run_id, "model_uri": model_uri, "version": version}
