"""A real `gridbots stage generate`, killed with SIGKILL mid-run, resumes: the rerun keeps the
shards already committed and ends with the rows of an uninterrupted run, no leftovers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore")]


@pytest.fixture(scope="module")
def prefect_env(prefect_api):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "MLFLOW_"))}
    env.update(PYTHONPATH=str(REPO), PREFECT_SERVER_ANALYTICS_ENABLED="false", DO_NOT_TRACK="1")
    env["PREFECT_API_URL"] = prefect_api
    return env


def stage_params(folder: Path) -> Path:
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    params["workers"] = 1
    params["connect4"]["datasets"] = {
        "battle": {"seed": 5, "options": {"x": 48, "y": 2, "shard_size": 2}}
    }
    path = folder / "params.yaml"
    path.write_text(yaml.safe_dump(params))
    return path


def start(folder: Path, env: dict) -> subprocess.Popen:
    return subprocess.Popen(
        [str(BIN / "gridbots"), "stage", "generate", "connect4", "battle"],
        cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip


def committed(manifest: Path) -> int:
    try:
        return len(json.loads(manifest.read_text())["shards"])
    except (OSError, ValueError, KeyError):
        return 0


def test_kill_9_then_rerun_gives_the_uninterrupted_rows(tmp_path, prefect_env):
    from features.store import generate_dataset

    stage_params(tmp_path)
    data = tmp_path / "data/connect4/battle"
    proc = start(tmp_path, prefect_env)
    deadline = time.time() + 300
    while committed(data / "manifest.json") < 2 and time.time() < deadline:
        assert proc.poll() is None, proc.stdout.read().decode()[-2000:]
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    kept = committed(data / "manifest.json")
    manifest = json.loads((data / "manifest.json").read_text())
    assert 2 <= kept < manifest["planned_shards"] and not manifest["complete"]

    rerun = start(tmp_path, prefect_env)
    out = rerun.communicate(timeout=600)[0].decode()
    assert rerun.returncode == 0, out[-3000:]
    manifest = json.loads((data / "manifest.json").read_text())
    assert manifest["complete"] and len(manifest["shards"]) == manifest["planned_shards"]
    options = {"x": 48, "y": 2, "shard_size": 2}
    plain = generate_dataset(tmp_path / "plain", "connect4", "battle", options, seed=5)
    assert manifest["content_hash"] == plain["content_hash"]
    leftovers = [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]
    assert leftovers == [] and not list((tmp_path / "data/connect4").glob(".*"))
