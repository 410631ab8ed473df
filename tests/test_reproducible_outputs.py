"""A stage rerun with unchanged inputs writes the same bytes (issue 68): DVC sees the same output
hash, so every stage downstream stays up to date.

A dataset folder used to hold its run's timings and worker ids (manifest.json), and a
validation verdict the machine's absolute path: a forced rerun of generation marked validation
and encoding stale. Here the dataset chain of the tiny profile (generate → validate → encode)
runs once; then each of its stages is forced to run again (`dvc repro -f -s`; the dataset
deleted first, since a kept one would only resume), and its outputs' hashes in dvc.lock must be
unchanged and `dvc status` must find nothing to do downstream.
tests/test_cluster.py checks the same hash for a dataset made on a cluster's workers.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from engine.noise import TELEMETRY_OFF
from tests.test_dvc_repro import BIN, copy_repo, git, tiny_profile

pytestmark = [pytest.mark.filterwarnings("ignore"), pytest.mark.slow]
CHAIN = ("generate-connect4@randomized", "validate-connect4@randomized",
         "encode-connect4@qualitative")  # fmt: skip


@pytest.fixture(scope="module")
def repo(tmp_path_factory, prefect_api):
    root = tmp_path_factory.mktemp("reproducible")
    copy_repo(root)
    (root / "params.yaml").write_text(yaml.safe_dump(tiny_profile(), sort_keys=False))
    git(root, "init", "-q")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "PREFECT_", "DVC_"))}
    env.update(TELEMETRY_OFF, PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}",
               PREFECT_API_URL=prefect_api)  # fmt: skip
    done = dvc(root, env, "repro", CHAIN[-1])
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return root, env


def dvc(root: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "dvc"), *args], cwd=root, env=env, capture_output=True,
                          text=True, timeout=900)  # fmt: skip


def out_hashes(root: Path) -> dict[str, str]:
    lock = yaml.safe_load((root / "dvc.lock").read_text())["stages"]
    return {
        f"{name}:{out['path']}": out["md5"]
        for name in CHAIN
        for out in lock[name].get("outs", [])
        if not out["path"].startswith("metrics/")  # a run's own record: its timings
    }


@pytest.mark.parametrize("forced", CHAIN)
def test_a_forced_rerun_leaves_its_outputs_and_everything_downstream_as_they_were(repo, forced):
    root, env = repo
    before = out_hashes(root)
    if forced.startswith("generate"):  # a kept dataset resumes (persist): make it all again
        shutil.rmtree(root / "data" / "connect4" / "randomized")
    done = dvc(root, env, "repro", "--force", "--single-item", forced)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"Running stage '{forced}'" in done.stdout
    assert out_hashes(root) == before
    status = dvc(root, env, "status", "--json", *CHAIN)
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout or "{}") == {}


def test_the_dataset_folder_says_nothing_of_how_it_was_made(repo):
    root, _env = repo
    manifest = json.loads((root / "data/connect4/randomized/manifest.json").read_text())
    assert "timings" not in manifest
    assert all(set(s) == {"shard", "rows", "sha256"} for s in manifest["shards"].values())
    run = json.loads((root / "metrics/connect4/generate-randomized.json").read_text())
    assert set(run) == {"seconds", "started", "finished", "shards"}
    assert set(run["shards"]) == set(manifest["shards"])  # the rerun above made every shard
    assert all(set(s) == {"worker", "seconds"} for s in run["shards"].values())
    verdict = json.loads((root / "validation/connect4/randomized.json").read_text())
    assert str(root) not in json.dumps(verdict)  # no machine's path in the verdict
