"""A real `gridbots stage train` sweep, killed with SIGKILL after its first configurations,
resumes: the rerun trains only the configurations not finished, under the same parent run, and
leaves no checkpoint behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from test_stage_resume import BIN, REPO, prefect_env  # noqa: F401 (the fixture)

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore")]
ALPHAS = [0.25 * k for k in range(1, 13)]  # twelve HMM configurations


def start(folder: Path, env: dict) -> subprocess.Popen:
    return subprocess.Popen(
        [str(BIN / "gridbots"), "stage", "train", "connect4", "hmm"],
        cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip


def done(state: Path) -> dict:
    try:
        return json.loads(state.read_text())
    except (OSError, ValueError):
        return {}


def test_kill_9_mid_sweep_then_rerun_trains_only_the_rest(tmp_path, prefect_env):  # noqa: F811
    from flows.entry import main

    params = yaml.safe_load((REPO / "params.yaml").read_text())
    params["connect4"]["models"] = {
        "hmm": {"family": "hmm", "encoding": "qualitative", "params": {},
                "sweep": {"alpha": ALPHAS}},
    }  # fmt: skip
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    battle, encoded = tmp_path / "battle", tmp_path / "encoded/connect4/qualitative.npz"
    assert main(["generate", "connect4", "battle", "--out", str(battle), "--games", "30",
                 "--agents", "random:guards=win+block,random", "--seed", "3"]) == 0  # fmt: skip
    assert main(["encode", str(battle), "--encoding", "qualitative", "--out", str(encoded)]) == 0

    state = tmp_path / "checkpoints/connect4/train-hmm/sweep-state.json"
    scratch = tmp_path / "tmp"  # the killed stage's temporary space
    scratch.mkdir()
    proc = start(tmp_path, {**prefect_env, "TMPDIR": str(scratch)})
    deadline = time.time() + 300
    while len(done(state).get("done", {})) < 2 and time.time() < deadline:
        assert proc.poll() is None, proc.stdout.read().decode()[-2000:]
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    before = done(state)
    kept = {v["run_id"] for v in before["done"].values()}
    in_flight = set(before["running"].values()) - kept
    assert 2 <= len(kept) < len(ALPHAS) and not before.get("finished")
    assert not list(scratch.glob("gridbots-*"))  # it trained in its work folder alone

    restarted = time.time() * 1000
    rerun = start(tmp_path, prefect_env)
    out = rerun.communicate(timeout=600)[0].decode()
    assert rerun.returncode == 0, out[-3000:]
    assert f"{len(ALPHAS)} configuration(s)" in out
    assert not state.parent.exists()  # the checkpoint goes once the stage succeeded

    from mlflow import MlflowClient

    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("connect4").experiment_id])
    parents = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    assert [p.info.run_id for p in parents] == [before["parent"]]  # one sweep, continued
    finished = [r for r in runs if r.info.status == "FINISHED" and r not in parents]
    assert len(finished) == len(ALPHAS)
    assert kept <= {r.info.run_id for r in finished}
    trained_again = [r for r in finished if r.info.start_time >= restarted]
    assert len(trained_again) == len(ALPHAS) - len(kept)  # only the rest trained
    for run_id in in_flight:  # the configuration the kill interrupted
        assert client.get_run(run_id).info.status == "KILLED"
    summary = json.loads((tmp_path / "trained/connect4/hmm/run.json").read_text())
    assert summary["configurations"] == len(ALPHAS)
    record = json.loads((tmp_path / "metrics/connect4/train-runs/hmm.json").read_text())
    assert "run_id" not in summary and record["run_id"] in {r.info.run_id for r in finished}
