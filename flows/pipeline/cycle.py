"""The improvement cycle (`gridbots serve`), and the stages' flows under one name.

dvc.yaml runs one `gridbots stage NAME …` command per stage and that command runs one flow of
flows/pipeline/stages/. Fan-out (generation shards, tournament pairings) runs on the flow's
task runner through flows.pipeline.stage_io.fan_out: threads by default, a Dask cluster when
given its address (`--dask-address`, $GRIDBOTS_DASK_ADDRESS or params `dask.address`). Tasks
that touch files or the registry retry. Generation commits each shard as it finishes (a killed
stage resumes); every other output is written under a temporary name and renamed into place at
the end, so a failed stage leaves no half-written output behind.

Paths (relative to the repository root, all DVC outputs):
    data/G/TECH  validation/G/TECH.json  encoded/G/NAME.npz  trained/G/NAME/  exports/G/
    evaluation/G/  promotion/G.json  metrics/G/*.json  plots/G/NAME.csv  reports/pipeline/
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from prefect import flow

from flows.pipeline.stage_io import (  # noqa: F401  (the names callers import from here)
    RETRIES,
    SPEC_OF_KIND,
    StageError,
    atomic_dir,
    lineage,
    task_runner,
    use_tracking,
    write_json,
)
from flows.pipeline.stage_runs import log_stage_run  # noqa: F401
from flows.pipeline.stages.encode import encode_dataset, encode_flow, require_validated  # noqa: F401
from flows.pipeline.stages.evaluate import (  # noqa: F401
    bot_specs,
    evaluate_flow,
    relabel,
)
from flows.pipeline.stages.export import export_flow, export_model  # noqa: F401
from flows.pipeline.stages.generate import generate_flow  # noqa: F401
from flows.pipeline.stages.promote import production_version, promote_flow, promotion_gate  # noqa: F401
from flows.pipeline.stages.report import report_flow  # noqa: F401
from flows.pipeline.stages.train import sweep_items, tag_runs, train_flow, write_curve  # noqa: F401
from flows.pipeline.stages.validate import validate_dataset, validate_flow  # noqa: F401


@flow(name="improvement-cycle")
def improvement_cycle(root: str = ".") -> dict[str, Any]:
    """`dvc repro`, then the promotion gate of every game (a new candidate may now win)."""
    from flows.pipeline.params import load_for

    done = subprocess.run(["dvc", "repro"], cwd=root, capture_output=True, text=True)
    if done.returncode:
        raise StageError(f"dvc repro failed: {(done.stderr or done.stdout).strip()[-2000:]}")
    params = load_for("report", path=Path(root) / "params.yaml")
    return {
        game: promote_flow(Path(root), params, game)
        for game in params["games"]
        if params[game].get("models")
    }


def deployment(params: dict, root: str = "."):
    """The improvement cycle as a deployment with params.yaml's cron schedule."""
    from prefect.schedules import Cron

    serve = params["serve"]
    return improvement_cycle.to_deployment(
        name=serve["name"],
        schedule=Cron(serve["cron"], timezone=serve["timezone"]),
        parameters={"root": str(Path(root).resolve())},
        description="dvc repro, then the promotion gate of every game",
    )
