"""A stage rerun with unchanged inputs writes the same bytes (issue 68): DVC sees the same output
hash, so every stage downstream stays up to date.

A dataset folder used to hold its run's timings and worker ids (manifest.json), a validation
verdict the machine's absolute path, a training's run.json its MLflow run id and registry
version, exports.json the same ids, a tournament per-move times and peak memory: a forced rerun
of generation marked everything after it stale, one of training the export. Here the tiny
profile's Connect 4 chain (generate → validate → encode → train → export → evaluate) runs once;
then each of its stages is forced to run again (`dvc repro -f -s`; the dataset deleted first,
since a kept one would only resume), and its outputs' hashes in dvc.lock must be unchanged and
`dvc status` must find nothing to do downstream. The ids and timings live in metrics files
(`metrics/GAME/generate-KEY.json`, `train-runs/KEY.json`, `evaluate-measured.json`).
tests/test_cluster.py checks the same hash for a dataset made on a cluster's workers.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest
import yaml

from engine.noise import TELEMETRY_OFF
from tests.test_dvc_repro import BIN, copy_repo, git, tiny_profile

pytestmark = [pytest.mark.filterwarnings("ignore"), pytest.mark.slow]
CHAIN = ("generate-connect4@randomized", "validate-connect4@randomized",
         "encode-connect4@qualitative", "train-connect4@hmm", "export-connect4",
         "evaluate-connect4")  # fmt: skip


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


def test_a_training_keeps_its_mlflow_ids_beside_its_output(repo):
    """The ids a training's run.json and exports.json used to hold are in its run record, and
    the pipeline's readers (stage_io.trained_run: export, promote, the leaderboard) find them
    there: the registry version the record names is one MLflow holds for that run."""
    from flows.pipeline.stage_io import RUN_IDS, trained_run

    root, _env = repo
    run = json.loads((root / "trained/connect4/hmm/run.json").read_text())
    assert not set(RUN_IDS) & set(run) and run["name"] == "hmm"
    exported = json.loads((root / "exports/connect4/exports.json").read_text())
    assert [e["name"] for e in exported] == ["hmm"]
    assert not set(RUN_IDS) & set(exported[0])
    record = json.loads((root / "metrics/connect4/train-runs/hmm.json").read_text())
    assert set(record) == set(RUN_IDS) and record["parent_run_id"] is None  # no sweep
    assert trained_run(root, "connect4", "hmm") == {**run, **record}
    uri = f"file:{root / 'mlflow.db'}?mode=ro"  # the test repo's own MLflow store
    with contextlib.closing(sqlite3.connect(uri, uri=True, timeout=5)) as db:
        query = "SELECT name, version FROM model_versions WHERE run_id = ?"
        versions = db.execute(query, (record["run_id"],)).fetchall()
    assert (f"connect4-{run['family']}", int(record["version"])) in versions


def test_a_tournament_keeps_its_clock_and_memory_beside_its_output(repo):
    import pyarrow.parquet as pq

    root, _env = repo
    games = pq.read_table(root / "evaluation/connect4/games.parquet")
    assert not [c for c in games.column_names if "time" in c or "peak" in c]
    summary = json.loads((root / "evaluation/connect4/summary.json").read_text())
    measured = json.loads((root / "metrics/connect4/evaluate-measured.json").read_text())
    pairings = [p["pairing"] for p in summary["pairings"]]
    assert [p["pairing"] for p in measured["pairings"]] == pairings
    for kept, figures in zip(summary["pairings"], measured["pairings"], strict=True):
        assert [b["spec"] for b in figures["bots"]] == [b["spec"] for b in kept["bots"]]
        for bot, figure in zip(kept["bots"], figures["bots"], strict=True):
            assert set(figure) == {"spec", "time_mean_ms", "time_p95_ms", "peak_kb"}
            assert not {"time_mean_ms", "time_p95_ms", "peak_kb"} & set(bot)
            assert bot["decisions"] > 0 and figure["time_mean_ms"] > 0 and figure["peak_kb"] >= 0
