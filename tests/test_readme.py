"""The README's first screen: what a newcomer types after `make demo`, each line run by a test.

FIRST_SCREEN is the README's opening code block, line for line; the tests that run each
command name it from here: `play` (test_human_play), `where` and `match` (test_pipeline, on a
pipeline's real outputs), `make ui` below, `make demo` / `make test` (CI itself).
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FIRST_SCREEN = [
    "make demo",
    ".venv/bin/gridbots play connect4",
    ".venv/bin/gridbots where",
    "make ui",
    # a version, not @production: the gate refuses a demo-scale value MLP that loses to the zoo
    ".venv/bin/gridbots match connect4 registry:connect4-value-mlp/1 alphabeta:depth=2 --games 20",
    "make test",
]


def readme_first_screen() -> list[str]:
    block = re.search(r"```\n(.*?)```", (REPO / "README.md").read_text(), re.S).group(1)
    return [line.split("  #")[0].strip() for line in block.splitlines() if line.strip()]


def test_the_first_screen_is_the_tested_commands():
    assert readme_first_screen() == FIRST_SCREEN
    makefile = (REPO / "Makefile").read_text()
    assert "ui: $(STAMP)\n\t$(BIN)/gridbots ui" in makefile  # what `make ui` runs


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _get(url: str, seconds: float) -> int:
    deadline = time.time() + seconds
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as answer:  # our own local server
                return answer.status
        except OSError:
            if time.time() > deadline:
                raise
            time.sleep(1)


@pytest.mark.slow
def test_make_ui_serves_prefect_and_mlflow_on_localhost(tmp_path):
    """`make ui` = `gridbots ui`: both UIs answer on 127.0.0.1, Ctrl-C stops both."""
    prefect, mlflow = _free_port(), _free_port()
    env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'mlflow.db'}"}
    env.pop("PREFECT_API_URL", None)
    log = (tmp_path / "ui.stderr").open("w")  # a file, not a pipe nobody reads until the end
    ui = subprocess.Popen(
        [sys.executable, "-m", "flows.cli", "ui", "--prefect-port", str(prefect),
         "--mlflow-port", str(mlflow)],
        cwd=tmp_path, env={**env, "PYTHONPATH": str(REPO)}, stdout=subprocess.PIPE,
        stderr=log, text=True,
    )  # fmt: skip
    try:
        lines = [ui.stdout.readline() for _ in range(3)]  # printed once Prefect is healthy
        assert lines[0].startswith(f"Prefect UI: http://127.0.0.1:{prefect}"), lines
        assert lines[1].startswith(f"MLflow UI:  http://127.0.0.1:{mlflow}"), lines
        assert _get(f"http://127.0.0.1:{prefect}/api/health", 60) == 200
        assert _get(f"http://127.0.0.1:{mlflow}/", 240) == 200
    finally:
        ui.send_signal(signal.SIGINT)
        try:
            ui.wait(timeout=60)
        except subprocess.TimeoutExpired:
            ui.kill()
            ui.wait()
    log.close()
    assert ui.returncode == 0, (tmp_path / "ui.stderr").read_text()[-3000:]
    for port in (prefect, mlflow):  # both servers (and their server children) are gone
        with socket.socket() as probe:
            assert probe.connect_ex(("127.0.0.1", port)) != 0, f"port {port} still answers"
