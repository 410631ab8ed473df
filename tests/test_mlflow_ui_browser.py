"""MLflow's own UI in a real browser: `mlflow server` on 127.0.0.1 (a free port, stopped by its
PID) over a tiny sandbox store, Playwright driving Debian's Chromium.

The store holds a sweep of test_tracking's stand-in family (a parent run and two nested runs,
each with its encoded file as an MLflow input), so the page has runs, a Dataset column and a
registered version. The game's experiment, opened by the link gridbots prints
(models.tracking.ui_url), shows the training runs, not MLflow 3's GenAI overview of traces.
GRIDBOTS_SCREENSHOTS=DIR keeps the view as DIR/mlflow-training-runs.png (64 colours).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request

import pytest
from browser import chromium, free_port, shot, stop_group
from test_tracking import make_dataset, mlflow_sandbox

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::UserWarning")]


@pytest.fixture(scope="module")
def mlflow_ui(tmp_path_factory):
    """(UI address, the connect4 experiment's id, its run names) of `mlflow server` over a
    sandbox store holding a registered sweep."""
    from models.tracking import client, train

    folder = tmp_path_factory.mktemp("mlflow-ui")
    with mlflow_sandbox(folder, tmp_path_factory.getbasetemp()):
        data = make_dataset(folder / "counts.npz", "board-onehot", manifest_hash="c0ffee")
        outcome = train(data, "stub", {"center": "true"}, sweep=["width=1,3"], register=True)
        names = [client().get_run(r.run_id).info.run_name for r in outcome.runs]
        port = free_port()
        command = [sys.executable, "-m", "mlflow", "server", "--backend-store-uri",
                   os.environ["MLFLOW_TRACKING_URI"], "--host", "127.0.0.1", "--port", str(port),
                   "--workers", "1"]  # fmt: skip
        log = (folder / "server.log").open("w")
        server = subprocess.Popen(
            command, cwd=folder, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            env={**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"},
        )  # fmt: skip
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 180  # a hang guard: the server imports MLflow first
            while True:
                try:
                    urllib.request.urlopen(f"{url}/health", timeout=2).close()
                    break
                except OSError:
                    if server.poll() is not None or time.monotonic() > deadline:
                        pytest.fail(f"mlflow server: {(folder / 'server.log').read_text()[-2000:]}")
                    time.sleep(0.5)
            yield url, outcome.experiment_id, names
        finally:
            stop_group(server, 20)
            log.close()


@pytest.fixture(scope="module")
def page(mlflow_ui):
    with chromium() as browser:
        yield browser.new_page(viewport={"width": 1280, "height": 720})


def test_the_game_experiment_opens_on_its_training_runs(mlflow_ui, page):
    from models.tracking import ui_url

    base, experiment, names = mlflow_ui
    page.goto(ui_url(base, experiment))
    # the runs table, with the sweep's parent and the dataset each child trained on
    page.get_by_text("connect4-stub-sweep").first.wait_for(timeout=120_000)
    assert "/runs" in page.url and "/overview" not in page.url
    table = page.inner_text("body")
    assert "Run Name" in table and "Dataset" in table
    assert "Detect Issues" not in table and "Token Usage" not in table  # the GenAI overview
    page.get_by_role("button", name="Close").last.click()  # MLflow's assistant: not ours
    sweep = page.locator("[role=row]", has_text="connect4-stub-sweep").first
    page.get_by_text("counts.npz").first.wait_for(timeout=30_000)  # the Dataset column
    sweep.locator("button").first.click()  # its nested runs, one a configuration
    for name in names:
        page.get_by_text(name, exact=True).first.wait_for(timeout=30_000)
    shot(page, "mlflow-training-runs.png")
