"""`gridbots repro` stopped by a signal takes dvc's whole process group with it (dvc, the stage
it runs, whatever that stage started) and exits with the signal's code, instead of leaving dvc
running stages on its own. dvc here is a stand-in that starts a "stage" ignoring SIGINT, the
hardest case: it must still be gone."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from flows.cluster.local import group_members

pytestmark = pytest.mark.slow  # real process groups killed by signals

REPO = Path(__file__).resolve().parent.parent
FAKE_DVC = """#!/bin/sh
echo $$ > dvc.pid
sleep 600 &
echo $! > stage.pid
wait
"""


def test_a_terminated_repro_leaves_nothing_of_dvc_running(tmp_path):
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "dvc").write_text(FAKE_DVC)
    (tools / "dvc").chmod(0o755)
    (tmp_path / ".dvc").mkdir()  # an initialised repository: repro runs `dvc repro` directly
    env = {**os.environ, "PATH": f"{tools}{os.pathsep}{os.environ['PATH']}",
           "PYTHONPATH": str(REPO), "PREFECT_API_URL": "http://127.0.0.1:9/api"}  # fmt: skip
    repro = subprocess.Popen([sys.executable, "-m", "flows.cli", "repro"], cwd=tmp_path,
                             env=env, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        _terminate_and_check(repro, tmp_path)
    finally:  # a failure leaves nothing behind either
        _stop(repro)
        for name in ("dvc.pid", "stage.pid"):
            with contextlib.suppress(OSError, ValueError):
                os.kill(int((tmp_path / name).read_text()), signal.SIGKILL)


def _terminate_and_check(repro: subprocess.Popen, tmp_path: Path) -> None:
    deadline = time.time() + 120
    while not (tmp_path / "stage.pid").is_file() or not (tmp_path / "stage.pid").read_text():
        assert repro.poll() is None and time.time() < deadline
        time.sleep(0.1)
    dvc = int((tmp_path / "dvc.pid").read_text())
    stage = int((tmp_path / "stage.pid").read_text())
    assert os.getpgid(stage) == dvc  # the stage runs in dvc's group, as dvc's stages do

    repro.send_signal(signal.SIGTERM)
    _, err = repro.communicate(timeout=120)
    assert repro.returncode == 128 + signal.SIGTERM
    assert err.strip().splitlines()[-1] == (
        "gridbots: repro stopped by SIGTERM; run it again to resume"
    )
    assert group_members(dvc) == []  # dvc and the stage that ignored SIGINT: both gone


def test_a_terminated_repro_stops_its_rehearsal_and_removes_its_folder(tmp_path):
    """The rehearsal beside dvc (pipeline/rehearsal.py) runs in a group of its own: it goes with
    repro wherever it is (importing, or in its long stage: it is niced, so on a busy machine it
    may not have started that yet), and no scratch folder is left in .dvc/tmp, not even one a
    killed rehearsal left before (created here, so the check holds whenever the stop comes)."""
    import yaml

    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "dvc").write_text(FAKE_DVC)
    (tools / "dvc").chmod(0o755)
    (tmp_path / ".dvc").mkdir()
    (tmp_path / "params.yaml").write_text((REPO / "params.yaml").read_text())
    long_match = "gridbots match connect4 mcts:sims=200000 mcts:sims=200000 --games 50"
    (tmp_path / "dvc.yaml").write_text(yaml.safe_dump(
        {"stages": {"long": {"cmd": long_match, "deps": [], "outs": ["out"]}}}))  # fmt: skip
    env = {**os.environ, "PATH": f"{tools}{os.pathsep}{os.environ['PATH']}",
           "PYTHONPATH": str(REPO), "PREFECT_API_URL": "http://127.0.0.1:9/api"}  # fmt: skip
    repro = subprocess.Popen([sys.executable, "-m", "flows.cli", "repro", "--rehearse"],
                             cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True)  # fmt: skip
    scratch = tmp_path / ".dvc" / "tmp" / "rehearsal"
    scratch.mkdir(parents=True)  # as a killed rehearsal leaves it: repro must remove it anyway
    (scratch / "params.yaml").write_text("games: []\n")
    rehearsal = None
    try:
        deadline = time.time() + 180
        while rehearsal is None:
            assert repro.poll() is None and time.time() < deadline
            rehearsal = _process_running("flows.pipeline.rehearsal", str(tmp_path))
            time.sleep(0.2)
        _terminate_and_check(repro, tmp_path)
        assert group_members(rehearsal) == []  # the rehearsal and its long match
        assert not scratch.exists()
    finally:
        _stop(repro)
        for pid in filter(None, [rehearsal]):
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)
        for name in ("dvc.pid", "stage.pid"):
            with contextlib.suppress(OSError, ValueError):
                os.kill(int((tmp_path / name).read_text()), signal.SIGKILL)


def _process_running(*words: str) -> int | None:
    """The pid of a process whose command line holds every word."""
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            line = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
            if entry.name.isdigit() and all(word in line for word in words):
                return int(entry.name)
    return None


def _stop(repro: subprocess.Popen) -> None:
    """A failed test's repro is stopped as a user would, so it takes its stage host, server and
    rehearsal with it (a SIGKILL alone left its host running), then killed if it hangs."""
    if repro.poll() is None:
        repro.terminate()
        try:
            repro.wait(timeout=60)
        except subprocess.TimeoutExpired:
            repro.kill()
