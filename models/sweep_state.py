"""A sweep's record in its work folder (`sweep-state.json`): which configurations finished and
which MLflow runs were in flight, so a killed sweep resumes at the configuration it was training
and the runs a kill interrupted are closed KILLED rather than left RUNNING."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

SWEEP_STATE = "sweep-state.json"


def work_folder(out_dir: str | Path | None) -> contextlib.AbstractContextManager:
    """The folder a training writes into: `out_dir` itself when given (no scratch folder beside
    it, so a stage killed mid-training leaves nothing in the system's temporary space), else a
    temporary folder removed afterwards."""
    if out_dir:
        return contextlib.nullcontext(str(out_dir))
    return tempfile.TemporaryDirectory(prefix="gridbots-train-")


def sweep_state(base: Path, family_name: str, dataset: dict, configs: list) -> dict[str, Any]:
    """What a sweep killed in `base` (same family, dataset hash and grid) finished, else a
    fresh state; a finished sweep starts afresh."""
    import hashlib

    identity = json.dumps([family_name, dataset, configs], sort_keys=True, default=str)
    key = hashlib.sha256(identity.encode()).hexdigest()
    try:
        state = json.loads((Path(base) / SWEEP_STATE).read_text())
    except (OSError, ValueError):
        state = {}
    if not isinstance(state, dict) or state.get("key") != key or state.get("finished"):
        state = {"key": key, "parent": None, "running": {}, "done": {}}
    return state


def save_state(base: Path, state: dict[str, Any]) -> None:
    path = Path(base) / SWEEP_STATE
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temp.write_text(json.dumps(state, default=str))
    os.replace(temp, path)


def close_stale(mlflow_client: Any, run_id: str) -> None:
    """The run a kill interrupted: KILLED, unless the interrupted process closed it itself."""
    from mlflow.exceptions import MlflowException

    with contextlib.suppress(MlflowException):  # a deleted run: nothing to close
        if mlflow_client.get_run(run_id).info.status == "RUNNING":
            mlflow_client.set_terminated(run_id, "KILLED")


def close_interrupted(mlflow_client: Any, base: Path, experiment_id: str | None = None) -> None:
    """The runs an unfinished attempt in `base` recorded as in flight, and (given the
    experiment) those it started without recording them: KILLED."""
    if experiment_id is not None:
        close_orphans(mlflow_client, experiment_id, base, keep=None)
    try:
        state = json.loads((Path(base) / SWEEP_STATE).read_text())
    except (OSError, ValueError):
        return
    if isinstance(state, dict) and not state.get("finished"):
        for run_id in dict(state.get("running") or {}).values():
            close_stale(mlflow_client, str(run_id))


#: a tag every top-level training run carries from its creation: the digest of its work folder
WORK_TAG = "gridbots.work"


def work_tag(base: Path) -> dict[str, str]:
    import hashlib

    return {WORK_TAG: hashlib.sha256(str(Path(base).resolve()).encode()).hexdigest()[:16]}


def close_orphans(mlflow_client: Any, experiment_id: str, base: Path, keep: str | None) -> None:
    """Runs of this work folder that a kill left RUNNING before the record above named them
    (the run and its tags are created together, the record is written just after): KILLED,
    all but `keep` (a sweep's parent the rerun resumes)."""
    ((key, value),) = work_tag(base).items()
    query = f"tags.`{key}` = '{value}' and attributes.status = 'RUNNING'"
    for run in mlflow_client.search_runs([experiment_id], query):
        if run.info.run_id != keep:
            close_stale(mlflow_client, run.info.run_id)
