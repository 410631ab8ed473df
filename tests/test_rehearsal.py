"""The rehearsal `gridbots repro` runs beside a first run (flows/pipeline/rehearsal.py): the same
stages as the user's profile in dvc's order, at their smallest, in a scratch folder that never
reaches the user's outputs and is gone afterwards."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from flows.pipeline.dependencies import stages
from flows.pipeline.rehearsal import (
    LOG,
    SCRATCH,
    mirror,
    needed,
    real_position,
    rehearsal_profile,
    stage_order,
)

REPO = Path(__file__).resolve().parent.parent


def test_stage_order_runs_the_makers_of_a_stages_inputs_first():
    hand_made = {
        "report": {"deps": ["evaluation/c4", "code"], "outs": ["reports/pipeline"]},
        "evaluate": {"deps": ["exports/c4"], "outs": ["evaluation/c4"]},
        "generate": {"deps": ["code"], "outs": ["data/c4/randomized"]},
        "export": {"deps": ["trained/c4/hmm/run.json"], "outs": ["exports/c4"]},
        "train": {"deps": ["data/c4"], "outs": ["trained/c4/hmm"]},
    }
    assert stage_order(hand_made) == ["generate", "train", "export", "evaluate", "report"]


def test_the_projects_stages_come_in_dvcs_order():
    """dvc.yaml's stages, each after every stage that writes one of its deps (what `dvc
    repro` needs), and each chain in the order `dvc repro` printed it on make demo."""
    real = stages(REPO)
    order = stage_order(real)
    assert sorted(order) == sorted(real)
    position = {name: i for i, name in enumerate(order)}
    for name, stage in real.items():
        for dep in stage["deps"]:
            for maker, other in real.items():
                if any(out == dep or dep.startswith(f"{out}/") for out in other["outs"]):
                    assert position[maker] < position[name], (maker, name)
    assert order[:6] == [
        "sources",  # the stamps of the source files (flows.pipeline.dependencies) come first
        "zoo-import",
        "generate-connect4@randomized",
        "generate-connect4@battle",
        "generate-connect4@imitation",
        "generate-connect4@selfplay",
    ]  # fmt: skip (as `dvc repro --dry` prints it)
    assert order[-3:] == ["playerzero@connect4", "playerzero@tactics", "report"]


def test_the_smallest_profile_has_every_stage_of_the_real_one(tmp_path):
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    small = rehearsal_profile(params)
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(small, sort_keys=False))
    (tmp_path / "dvc.yaml").symlink_to(REPO / "dvc.yaml")
    assert list(stages(tmp_path)) == list(stages(REPO))  # the same stages, the same order
    for game in small["games"]:
        for name, dataset in (small[game].get("datasets") or {}).items():
            options = dataset["options"]
            if dataset.get("technique", name) == "thorough":
                assert options["x"] == 2  # a depth
            else:
                assert options["x"] == options["shard_size"] <= 12
        for model in (small[game].get("models") or {}).values():
            assert all(len(values) == 1 for values in model["sweep"].values())
            assert model["params"].get("epochs", 1) == 1
            assert model["params"].get("generations", 1) == 1
    assert small["othello"]["models"]["td"]["params"]["games"] == 1  # a TD network
    for loop in small["playerzero"].values():
        assert (loop["first"]["games"], loop["selfplay"]["games"], loop["generations"]) == (2, 2, 2)


def test_the_real_run_is_at_the_first_stage_dvc_lock_does_not_record(tmp_path):
    order = ["generate", "validate", "encode", "train"]
    assert real_position(tmp_path, order) == 0  # no dvc.lock yet: dvc runs the first stage
    (tmp_path / "dvc.lock").write_text(
        "schema: '2.0'\nstages:\n  generate:\n    cmd: gridbots stage generate\n"
        "    deps:\n    - path: engine\n  validate:\n    cmd: gridbots stage validate\n"
    )
    assert real_position(tmp_path, order) == 2
    (tmp_path / "dvc.lock").write_text("".join(f"  {name}:\n" for name in order))
    assert real_position(tmp_path, order) == 4  # all done: nothing left to rehearse


def test_the_scratch_folder_links_what_stages_read_and_no_output(tmp_path):
    root, scratch = tmp_path / "repo", tmp_path / "scratch"
    for path in ("code/a.py", "reports/study.md", "reports/pipeline/README.md",
                 "data/c4/shard.parquet", "mlflow.db"):  # fmt: skip
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text("x")
    (root / "dvc.yaml").write_text("stages: {}")
    mirror(root, scratch, {
        "generate": {"deps": ["code"], "outs": ["data/c4"]},
        "report": {"deps": ["code/a.py", "reports/study.md"], "outs": ["reports/pipeline"]},
    })  # fmt: skip
    assert (scratch / "code").is_symlink() and (scratch / "dvc.yaml").is_symlink()
    assert not (scratch / "reports").is_symlink()  # it holds an output: a folder of its own
    assert (scratch / "reports" / "study.md").resolve() == root / "reports" / "study.md"
    for private in ("reports/pipeline", "data", "mlflow.db"):
        assert not os.path.lexists(scratch / private)


def test_a_first_run_is_one_with_no_kernel_compiled_yet(tmp_path):
    (tmp_path / "dvc.yaml").write_text("stages: {}")
    (tmp_path / "engine" / "__pycache__").mkdir(parents=True)
    first = needed(tmp_path)
    (tmp_path / "engine" / "__pycache__" / "connect4.step-12.py311.nbi").write_bytes(b"")
    assert not needed(tmp_path)
    assert first == (len(os.sched_getaffinity(0)) >= 2)


@pytest.mark.slow
def test_a_rehearsal_leaves_nothing_but_its_log(tmp_path):
    """A stage that writes its output: the rehearsal runs it in its scratch folder, then
    removes the folder; the checkout gets no output, no MLflow store, no Prefect database."""
    for package in ("engine", "agents", "features", "models", "flows"):
        (tmp_path / package).symlink_to(REPO / package)
    (tmp_path / "params.yaml").write_text((REPO / "params.yaml").read_text())
    (tmp_path / ".dvc").mkdir()  # an initialised repository, as `gridbots repro` leaves it
    generate = "gridbots stage generate connect4"  # a stage: the rehearsal runs no other command
    (tmp_path / "dvc.yaml").write_text(yaml.safe_dump({"stages": {
        "first": {"cmd": f"{generate} battle", "deps": ["engine"],
                  "outs": ["data/connect4/battle"]},
        "data": {"cmd": f"{generate} randomized", "deps": ["engine"],
                 "outs": ["data/connect4/randomized"]},
    }}, sort_keys=False))  # fmt: skip
    before = sorted(p.name for p in tmp_path.iterdir())
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "MLFLOW_"))}
    done = subprocess.run([sys.executable, "-m", "flows.pipeline.rehearsal", str(tmp_path)],
                          cwd=REPO, env={**env, "PYTHONPATH": str(REPO)}, capture_output=True,
                          text=True, timeout=900,  # a hang guard: niced to the idle core
                          start_new_session=True)  # as `start` does  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "rehearsal: first skipped (dvc is there)" in done.stdout  # no dvc.lock: dvc starts
    assert "rehearsal: data rc=0" in done.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no data/, no mlflow.db
    assert not (tmp_path / SCRATCH).exists() and not (tmp_path / LOG).exists()
