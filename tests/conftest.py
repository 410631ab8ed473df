"""Shared test settings: no telemetry, patience for Prefect, hypothesis profiles (CI, desk)."""

import atexit
import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

from engine.noise import TELEMETRY_OFF

# The user's own state never reaches a test: after `make demo` the checkout holds mlflow.db (a
# registry with production bots), and a CLI a test starts in the checkout would open it (the
# default tracking URI is relative to the working folder), as would any store the user's shell
# names. Every test process and everything it starts gets an empty store and model cache of its
# own instead; a test that wants a store sets MLFLOW_TRACKING_URI itself.
_SCRATCH = Path(tempfile.mkdtemp(prefix="gridbots-tests-"))
atexit.register(shutil.rmtree, _SCRATCH, ignore_errors=True)
os.environ["MLFLOW_TRACKING_URI"] = f"sqlite:///{_SCRATCH / 'mlflow.db'}"
os.environ["GRIDBOTS_MODEL_CACHE"] = str(_SCRATCH / "model-cache")

for key, value in {
    **TELEMETRY_OFF,  # the test servers' heartbeats too
    # a Prefect server started by a stage waits longer on two busy cores than the default 20 s
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "180",
    # two workers on two cores, each one thread of compute (the stages and CLIs they start
    # inherit it): TensorFlow's and onnxruntime's pools sized to every core, spinning when idle,
    # made four threads fight for two
    "OMP_NUM_THREADS": "1",
    "TF_NUM_INTRAOP_THREADS": "1",
    "TF_NUM_INTEROP_THREADS": "1",
}.items():
    os.environ.setdefault(key, value)

import sys  # noqa: E402

import absl.logging  # noqa: E402
import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

# absl's log handler (TensorFlow's) keeps the sys.stderr of its import: in a test process a
# capture stream. When Prefect's logging setup later clears the handlers, absl closes that
# stream unless it is the current sys.stderr, which under capsys it is not: every later test
# of the worker then errored with "I/O operation on closed file" (test_study000's CLI test after
# test_promotion_trained). The real stderr it never closes.
absl.logging.get_absl_handler().python_handler.setStream(sys.__stderr__)

# properties get a real budget in CI (`CI=true`, what .ci/run sets), a quick one at a desk; both
# derandomized, so a failure reproduces, and a test may still cap an expensive property lower
settings.register_profile(
    "ci",
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)
settings.register_profile(
    "default",
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)
settings.load_profile("ci" if os.environ.get("CI") else "default")

#: wall seconds of the modules that take longest (a cold run as CI runs it: a clean clone,
#: 2 cores, 2026-11-28, setup + call + teardown summed per module). xdist keeps a module on one
#: worker (`--dist loadscope`) and, with `--no-loadscope-reorder`, hands modules out in
#: collection order: longest first, so the last module to start is a short one and neither
#: worker runs alone at the end. Unlisted modules (a few seconds each) keep their order after
#: these. Refresh when a module grows a lot.
MODULE_SECONDS = {
    "test_dvc_repro.py": 160, "test_playerzero_loop.py": 114, "test_cluster.py": 83,
    "test_pipeline.py": 59, "test_thorough.py": 38, "test_protocol.py": 37, "test_cli.py": 34,
    "test_stage_host.py": 33, "test_value_leaf.py": 30, "test_promotion_trained.py": 24,
    "test_hps.py": 15,
    "test_validate_corruptions.py": 21, "test_sealed_bots.py": 20, "test_web_browser.py": 13,
    "test_value_mlp.py": 13, "test_readme.py": 12, "test_human_play.py": 12,
    "test_territory.py": 11, "test_td.py": 11, "test_stage_train_resume.py": 10,
    "test_lstm.py": 10, "test_play_cli.py": 9, "test_validate.py": 9, "test_puct.py": 9,
    "test_scaffold.py": 8, "test_playerzero.py": 8, "test_match.py": 7, "test_store.py": 7,
    "test_c4bench.py": 7, "test_stage_resume.py": 7, "test_alphabeta.py": 6,
    # added 2026-12-07, from their authors' runs on a loaded machine (refresh from a cold run)
    "test_mlflow_native.py": 90, "test_dvc_share.py": 80, "test_bundle.py": 55,
    "test_openspiel_bots.py": 45, "test_openspiel_games.py": 30, "test_mlflow_ui_browser.py": 20,
    "test_zoo_import.py": 50, "test_zoo_chains.py": 90, "test_fuzz_inputs.py": 40,
}  # fmt: skip


def pytest_collection_modifyitems(items):
    items.sort(key=lambda item: -MODULE_SECONDS.get(item.path.name, 0))  # stable


@pytest.fixture(scope="session")
def prefect_api(tmp_path_factory) -> Iterator[str]:
    """The API URL of one Prefect server (a fresh SQLite store) shared by every module of a test
    worker that runs flows: starting one costs ~15 CPU-seconds, and five modules each started
    their own (prefect_test_harness). Only the URL is shared, no settings: a module that runs
    flows in this process sets PREFECT_API_URL for itself (temporary_settings), so contexts
    still nest."""
    from prefect.server.api.server import SubprocessASGIServer
    from prefect.settings import PREFECT_SERVER_DATABASE_CONNECTION_URL, temporary_settings

    store = tmp_path_factory.mktemp("prefect") / "prefect.db"
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with temporary_settings(
        updates={PREFECT_SERVER_DATABASE_CONNECTION_URL: f"sqlite+aiosqlite:///{store}"}
    ):
        server = SubprocessASGIServer(port=port)  # the store is read when it starts
        server.start(timeout=180)
    try:
        yield server.api_url
    finally:
        server.stop()
