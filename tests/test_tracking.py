"""MLflow tracking: single runs, sweeps (parent + nested runs, best child), export of a run.

A stand-in family (defined here, registered in models.base.FAMILIES for the module's duration)
writes a tiny ONNX model built with onnx.helper, so nothing here needs TensorFlow. Its curves
are known in closed form (loss = 1 / (width * epoch)), so the best child of a sweep is known
before the sweep runs. One temporary SQLite store per module; test_registry.py and
test_model_cli.py reuse these helpers (and the template database, created once per session).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import shutil
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from models.base import FAMILIES, ModelError, TrainingResult, artifact_metadata

pytestmark = pytest.mark.filterwarnings("ignore:.*noload.*")
STUB_NAME = "gridbots_test_stub_family"


# ---- the stand-in family --------------------------------------------------------------------
def stub_train(arrays, meta, params, out_dir, progress=None) -> TrainingResult:
    """A value 'model' y = mean(x) / width, with curves 1 / (width * epoch). With `center`, a
    real Connect 4 evaluation on the board one-hot input instead: 0.5 + 0.02 x (own centre
    stones - the opponent's), which makes alphabeta play for the centre column."""
    from onnx import TensorProto, helper

    features = int(arrays["inputs"].shape[1])
    weights = np.full(features, 1.0 / (features * params["width"]), dtype=np.float32)
    bias = 0.0
    if params["center"]:
        cells = np.zeros((6, 7), dtype=np.float32)
        cells[:, 3] = 0.02
        weights, bias, features = np.concatenate([cells.ravel(), -cells.ravel()]), 0.5, 84
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["inputs", "w"], ["xw"]),
            helper.make_node("Add", ["xw", "b"], ["value"]),
        ],
        "stub",
        [helper.make_tensor_value_info("inputs", TensorProto.FLOAT, ["batch", features])],
        [helper.make_tensor_value_info("value", TensorProto.FLOAT, ["batch", 1])],
        [
            helper.make_tensor("w", TensorProto.FLOAT, [features, 1], weights.tolist()),
            helper.make_tensor("b", TensorProto.FLOAT, [1], [bias]),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)
    metadata = artifact_metadata(
        meta["game"], "stub", meta["encoding"], "value", stub_agent=params["agent"]
    )
    helper.set_model_props(model, metadata)
    path = Path(out_dir) / "model.onnx"
    path.write_bytes(b"not an onnx file" if params["corrupt"] else model.SerializeToString())
    history: dict[str, list[float]] = {}
    for epoch in range(params["epochs"]):
        metrics = {"loss": 1.0 / (params["width"] * (epoch + 1))}
        metrics["val_loss"] = 1.1 * metrics["loss"]
        for key, value in metrics.items():
            history.setdefault(key, []).append(value)
        if progress:
            progress(epoch, metrics)
    report = Path(out_dir) / "model.parity.json"
    report.write_text(json.dumps({"max_abs_diff": 3e-6, "passed": True}))
    return TrainingResult(
        family="stub",
        game=meta["game"],
        encoding=meta["encoding"],
        params=dict(params),
        artifact=path,
        artifact_kind="onnx",
        metrics={"val_loss": history["val_loss"][-1], "accuracy": 0.5 + params["width"] / 100},
        history=history,
        extra_artifacts=[report],
    )


STUB = types.ModuleType(STUB_NAME)
STUB.DEFAULTS = {"width": 2, "epochs": 3, "agent": "random", "corrupt": False, "center": False}
STUB.ENCODINGS = ("count-onehot", "board-onehot")
STUB.train = stub_train


def make_dataset(path: Path, encoding="count-onehot", game="connect4", manifest_hash=None) -> Path:
    """An encoded file in features.encode's format (its contents do not matter to the stub)."""
    from features.encode import save

    rng = np.random.default_rng(0)
    arrays = {
        "inputs": rng.random((24, 6), dtype=np.float32),
        "outcome": rng.integers(0, 2, 24).astype(np.int8),
        "game_id": np.repeat(np.arange(6), 4),
    }
    meta = {
        "encoding": encoding,
        "game": game,
        "table": "positions",
        "options": {},
        "rows": 24,
        "shapes": {k: list(v.shape) for k, v in arrays.items()},
        "dtypes": {k: str(v.dtype) for k, v in arrays.items()},
    }
    if manifest_hash:
        meta["manifest_hash"] = manifest_hash
    return save(arrays, meta, path)


