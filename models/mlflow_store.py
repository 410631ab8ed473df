"""The MLflow store: where it is, its experiments, and a model file logged into a run.

Everything that reads or writes MLflow starts here: `client()` (the tracking URI, MLflow's
chatter muted), `experiment_id` (the one place experiments are made or found), `log_artifact`
(a family's model file into the active run: ONNX as an MLflow ONNX model with its signature,
JSON and CRFsuite files as plain artifacts with their sidecars) and `TrainedRun`, a run with its
model, which models.registry registers and models.tracking writes. It imports neither of them,
so the registry reads the store without the training code.

Tracking URI: $MLFLOW_TRACKING_URI, else `sqlite:///mlflow.db` in the working directory; a
SQLite store keeps its artifacts in `mlruns/` beside the database file. One experiment per game
unless told otherwise, tagged so MLflow's UI opens it on its training runs. MLflow is imported
lazily (it takes seconds).
"""

from __future__ import annotations

import json
import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from models.base import ARTIFACT_KINDS, ModelError, TrainingResult

DEFAULT_URI = "sqlite:///mlflow.db"
ONNX_REQUIREMENTS = ["onnx", "onnxruntime"]


# ---- MLflow setup ------------------------------------------------------------------------------
def tracking_uri() -> str:
    return os.environ.get("MLFLOW_TRACKING_URI") or DEFAULT_URI


def artifact_root(uri: str, experiment: str) -> str | None:
    """`mlruns/EXPERIMENT` beside a SQLite database (absolute, as a file URI), so artifacts stay
    with their database wherever the command runs; MLflow's default for other stores."""
    if not uri.startswith("sqlite:///"):
        return None
    database = Path(uri[len("sqlite:///") :])
    folder = re.sub(r"[^A-Za-z0-9_.-]+", "_", experiment).strip(".") or "experiment"
    return (database.resolve().parent / "mlruns" / folder).as_uri()


def client():
    """An MlflowClient on `tracking_uri()`, with MLflow's chatter and progress bars muted."""
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "1")
    import mlflow

    for name in ("mlflow", "alembic"):  # after the import: mlflow sets its level on import
        logging.getLogger(name).setLevel(logging.WARNING)

    uri = tracking_uri()
    mlflow.set_tracking_uri(uri)
    return mlflow.MlflowClient(uri)


#: the tag MLflow 3's UI reads to open an experiment on its training runs (not the GenAI
#: overview of traces, which gridbots never writes)
EXPERIMENT_KIND = ("mlflow.experimentKind", "custom_model_development")


#: MLflow 3.17's UI no longer reads that tag: it opens experiments in the view its sidebar's
#: GenAI / Model training switch holds (kept in the browser, GenAI until switched) unless the
#: address names one, so the links gridbots shows name the training view
UI_VIEW = "workflowType=machine_learning"


def ui_url(base: str, experiment: str | None = None) -> str:
    """The MLflow UI address of an experiment's training runs (or of the experiment list) in
    the training view."""
    page = f"experiments/{experiment}" if experiment else "experiments"
    return f"{base.rstrip('/')}/#/{page}?{UI_VIEW}"


def experiment_links(base: str, uri: str | None = None) -> list[tuple[str, str]]:
    """(name, `ui_url`) of every active experiment but MLflow's Default in the store at `uri`
    (default `tracking_uri()`); none where that is a SQLite file not there yet (never created
    here)."""
    uri = uri or tracking_uri()
    if uri.startswith("sqlite:///") and not Path(uri[len("sqlite:///") :]).is_file():
        return []
    client()  # MLflow's chatter muted
    import mlflow

    found = mlflow.MlflowClient(uri).search_experiments(filter_string="name != 'Default'")
    return [(e.name, ui_url(base, e.experiment_id)) for e in sorted(found, key=lambda e: e.name)]


def experiment_id(mlflow_client: Any, name: str) -> str:
    """The id of experiment `name`, created (artifacts under `artifact_root`) when missing, and
    tagged as custom model development (an experiment made before the tag gets it now)."""
    key, kind = EXPERIMENT_KIND
    found = mlflow_client.get_experiment_by_name(name)
    if found is not None:
        if found.lifecycle_stage == "deleted":
            raise ModelError(f"MLflow experiment {name!r} is deleted; restore it or pick another")
        if (found.tags or {}).get(key) != kind:
            mlflow_client.set_experiment_tag(found.experiment_id, key, kind)
        return found.experiment_id
    return mlflow_client.create_experiment(
        name, artifact_location=artifact_root(tracking_uri(), name), tags={key: kind}
    )


