"""A played family's sweep (TD) without a cluster trains its configurations side by side in the
stage's local processes (flows.pipeline.stages.train.sweep_processes, stage_io.run_flow): every
configuration's curve, the chosen one and its network's bytes are what one process trains one
configuration after another, a progress bar counts the configurations, and a real `gridbots
stage train` killed with SIGKILL mid-sweep resumes with the configurations that finished."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from test_stage_resume import BIN, prefect_env  # noqa: F401 (the fixture)
from test_stage_train_resume import done

from flows.pipeline.stages.train import sweep_processes

pytestmark = [pytest.mark.filterwarnings("ignore")]
#: four small TD configurations, ranked by a short curve against a one-ply minimax
SWEEP = {"hidden": [4, 8], "rule": ["q", "sarsa"]}
TD = {"games": 2000, "seed": 2, "curve_games": 8,
      "curve_opponents": ["alphabeta:depth=1,results=flat"]}  # fmt: skip


def profile(root: Path, workers: int) -> None:
    root.mkdir()
    models = {"td": {"family": "td", "params": TD, "sweep": SWEEP}}
    params = {"games": ["othello"], "workers": workers,
              "mlflow": {"tracking_uri": "sqlite:///mlflow.db"},
              "othello": {"spec": "othello", "models": models}}  # fmt: skip
    (root / "params.yaml").write_text(json.dumps(params))


def start(root: Path, env: dict) -> subprocess.Popen:
    return subprocess.Popen(
        [str(BIN / "gridbots"), "stage", "train", "othello", "td"],
        cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip


def finish(root: Path, env: dict) -> str:
    proc = start(root, env)
    out = proc.communicate(timeout=600)[0].decode()
    assert proc.returncode == 0, out[-3000:]
    return out


def state(root: Path) -> dict:
    return done(root / "checkpoints/othello/train-td/sweep-state.json")


def runs(root: Path) -> list:
    from mlflow import MlflowClient

    client = MlflowClient(f"sqlite:///{root / 'mlflow.db'}")
    found = client.search_runs([client.get_experiment_by_name("othello").experiment_id])
    return [r for r in found if "mlflow.parentRunId" in r.data.tags]


def test_how_many_configurations_train_side_by_side():
    """The profile's workers for a played family, divided by the threads one configuration
    takes (NEAT's own workers), never more than its configurations; a dataset family: one."""
    td = {"family": "td", "params": {}, "sweep": {"hidden": [4, 8, 16]}}
    assert sweep_processes({"workers": 8}, td) == 3
    assert sweep_processes({"workers": 2}, td) == 2
    assert sweep_processes({"workers": 2}, {**td, "sweep": {}}) == 1
    neat = {"family": "neat", "params": {"workers": 2}, "sweep": {"seed": [0, 1, 2]}}
    assert sweep_processes({"workers": 2}, neat) == 1
    assert sweep_processes({"workers": 6}, neat) == 3
    hmm = {"family": "hmm", "params": {}, "sweep": {"alpha": [0.5, 1.0]}}
    assert sweep_processes({"workers": 8}, hmm) == 1


def one_process(root: Path) -> dict[str, tuple[dict, bytes]]:
    """Each configuration trained here, one after another (what a serial sweep runs): label ->
    (its history without clock figures, its network's bytes)."""
    from models.base import measured
    from models.td import learn

    out = {}
    for hidden in SWEEP["hidden"]:
        for rule in SWEEP["rule"]:
            label = f"hidden={hidden},rule={rule}"
            result = learn("othello", {**TD, "hidden": hidden, "rule": rule}, root / label)
            history = {k: v for k, v in result.history.items() if not measured(k)}
            out[label] = (history, result.artifact.read_bytes())
    return out


@pytest.mark.slow
def test_a_td_sweep_in_two_processes_keeps_the_serial_choice_and_resumes_after_kill_9(
    tmp_path,
    prefect_env,  # noqa: F811
):
    here = one_process(tmp_path / "here")
    scores = {label: history["score_vs_alphabeta:depth=1,results=flat"][-1]
              for label, (history, _) in here.items()}  # fmt: skip
    best = max(scores, key=lambda label: scores[label])  # the first of equals, as the sweep
    assert len(set(scores.values())) > 1  # a real choice, not a tie broken by order
    pooled = tmp_path / "pooled"
    profile(pooled, workers=2)

    proc = start(pooled, prefect_env)
    deadline = time.time() + 300
    while not state(pooled).get("done") and time.time() < deadline:
        assert proc.poll() is None, proc.stdout.read().decode()[-2000:]
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    before = state(pooled)
    kept = {v["run_id"] for v in before["done"].values()}
    assert 1 <= len(kept) < 4 and not before.get("finished")

    restarted = time.time() * 1000
    out = finish(pooled, prefect_env)
    rest = 4 - len(kept)
    assert "othello: td configurations" in out and f"{rest}/{rest}" in out  # the bar
    assert not (pooled / "checkpoints/othello/train-td").exists()
    run = json.loads((pooled / "trained/othello/td/run.json").read_text())
    assert {c["label"]: c["history"] for c in run["sweep"]} == {k: h for k, (h, _) in here.items()}
    assert run["best"] == best
    assert (pooled / "trained/othello/td/model.onnx").read_bytes() == here[best][1]

    children = runs(pooled)
    finished = [r for r in children if r.info.status == "FINISHED"]
    assert len(finished) == 4 and kept <= {r.info.run_id for r in finished}
    again = [r for r in finished if r.info.start_time >= restarted]
    assert len(again) == rest  # the finished configurations were not trained again
    first = [r for r in children if r.info.start_time < restarted]  # the killed attempt's
    assert len({r.data.tags["gridbots.worker"] for r in first}) == 2  # side by side, 2 processes
    assert {r.info.status for r in children} <= {"FINISHED", "KILLED"}