@contextlib.contextmanager
def mlflow_sandbox(root: Path, session_base: Path):
    """A fresh SQLite store (copied from a session template: creating one costs seconds), the
    model cache and the working directory under `root`, and the stand-in family registered."""
    from models.tracking import client

    root.mkdir(parents=True, exist_ok=True)
    template = session_base / "mlflow-template.db"
    database = root / "mlflow.db"
    if template.is_file():
        shutil.copyfile(template, database)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{database}")
        patch.setenv("MLFLOW_DISABLE_TELEMETRY", "1")
        patch.setenv("GRIDBOTS_MODEL_CACHE", str(root / "cache"))
        patch.setitem(FAMILIES, "stub", STUB_NAME)
        patch.setitem(sys.modules, STUB_NAME, STUB)
        patch.chdir(root)
        if not template.is_file():
            client().search_experiments()  # creates the schema
            shutil.copyfile(database, template)
        yield patch


# ---- this module's tests --------------------------------------------------------------------
@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    root = tmp_path_factory.mktemp("tracking")
    with mlflow_sandbox(root, tmp_path_factory.getbasetemp()):
        yield root


@pytest.fixture(scope="module")
def data(sandbox) -> Path:
    return make_dataset(sandbox / "data" / "counts.npz", manifest_hash="feedc0de")


def _metric_steps(client, run_id: str, key: str) -> list[tuple[int, float]]:
    return [(m.step, m.value) for m in client.get_metric_history(run_id, key)]


def test_single_run_logs_params_dataset_curves_model_and_plot(sandbox, data):
    from models.tracking import client, train

    outcome = train(data, "stub", {"width": "4"}, experiment="single")
    assert outcome.parent_run_id is None and len(outcome.runs) == 1
    mlflow_client = client()
    run = mlflow_client.get_run(outcome.best.run_id)
    params = run.data.params
    assert params["width"] == "4" and params["epochs"] == "3" and params["agent"] == "random"
    assert params["dataset.path"] == str(data.resolve())
    assert params["dataset.sha256"] == hashlib.sha256(data.read_bytes()).hexdigest()
    assert params["dataset.manifest_hash"] == "feedc0de"
    assert params["dataset.encoding"] == "count-onehot" and params["game"] == "connect4"
    # per-epoch metrics came through `progress`: 1 / (4 * epoch)
    assert _metric_steps(mlflow_client, run.info.run_id, "loss") == [
        (0, 0.25),
        (1, 0.125),
        (2, pytest.approx(1 / 12)),
    ]
    assert run.data.metrics["final.val_loss"] == pytest.approx(1.1 / 12)
    assert run.data.tags["export.parity_max_abs_diff"] == "3e-06"
    assert run.data.tags["artifact.gridbots.kind"] == "value"
    listed = {a.path for a in mlflow_client.list_artifacts(run.info.run_id, "plots")}
    assert listed == {"plots/training_curve.png"}
    png = mlflow_client.download_artifacts(run.info.run_id, "plots/training_curve.png", sandbox)
    assert Path(png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # the model is an MLflow ONNX model with a signature naming the graph's tensors
    import mlflow

    info = mlflow.models.get_model_info(outcome.best.model_uri)
    assert [s.name for s in info.signature.inputs.inputs] == ["inputs"]
    assert [s.name for s in info.signature.outputs.inputs] == ["value"]
    assert (sandbox / "mlruns").is_dir()  # artifacts beside the SQLite database


def test_sweep_is_one_parent_with_a_nested_run_per_configuration(sandbox, data):
    from models.tracking import client, train

    outcome = train(data, "stub", {"agent": "random"}, ["width=1,4", "epochs=1,2"], "sweep")
    mlflow_client = client()
    runs = mlflow_client.search_runs([outcome.experiment_id])
    parent = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == outcome.parent_run_id]
    assert [r.info.run_id for r in parent] == [outcome.parent_run_id]
    assert len(children) == 4 and len(runs) == 5
    configs = sorted((r.data.params["width"], r.data.params["epochs"]) for r in children)
    assert configs == [("1", "1"), ("1", "2"), ("4", "1"), ("4", "2")]
    for child in children:
        width, epochs = int(child.data.params["width"]), int(child.data.params["epochs"])
        steps = _metric_steps(mlflow_client, child.info.run_id, "val_loss")
        assert [s for s, _ in steps] == list(range(epochs))
        assert steps[-1][1] == pytest.approx(1.1 / (width * epochs))
        assert mlflow_client.list_artifacts(child.info.run_id, "plots")
        assert child.data.tags["gridbots.model_uri"].startswith("models:/")
    # lowest val_loss: width 4 trained 2 epochs (1.1 / 8)
    best = next(
        r for r in children if r.data.params["width"] == "4" and r.data.params["epochs"] == "2"
    )
    tags = parent[0].data.tags
    assert tags["best.run_id"] == best.info.run_id == outcome.best.run_id
    assert tags["best.metric"] == "val_loss" and tags["best.direction"] == "min"
    assert float(tags["best.value"]) == pytest.approx(1.1 / 8)
    assert tags["best.config"] == "width=4,epochs=2"


