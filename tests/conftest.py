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

#: modules that take minutes (whole pipeline chains): collected first, so that with xdist's
#: module groups they start at once on both workers and the many short modules fill in beside
#: them, instead of one of them starting last and running alone at the end
SLOW_MODULES_FIRST = ("test_dvc_repro.py", "test_playerzero_loop.py", "test_pipeline.py")


def pytest_collection_modifyitems(items):
    rank = {name: i for i, name in enumerate(SLOW_MODULES_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the rest in order