# ---- a model in a run ---------------------------------------------------------------------
@dataclass
class TrainedRun:
    run_id: str
    params: dict[str, Any]
    result: TrainingResult
    model_uri: str  # what a registered version points at
    dataset: dict[str, str]
    parity: str = "n/a"  # export parity (max abs diff) the family reported
    objective: float | None = None


def onnx_signature(proto: Any):
    """A tensor ModelSignature from the graph's named inputs and outputs (dynamic dims as -1)."""
    import numpy as np
    from mlflow.models import ModelSignature
    from mlflow.types import Schema, TensorSpec
    from onnx import helper

    def specs(values, skip=frozenset()):
        out = []
        for value in values:
            if value.name in skip:
                continue
            tensor = value.type.tensor_type
            dims = tuple(d.dim_value if d.dim_value > 0 else -1 for d in tensor.shape.dim)
            dtype = np.dtype(helper.tensor_dtype_to_np_dtype(tensor.elem_type))
            out.append(TensorSpec(dtype, dims or (-1,), value.name))
        return Schema(out)

    weights = {init.name for init in proto.graph.initializer}
    return ModelSignature(
        inputs=specs(proto.graph.input, weights), outputs=specs(proto.graph.output)
    )


def read_onnx(path: Path) -> Any:
    """The ModelProto of an exported artifact; ModelError when the file is not valid ONNX."""
    import onnx

    try:
        proto = onnx.load(str(path))
        onnx.checker.check_model(proto)
    except Exception as error:  # DecodeError, ValidationError, OSError
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ModelError(f"corrupt ONNX file {path}: {first}") from None
    return proto


def log_artifact(result: TrainingResult) -> tuple[str, dict[str, str]]:
    """Logs the model into the active run; (model URI to register, artifact tags)."""
    import mlflow

    path = Path(result.artifact)
    if result.artifact_kind not in ARTIFACT_KINDS:
        raise ModelError(f"unknown artifact kind {result.artifact_kind!r}")
    if not path.is_file():
        raise ModelError(f"the family wrote no artifact at {path}")
    tags = {"artifact.kind": result.artifact_kind, "artifact.file": path.name}
    if result.artifact_kind == "onnx":
        proto = read_onnx(path)
        tags.update({f"artifact.{e.key}": e.value for e in proto.metadata_props})
        from agents.onnx.runtime import providers

        info = mlflow.onnx.log_model(
            proto,
            name="model",
            signature=onnx_signature(proto),
            pip_requirements=ONNX_REQUIREMENTS,
            save_as_external_data=False,
            # the providers that really work here (a quiet probe): MLflow's default asks for
            # CUDA first, and onnxruntime-gpu on a CPU machine then prints CUDA errors at load
            onnx_execution_providers=list(providers()),
        )
        return info.model_uri, tags
    mlflow.log_artifact(str(path), artifact_path="model")
    for sidecar in sidecars(result):  # e.g. model.crfsuite.json: travels with its model
        mlflow.log_artifact(str(sidecar), artifact_path="model")
    return f"runs:/{mlflow.active_run().info.run_id}/model", tags


def sidecars(result: TrainingResult) -> list[Path]:
    """Extra files named after a non-ONNX artifact (`model.crfsuite.json`): part of the model."""
    if result.artifact_kind == "onnx":
        return []
    name = Path(result.artifact).name
    return [Path(p) for p in result.extra_artifacts if Path(p).name.startswith(name + ".")]


def parity_of(result: TrainingResult) -> str:
    """The export parity (max abs diff) a family reported, as text; `n/a` for non-Keras files."""
    for key, value in result.metrics.items():
        if "parity" in key:
            return f"{float(value):.3g}"
    for extra in result.extra_artifacts:
        if str(extra).endswith("parity.json") and Path(extra).is_file():
            try:
                report = json.loads(Path(extra).read_text())
                return f"{float(report['max_abs_diff']):.3g}"
            except (ValueError, KeyError, TypeError):
                return "unreadable report"
    return "n/a"