def test_export_copies_a_runs_model_and_follows_a_sweep_to_its_best_child(sandbox, data):
    import onnx

    from models.tracking import client, fetch_run_artifact, train

    outcome = train(data, "stub", {}, ["width=3,5"], "export")
    path, info = fetch_run_artifact(outcome.parent_run_id, sandbox / "exports")
    assert info["run_id"] == outcome.best.run_id
    assert path == sandbox / "exports" / outcome.best.run_id / "model.onnx"
    proto = onnx.load(str(path))
    props = {p.key: p.value for p in proto.metadata_props}
    assert props["gridbots.family"] == "stub" and props["gridbots.game"] == "connect4"
    weights = onnx.numpy_helper.to_array(proto.graph.initializer[0])
    assert weights.ravel()[0] == pytest.approx(1 / (6 * 5))  # width 5 won: 1.1 / 15 < 1.1 / 9
    with pytest.raises(ModelError, match="no MLflow run"):
        fetch_run_artifact("0" * 32, sandbox / "exports")
    assert client().get_run(outcome.best.run_id).info.status == "FINISHED"


def test_sweep_grid_and_parameter_parsing():
    from models.tracking import coerce, parse_assignments, sweep_grid

    grid = sweep_grid(["a=1,2", "b=x,y,z"])
    assert len(grid) == 6 and grid[0] == {"a": "1", "b": "x"} and grid[-1] == {"a": "2", "b": "z"}
    assert parse_assignments(["agent=mcts:sims=10"], "--param") == {"agent": "mcts:sims=10"}
    typed = coerce("stub", STUB.DEFAULTS, {"width": "7", "corrupt": "true"})
    assert typed == {**STUB.DEFAULTS, "width": 7, "corrupt": True}
    for bad, message in [
        ({"widht": "3"}, "unknown parameter"),
        ({"width": "wide"}, "must be int"),
        ({"corrupt": "maybe"}, "must be bool"),
    ]:
        with pytest.raises(ModelError, match=message):
            coerce("stub", STUB.DEFAULTS, bad)
    with pytest.raises(ModelError, match="given twice"):
        parse_assignments(["a=1", "a=2"], "--param")
    with pytest.raises(ModelError, match="key=value"):
        sweep_grid(["width"])


def test_bad_training_input_is_a_model_error(sandbox, data):
    from models.tracking import client, train

    wrong = make_dataset(sandbox / "data" / "seq.npz", encoding="quantitative")
    with pytest.raises(ModelError, match="trains on count-onehot, board-onehot"):
        train(wrong, "stub", {}, experiment="bad")
    with pytest.raises(ModelError, match="unknown model family 'nope'"):
        train(data, "nope", {}, experiment="bad")
    with pytest.raises(ModelError, match="not othello"):
        train(data, "stub", {}, experiment="bad", expect_game="othello")
    garbage = sandbox / "data" / "garbage.npz"
    garbage.write_bytes(b"PK not really")
    with pytest.raises(ModelError, match="cannot read encoded dataset"):
        train(garbage, "stub", {}, experiment="bad")
    with pytest.raises(ModelError, match="corrupt ONNX file"):
        train(data, "stub", {"corrupt": "true"}, experiment="corrupt")
    runs = client().search_runs([client().get_experiment_by_name("corrupt").experiment_id])
    assert [r.info.status for r in runs] == ["FAILED"]


def test_sidecars_travel_with_non_onnx_models_only():
    from models.tracking import sidecars

    def result(kind: str, name: str) -> TrainingResult:
        extras = [Path(f"/x/{name}.json"), Path("/x/parity.json"), Path(f"/x/{name}2")]
        return TrainingResult(
            "f", "connect4", "e", {}, Path(f"/x/{name}"), kind, extra_artifacts=extras
        )

    assert sidecars(result("crfsuite", "model.crfsuite")) == [Path("/x/model.crfsuite.json")]
    assert sidecars(result("onnx", "model.onnx")) == []


