"""Sharing the pipeline's outputs through a DVC remote (README, "Sharing bots and results").

A copy of the repository's tracked files with test_dvc_repro's tiny profile runs two of the
real dvc.yaml stages (Connect 4's randomized dataset and its validation), pushes their outputs
to a local-folder remote, and a fresh `git clone` of that copy pulls them: the clone then holds
the same bytes and `dvc status` finds nothing to run. (The copy's other stages never ran, so
push, pull and status name the stage and its upstream: `--with-deps`.)
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest
import yaml
from test_dvc_repro import BIN, copy_repo, git, tiny_profile

from engine.noise import TELEMETRY_OFF

pytestmark = [pytest.mark.filterwarnings("ignore"), pytest.mark.slow]
STAGE = "validate-connect4@randomized"  # and, upstream, generate-connect4@randomized
#: a cached dataset folder and a metrics file (git ignores it: only the remote carries it)
OUTPUTS = ("data/connect4/randomized", "validation/connect4/randomized.json")


def digests(root: Path) -> dict[str, str]:
    """sha256 of every file under the stages' outputs, by path."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for out in OUTPUTS
        for p in sorted([root / out, *(root / out).rglob("*")])
        if p.is_file()
    }


def run(cmd: list[str], cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"{' '.join(cmd)}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout + done.stderr


def test_push_to_a_folder_remote_then_a_fresh_clone_pulls_and_is_up_to_date(tmp_path, prefect_api):
    origin, remote, clone = tmp_path / "origin", tmp_path / "remote", tmp_path / "clone"
    origin.mkdir()
    copy_repo(origin)
    (origin / "params.yaml").write_text(yaml.safe_dump(tiny_profile(), sort_keys=False))
    git(origin, "init", "-q")
    git(origin, "config", "user.email", "test@example.invalid")
    git(origin, "config", "user.name", "test")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "PREFECT_", "DVC_"))}
    env.update(TELEMETRY_OFF, PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}")
    env["PREFECT_API_URL"] = prefect_api
    dvc = str(BIN / "dvc")
    if not (origin / ".dvc").is_dir():
        run([dvc, "init", "-q"], origin, env)
    run([dvc, "remote", "add", "-d", "shared", str(remote)], origin, env)
    git(origin, "add", "-A")
    git(origin, "commit", "-q", "-m", "tiny profile, a folder remote")

    run([dvc, "repro", STAGE], origin, {**env, "PYTHONPATH": str(origin)})
    made = digests(origin)
    assert any(p.endswith(".parquet") for p in made) and OUTPUTS[1] in made
    git(origin, "add", "dvc.lock")
    git(origin, "commit", "-q", "-m", "stage outputs recorded")
    run([dvc, "push", "--with-deps", STAGE], origin, env)
    assert any(remote.rglob("*")), "the remote received the outputs"

    run(["git", "clone", "-q", str(origin), str(clone)], tmp_path, env)
    assert not (clone / OUTPUTS[0]).exists()  # git carries dvc.lock, not the data
    run([dvc, "pull", "--with-deps", STAGE], clone, env)
    assert digests(clone) == made
    status = run([dvc, "status", "--with-deps", STAGE], clone, {**env, "PYTHONPATH": str(clone)})
    assert "Data and pipelines are up to date" in status, status
