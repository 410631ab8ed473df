"""The warm stage host (flows/pipeline/host.py): a stage run through it makes what the same stage
makes in a process of its own, in a forked child (not the caller); its exit code and its one
stderr line reach the caller; a caller killed mid-stage takes the child with it; a caller whose
import-time environment differs from the host's runs the stage itself."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from flows.pipeline.host import ENV, start_host, wait_ready

REPO = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore")]


def _params(root: Path, agent: str = "mcts:sims=20", games: int = 4) -> Path:
    params = {
        "games": ["connect4"],
        "workers": 1,
        "dask": {"address": ""},
        "connect4": {"spec": "connect4", "datasets": {"selfplay": {
            "seed": 3, "options": {"x": games, "shard_size": 2, "agent": agent}}}},
    }  # fmt: skip
    path = root / "params.yaml"
    path.write_text(json.dumps(params))
    return path


@pytest.fixture(scope="module")
def host(prefect_api):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", ENV))}
    env.update(PYTHONPATH=str(REPO), PREFECT_API_URL=prefect_api)
    process, env = start_host(env)
    try:
        assert wait_ready(process, env, timeout=180)  # bound once its imports are done
        yield process, env
    finally:
        process.terminate()
        process.wait(timeout=30)
    assert not Path(env[ENV]).parent.exists()  # its socket and folder went with it


def test_a_host_stopped_while_it_imports_leaves_nothing(tmp_path):
    process, env = start_host({**os.environ, "PYTHONPATH": str(REPO)})
    time.sleep(2.0)  # still importing (its imports take several seconds)
    process.terminate()
    process.wait(timeout=30)
    assert not Path(env[ENV]).parent.exists()


def _stage(root: Path, env: dict[str, str], *args: str, wait: bool = True, game: str = "connect4"):
    command = [sys.executable, "-m", "flows.cli", "stage", "generate", game, *args]
    process = subprocess.Popen(command, cwd=root, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)  # fmt: skip
    if not wait:
        return process
    out, err = process.communicate(timeout=300)
    return process.pid, process.returncode, out, err


def _maker_pids(root: Path) -> set[int]:
    run = json.loads((root / "metrics" / "connect4" / "generate-selfplay.json").read_text())
    return {int(s["worker"].rpartition(":")[2]) for s in run["shards"].values()}


def _hash(root: Path) -> str:
    manifest = json.loads((root / "data" / "connect4" / "selfplay" / "manifest.json").read_text())
    return manifest["content_hash"]


def test_a_stage_through_the_host_makes_what_its_own_process_makes(host, tmp_path):
    process, env = host
    warm, alone = tmp_path / "warm", tmp_path / "alone"
    for root in (warm, alone):
        root.mkdir()
        _params(root)
    pid, code, out, err = _stage(warm, env, "selfplay")
    assert code == 0, err
    assert "data/connect4/selfplay" in out  # the child's stdout is the caller's
    assert pid not in _maker_pids(warm)  # made by the host's child, not the caller
    # the child exits just after it sends the code, then the host reaps it; a host that never
    # did would hang here, so a generous guard turns that into a failure with its message
    _gone, alive = psutil.wait_procs(psutil.Process(process.pid).children(), timeout=300)
    assert not alive, f"the host never reaped its stage children {alive}"
    assert psutil.Process(process.pid).children() == []
    plain = {k: v for k, v in env.items() if k != ENV}
    pid, code, _out, err = _stage(alone, plain, "selfplay")
    assert code == 0, err
    assert _maker_pids(alone) == {pid}  # no host: the caller made it
    assert _hash(warm) == _hash(alone)


def test_bad_input_gives_the_callers_one_line_and_exit_code_2(host, tmp_path):
    _process, env = host
    _params(tmp_path)
    _pid, code, _out, err = _stage(tmp_path, env, "no-such-dataset")
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and "no-such-dataset" in err, err


def _othello_tree(root: Path) -> None:
    """Othello's depth-7 tree: one compiled call that holds the GIL for many minutes."""
    params = {"games": ["othello"], "workers": 1, "dask": {"address": ""},
              "othello": {"spec": "othello", "datasets": {"thorough": {
                  "seed": 21, "options": {"x": 7, "y": 4}}}}}  # fmt: skip
    (root / "params.yaml").write_text(json.dumps(params))


def _stage_processes(host: int, since: float) -> list[psutil.Process]:
    """The host's children started since `since` and still running, with their own children: a
    child of an earlier test that the host has not reaped yet is none of them."""
    found = []
    for child in psutil.Process(host).children():
        try:
            if child.create_time() >= since and child.status() != psutil.STATUS_ZOMBIE:
                found += [child, *child.children(recursive=True)]
        except psutil.NoSuchProcess:
            continue
    return found


@pytest.mark.parametrize("work", ["selfplay", "one-long-compiled-call"])
def test_a_killed_caller_takes_its_stage_with_it(host, tmp_path, work):
    process, env = host
    if work == "selfplay":
        _params(tmp_path, agent="mcts:sims=200000", games=40)
        game, args = "connect4", ("selfplay",)
    else:
        _othello_tree(tmp_path)
        game, args = "othello", ("thorough",)
    since = time.time() - 1.0  # create_time is rounded
    caller = _stage(tmp_path, env, *args, wait=False, game=game)
    deadline = time.time() + 120
    while not _stage_processes(process.pid, since):  # the stage's child is running
        assert caller.poll() is None and time.time() < deadline, caller.communicate()
        time.sleep(0.05)
    time.sleep(3.0)
    group = _stage_processes(process.pid, since)  # the stage and its watcher
    os.kill(caller.pid, signal.SIGKILL)
    caller.wait()
    gone, alive = psutil.wait_procs(group, timeout=30)
    assert not alive and len(gone) == len(group)
    folder = tmp_path / "data" / game / args[0]
    assert not (folder / "manifest.json").is_file() or not json.loads(
        (folder / "manifest.json").read_text()
    ).get("complete")


@pytest.mark.parametrize("setting", [("PREFECT_LOGGING_LEVEL", "ERROR"), ("GRIDBOTS_VERBOSE", "1")])
def test_a_different_import_time_environment_runs_the_stage_itself(host, tmp_path, setting):
    _process, env = host
    _params(tmp_path)
    pid, code, _out, err = _stage(tmp_path, {**env, setting[0]: setting[1]}, "selfplay")
    assert code == 0, err
    assert _maker_pids(tmp_path) == {pid}


def test_a_stage_killed_in_the_host_fails_its_caller_and_is_not_run_twice(host, tmp_path):
    process, env = host
    _params(tmp_path, agent="mcts:sims=200000", games=40)
    since = time.time() - 1.0  # create_time is rounded
    caller = _stage(tmp_path, env, "selfplay", wait=False)
    deadline = time.time() + 120
    # killed once its watcher runs, which holds the caller's connection too
    while len(_stage_processes(process.pid, since)) < 2:
        assert caller.poll() is None and time.time() < deadline, caller.communicate()
        time.sleep(0.05)
    stage, watcher = _stage_processes(process.pid, since)[:2]
    stage.kill()  # the OOM killer, say
    _out, err = caller.communicate(timeout=60)
    assert caller.returncode == 1
    assert err.strip().splitlines()[-1].endswith("ended without an exit code"), err
    watcher.wait(timeout=30)
    assert not (tmp_path / "data" / "connect4" / "selfplay" / "manifest.json").is_file() or not (
        json.loads((tmp_path / "data" / "connect4" / "selfplay" / "manifest.json").read_text()).get(
            "complete"
        )
    )