class Killed(BaseException):
    """What a kill looks like from inside: the training stops, no handler catches it."""


def test_a_killed_sweep_resumes_at_the_configuration_in_flight(sandbox, data, monkeypatch):
    from models.tracking import client, train

    trained: list[int] = []
    kill_at = {2}

    def flaky(arrays, meta, params, out_dir, progress=None):
        trained.append(params["width"])
        if params["width"] in kill_at:
            raise Killed
        return stub_train(arrays, meta, params, out_dir, progress)

    monkeypatch.setattr(STUB, "train", flaky)
    work = sandbox / "work" / "resume"
    sweep = ["width=1,2,3"]
    with pytest.raises(Killed):
        train(data, "stub", {}, sweep, "resume", out_dir=work)
    assert trained == [1, 2]  # the first finished, the second was in flight
    kill_at.clear()
    outcome = train(data, "stub", {}, sweep, "resume", out_dir=work)
    assert trained == [1, 2, 2, 3]  # only the configurations not finished trained again
    mlflow_client = client()
    runs = mlflow_client.search_runs([outcome.experiment_id])
    parents = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    assert [p.info.run_id for p in parents] == [outcome.parent_run_id]  # the same parent
    children = {r.info.run_id: r for r in runs if r.data.tags.get("mlflow.parentRunId")}
    assert [r.run_id for r in outcome.runs] == [
        r.info.run_id
        for r in sorted(children.values(), key=lambda r: r.info.start_time)
        if r.info.status == "FINISHED"
    ]
    statuses = sorted(r.info.status for r in children.values())
    assert statuses == ["FAILED", "FINISHED", "FINISHED", "FINISHED"]  # the interrupted one
    assert [r.params["width"] for r in outcome.runs] == [1, 2, 3]
    assert outcome.best.params["width"] == 3  # chosen over all three (lowest val_loss)
    assert outcome.best.result.artifact.is_file()
    assert parents[0].data.tags["best.run_id"] == outcome.best.run_id
    # a finished sweep is not resumed: the same command trains every configuration again
    again = train(data, "stub", {}, sweep, "resume", out_dir=work)
    assert trained[4:] == [1, 2, 3] and again.parent_run_id != outcome.parent_run_id
    # another grid in the same folder does not reuse the killed sweep's runs either
    kill_at.add(3)
    with pytest.raises(Killed):
        train(data, "stub", {}, ["width=1,3"], "resume", out_dir=work)
    kill_at.clear()
    train(data, "stub", {}, ["width=1,4"], "resume", out_dir=work)
    assert trained[7:] == [1, 3, 1, 4]


@pytest.mark.parametrize("sweep", [[], ["width=1,2"]], ids=["single", "sweep"])
def test_a_run_killed_before_its_record_is_closed_by_the_rerun(sandbox, data, monkeypatch, sweep):
    """A kill can land after MLflow created the run and before the work folder's record names
    it (the dvc repro test's kill polls for the first RUNNING run): the run carries its work
    folder's tag from its creation, so the rerun still closes it KILLED."""
    import mlflow

    from models.sweep_state import SWEEP_STATE, work_tag
    from models.tracking import client, experiment_id, train

    work = sandbox / "work" / f"orphan-{len(sweep)}"
    mlflow_client = client()
    exp = experiment_id(mlflow_client, f"orphan-{len(sweep)}")

    def killed_after_creation(experiment_id, run_name, tags=None):
        """The run exists, RUNNING, with its tags; then the process is gone."""
        mlflow_client.create_run(experiment_id, tags=tags, run_name=run_name)
        raise Killed

    monkeypatch.setattr(mlflow, "start_run", killed_after_creation)
    with pytest.raises(Killed):
        train(data, "stub", {}, sweep, f"orphan-{len(sweep)}", out_dir=work)
    monkeypatch.undo()
    assert not (work / SWEEP_STATE).is_file() or "running" not in (work / SWEEP_STATE).read_text()
    (orphan,) = mlflow_client.search_runs([exp])
    assert orphan.info.status == "RUNNING" and orphan.data.tags.items() >= work_tag(work).items()
    train(data, "stub", {}, sweep, f"orphan-{len(sweep)}", out_dir=work)
    assert mlflow_client.get_run(orphan.info.run_id).info.status == "KILLED"
    statuses = [r.info.status for r in mlflow_client.search_runs([exp])]
    assert "RUNNING" not in statuses
