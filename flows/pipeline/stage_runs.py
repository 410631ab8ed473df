"""MLflow runs for the stages that train nothing (evaluate, promote), tagged with lineage."""

from __future__ import annotations

import re
from pathlib import Path

from flows.pipeline.params import stage_label
from flows.pipeline.stage_io import lineage, use_tracking


def log_stage_run(root: Path, params: dict, game: str, stage: str, metrics: dict) -> None:
    """An MLflow run for a non-training stage, in the game's experiment, with its lineage."""
    use_tracking(params, root)
    from models.tracking import client, open_run

    tags = {**lineage(root), "gridbots.stage": stage_label(stage, game)}
    run_id = open_run(game, stage_label(stage, game), None, tags=tags)
    mlflow_client = client()
    for key, value in metrics.items():
        clean = re.sub(r"[^A-Za-z0-9_.\- /:]", "_", key)
        mlflow_client.log_metric(run_id, clean, value)
    mlflow_client.set_terminated(run_id)
