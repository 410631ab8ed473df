"""Shared test settings: no telemetry, patience for Prefect, hypothesis profiles (CI, desk)."""

import os

for key, value in {
    "DO_NOT_TRACK": "1",
    "MLFLOW_DISABLE_TELEMETRY": "1",
    "DVC_NO_ANALYTICS": "1",
    "GX_ANALYTICS_ENABLED": "false",
    # a Prefect server started by a stage waits longer on two busy cores than the default 20 s
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "180",
}.items():
    os.environ.setdefault(key, value)

from hypothesis import HealthCheck, settings  # noqa: E402

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

#: wall seconds of the modules that take longest (one warm run on 2 cores, `--durations=0`,
#: summed per module). xdist keeps a module on one worker (`--dist loadscope`) and, with
#: `--no-loadscope-reorder`, hands modules out in collection order: longest first, so the last
#: module to start is a short one and neither worker runs alone at the end. Unlisted modules
#: (a few seconds each) keep their order after these. Refresh when a module grows a lot.
MODULE_SECONDS = {
    "test_dvc_repro.py": 189, "test_playerzero_loop.py": 124, "test_pipeline.py": 74,
    "test_cluster.py": 66, "test_protocol.py": 49, "test_cli.py": 45,
    "test_validate_corruptions.py": 44, "test_sealed_bots.py": 24, "test_readme.py": 23,
    "test_stage_train_resume.py": 22, "test_play_cli.py": 21, "test_c4bench.py": 17,
    "test_stage_resume.py": 17, "test_lstm.py": 15, "test_human_play.py": 15,
    "test_promotion_trained.py": 15, "test_store.py": 13, "test_web_browser.py": 12,
    "test_validate.py": 11, "test_value_mlp.py": 11, "test_playerzero.py": 10,
    "test_match.py": 9, "test_territory.py": 8,
}  # fmt: skip


def pytest_collection_modifyitems(items):
    items.sort(key=lambda item: -MODULE_SECONDS.get(item.path.name, 0))  # stable
