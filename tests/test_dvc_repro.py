"""`dvc repro` on a throw-away copy of the repository with a tiny profile.

The real dvc.yaml runs end to end (both games' chains and the report), after a first `dvc repro`
killed with SIGKILL (its whole process group) in the middle of a training stage: the rerun
resumes at that stage, leaves no temporary folder or RUNNING MLflow run behind, and the
interrupted stage's model is the one an undisturbed training makes. A further `dvc repro` does
nothing and says so; changing one parameter marks only the stage that reads it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from engine.noise import TELEMETRY_OFF
from flows.pipeline.host import start_host, wait_ready

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
pytestmark = [pytest.mark.filterwarnings("ignore"), pytest.mark.slow]


def tiny_profile() -> dict:
    """Both chains at their smallest: one dataset, one encoding, one model (HMM) per game."""
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    params["promote"]["games"] = 4
    params["workers"] = 1  # in process: a pool would start and compile per worker on 2 busy cores
    for game, options in (
        ("connect4", {"x": 12, "y": 2, "shard_size": 12}),
        ("lazerbike", {"x": 10, "y": 2, "shard_size": 10}),
    ):
        chain = params[game]
        chain["datasets"] = {"randomized": {"seed": 1, "options": options}}
        chain["validation"] = {"sample": 20, "seed": 0}
        chain["encodings"] = {
            "qualitative": {"encoding": "qualitative", "dataset": "randomized", "options": {}}
        }
        chain["models"] = {
            "hmm": {"family": "hmm", "encoding": "qualitative", "params": {}, "sweep": {}}
        }
        chain["evaluate"] = {"games": 2, "seed": 0, "opening": 0, "baselines": ["random"]}
    tiny_neat = {"generations": 2, "rounds": 40, "config": {"NEAT": {"pop_size": 10}}}
    params["territory"]["models"] = {
        "against-red": {"family": "neat", "case": "against-red", "seeds": [0], "params": tiny_neat}
    }
    params["territory"]["evaluate"] = {"games": 2, "seed": 0, "opening": 2, "baselines": ["random"]}
    # Othello: study 002 (two configurations), one TD network and one count one-hot MLP (issue
    # 14), each a handful of games or one epoch, in one tournament and one gate
    othello = params["othello"]
    othello["study"].update(games=60, matrix_games=2, vary={"rule": ["q", "sarsa"]},
                            minimax={"opponent": "alphabeta:depth=1", "games": 2})  # fmt: skip
    othello["datasets"] = {"thorough": {"seed": 21, "options": {"x": 2, "y": 1}}}
    othello["validation"] = {"sample": 20, "seed": 0}
    othello["encodings"] = {
        "count_onehot": {"encoding": "count-onehot", "dataset": "thorough", "options": {}}
    }
    othello["models"] = {
        "value_mlp": {"family": "value-mlp", "encoding": "count_onehot",
                      "params": {"epochs": 1, "width": 8}, "sweep": {}},
        "td": {"family": "td", "sweep": {"rule": ["q", "sarsa"]},
               "params": {"games": 100, "curve_every": 100, "curve_games": 2,
                          "curve_opponents": ["alphabeta:depth=1"]}},
    }  # fmt: skip
    othello["evaluate"] = {"games": 2, "seed": 0, "opening": 4, "baselines": ["alphabeta:depth=1"]}
    othello["promote"] = {"baseline": "random", "games": 2}
    # the Sokoban chain (issue 14): the smallest level, three planner games, an HMM of every seat
    sokoban = params["sokoban"]
    sokoban["spec"] = "sokoban:level=first"
    sokoban["datasets"] = {
        "planner": {"technique": "imitation", "seed": 31,
                    "options": {"x": 3, "y": 1, "w": 0.0, "agents": ["planner"],
                                "scenario": {"opening": 1}, "shard_size": 3}}
    }  # fmt: skip
    sokoban["validation"] = {"sample": 20, "seed": 0}
    sokoban["encodings"] = {
        "planner": {"encoding": "qualitative", "dataset": "planner", "options": {}}
    }
    sokoban["models"] = {"hmm": {"family": "hmm", "encoding": "planner", "params": {}, "sweep": {}}}
    sokoban["evaluate"] = {"games": 2, "seed": 0, "opening": 1, "baselines": ["random"],
                           "reference": "planner"}  # fmt: skip
    # the PlayerZero stage runs, with no generation (tests/test_playerzero_loop.py runs some)
    for loop in params["playerzero"].values():
        loop.update(generations=0, evaluate={"baselines": []})
    return params


def copy_repo(target: Path, source: Path = REPO) -> None:
    """The files git tracks in `source` (as they are in its working tree), and nothing else: a
    test never starts from the user's state. After `make demo` the checkout holds an untracked
    `dvc.lock` and every ignored output; a copy that took untracked files began from the demo's
    pipeline state, and the repro tests failed after `make demo` while passing on a clean
    clone. A file a developer created but has not `git add`ed is not copied either."""
    listed = (
        subprocess.run(["git", "ls-files", "-z"], cwd=source, capture_output=True, check=True)
        .stdout.decode()
        .split("\0")
    )
    copied = []
    for name in filter(None, listed):
        path = source / name
        if path.is_file() and not name.startswith("tests/"):
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target / name)
            copied.append(target / name)
    share_compiled_code(target, copied)


def share_compiled_code(target: Path, copied: list[Path]) -> None:
    """Points each copied package's `__pycache__` at the checkout's, so the copy's stages load
    the kernels the rest of the suite compiles and the suite loads theirs, instead of each
    compiling all of them again (most of a cold run's time). Safe because numba and Python key
    a cached file on the module's name, the function's line and the source's mtime and size,
    which `copy2` keeps; an edited copy would miss the cache, never load a stale kernel."""
    for package in {p.parent for p in copied if p.suffix == ".py"}:  # not what else is there
        shared = REPO / package.relative_to(target) / "__pycache__"
        shared.mkdir(exist_ok=True)
        (package / "__pycache__").symlink_to(shared, target_is_directory=True)


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


@pytest.fixture(scope="module")
def repo(tmp_path_factory, prefect_api):
    root = tmp_path_factory.mktemp("repo")
    copy_repo(root)
    (root / "params.yaml").write_text(yaml.safe_dump(tiny_profile(), sort_keys=False))
    git(root, "init", "-q")
    git(root, "config", "user.email", "test@example.invalid")
    git(root, "config", "user.name", "test")
    if not (root / ".dvc").is_dir():
        subprocess.run([BIN / "dvc", "init", "-q"], cwd=root, check=True)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "tiny profile")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "PREFECT_", "DVC_"))}
    env.update(
        TELEMETRY_OFF,
        PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}",
        GRIDBOTS_MODEL_CACHE=str(root.parent / "model-cache"),  # outside the repository
    )
    env["PREFECT_API_URL"] = prefect_api  # one server for every stage
    host, env = start_host(env)  # as `gridbots repro` does: stages fork from a warm host
    try:
        assert wait_ready(host, env, timeout=300)  # no stage pays the imports again beside it
        yield root, env
    finally:
        host.terminate()
        host.wait(timeout=60)


def dvc(repo, *args: str) -> subprocess.CompletedProcess:
    root, env = repo
    return subprocess.run(
        [str(BIN / "dvc"), *args], cwd=root, env=env, capture_output=True, text=True, timeout=1200
    )


def running_runs(root: Path) -> int:
    """MLflow runs the store still marks RUNNING (0 before the store exists), the zoo-import
    stage's brief `import NAME` runs aside: the kill waits for a training."""
    try:
        uri = f"file:{root / 'mlflow.db'}?mode=ro"
        with contextlib.closing(sqlite3.connect(uri, uri=True, timeout=5)) as db:
            query = "SELECT count(*) FROM runs WHERE status = 'RUNNING' AND name NOT LIKE ?"
            return db.execute(query, ("import %",)).fetchone()[0]
    except sqlite3.Error:  # not created yet, or its tables not yet
        return 0


def ran(output: str) -> list[str]:
    return re.findall(r"Running stage '([^']+)'", output)


def kill_mid_training(repo) -> tuple[str, set[str]]:
    """Starts `dvc repro`, SIGKILLs its process group once an MLflow run is in flight; returns
    the stage it was running and the stages dvc.lock had recorded as done."""
    root, env = repo
    log = root.parent / "killed-repro.log"
    with log.open("w") as out:
        first = subprocess.Popen([str(BIN / "dvc"), "repro"], cwd=root, env=env, stdout=out,
                                 stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
        deadline = time.time() + 600
        while not running_runs(root):
            assert first.poll() is None, log.read_text()[-3000:]
            assert time.time() < deadline
            time.sleep(0.05)
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
    lock = root / "dvc.lock"
    done = set(yaml.safe_load(lock.read_text())["stages"]) if lock.is_file() else set()
    return ran(log.read_text())[-1], done


def test_repro_killed_resumes_then_does_nothing_then_only_what_changed(repo):
    root, _ = repo
    in_flight, done = kill_mid_training(repo)
    assert in_flight == "train-connect4@hmm" and in_flight not in done
    assert {"generate-connect4@randomized", "encode-connect4@qualitative"} <= done
    first = dvc(repo, "repro")
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    assert ran(first.stdout)[0] == in_flight and not done & set(ran(first.stdout))  # resumed
    assert running_runs(root) == 0
    leftovers = [p for p in root.rglob("*.tmp") if ".dvc" not in p.relative_to(root).parts]
    assert not leftovers  # nor the interrupted training's work folder:
    assert not [p for p in (root / "checkpoints" / "connect4").rglob("*") if p.is_file()]
    assert_trained_like_an_undisturbed_run(root, "connect4", "hmm")
    for game in ("connect4", "lazerbike"):
        verdict = json.loads((root / "validation" / game / "randomized.json").read_text())
        assert verdict["success"]
        assert (root / "evaluation" / game / "games.parquet").is_file()
        promotion = json.loads((root / "promotion" / f"{game}.json").read_text())
        assert set(promotion["families"]) == {"hmm"}
    report = (root / "reports" / "pipeline" / "README.md").read_text()
    assert "## connect4" in report and "## lazerbike" in report and "Production" in report
    assert (
        "## territory" in report
        and (root / "reports" / "pipeline" / "territory" / "README.md").is_file()
    )
    td_study = json.loads((root / "studies" / "othello" / "study.json").read_text())
    assert set(td_study["matrices"]) == {"rule"} and len(td_study["configs"]) == 2
    assert (root / "evaluation" / "othello" / "games.parquet").is_file()
    # Othello's TD network and value MLP: trained by one stage, in one tournament, one gate
    othello = json.loads((root / "evaluation" / "othello" / "summary.json").read_text())
    value_games = [p for p in othello["pairings"] if p["spec_a"] == "value_mlp"]
    assert [p["spec_b"] for p in value_games] == ["alphabeta:depth=1", "td"]
    assert value_games[0]["games"] == 2
    td = json.loads((root / "trained" / "othello" / "td" / "run.json").read_text())
    assert td["family"] == "td" and [c["label"] for c in td["sweep"]] == ["rule=q", "rule=sarsa"]
    promoted = json.loads((root / "promotion" / "othello.json").read_text())["families"]
    assert set(promoted) == {"td", "value-mlp"}
    assert promoted["value-mlp"]["model"] == "othello-value-mlp"
    assert [d["version"] for d in promoted["value-mlp"]["decisions"]] == ["1"]
    assert "## othello: TD learners (study 002)" in report and "(53)" in report
    # the Sokoban chain: success rates per level beside the planner, the HMM through the gate
    sokoban = json.loads((root / "evaluation" / "sokoban" / "summary.json").read_text())
    levels = {r["spec"]: r for r in sokoban["levels"]}
    assert set(levels) == {"hmm", "random", "planner"}
    assert levels["planner"]["success_rate"] == 1.0 and levels["planner"]["attempts"] == 2
    assert {r["level"] for r in sokoban["levels"]} == {"sokoban"}  # level `first`, the default
    promoted = json.loads((root / "promotion" / "sokoban.json").read_text())["families"]
    assert promoted["hmm"]["model"] == "sokoban-hmm"
    assert "## sokoban" in report and "laps vs reference" in report
    # study14: study 000's tables (flows/reports/study000.py), naming the profile that produced them
    study000 = (root / "reports" / "pipeline" / "study-000.md").read_text()
    assert "**default** profile" in study000 and "| HMM (not played) | random |" in study000
    lock = yaml.safe_load((root / "dvc.lock").read_text())
    assert "train-connect4@hmm" in lock["stages"] and "report" in lock["stages"]
    assert "playerzero@connect4" in lock["stages"]
    # every zoo entry was registered first, as its name's first version (Connect 4's too)
    assert "zoo-import" in lock["stages"]
    imported = json.loads((root / "imports" / "zoo.json").read_text())["entries"]
    entries = {f"{p.parent.parent.name}-{p.parent.name}" for p in root.glob("zoo/*/*/card.json")}
    assert {(r["name"], r["version"]) for r in imported} == {(n, "1") for n in entries}
    assert "connect4-playerzero" in entries
    assert "connect4-playerzero v1 (`registry:connect4-playerzero/1`)" in report
    assert (root / "playerzero" / "connect4" / "state.json").is_file()
    # outputs were ignored up front: the run leaves nothing in git's view but its lock
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=root,
                            capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert status.splitlines() == ["?? dvc.lock"], status

    again = dvc(repo, "repro")
    assert again.returncode == 0
    assert "Running stage" not in again.stdout
    assert "didn't change, skipping" in again.stdout or "is up to date" in again.stdout

    params = yaml.safe_load((root / "params.yaml").read_text())
    params["lazerbike"]["evaluate"]["games"] = 4
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    status = dvc(repo, "status", "--json")
    changed = set(json.loads(status.stdout))
    assert changed == {"evaluate-lazerbike"}, status.stdout


def test_a_copy_of_a_checkout_that_ran_the_pipeline_starts_from_nothing(repo, tmp_path):
    """The state `make demo` leaves (a real dvc.lock, every output, mlflow.db), here the one the
    test above left in its copy, never reaches a test's copy: the copy holds exactly the tracked
    files, and DVC there sees every stage still to run."""
    root, env = repo
    assert (root / "dvc.lock").is_file() and (root / "trained").is_dir()  # the demo-like state
    copy = tmp_path / "copy"
    copy.mkdir()
    copy_repo(copy, source=root)
    tracked = subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True,
                             check=True).stdout.split()  # fmt: skip
    copied = {
        p.relative_to(copy).as_posix()
        for p in copy.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    assert copied == {name for name in tracked if not name.startswith("tests/")}
    for state in ("dvc.lock", "mlflow.db", "data", "trained", "evaluation", "promotion"):
        assert not (copy / state).exists(), state
    git(copy, "init", "-q")
    status = subprocess.run([str(BIN / "dvc"), "status", "--json"], cwd=copy, env=env,
                            capture_output=True, text=True, timeout=600)  # fmt: skip
    assert status.returncode == 0, status.stderr
    lock = yaml.safe_load((root / "dvc.lock").read_text())
    assert set(lock["stages"]) <= set(json.loads(status.stdout))  # every stage: to run


def assert_trained_like_an_undisturbed_run(root: Path, game: str, name: str) -> None:
    """The stage's model equals the family trained directly on the same encoded data."""
    from features.encode import load
    from models import hmm

    settings = yaml.safe_load((root / "params.yaml").read_text())[game]["models"][name]
    arrays, meta = load(root / "encoded" / game / f"{settings['encoding']}.npz")
    out = root.parent / f"undisturbed-{game}-{name}"
    hmm.train(arrays, meta, dict(settings["params"]), out)
    made = json.loads((root / "trained" / game / name / "model.json").read_text())
    assert made == json.loads((out / "model.json").read_text())
