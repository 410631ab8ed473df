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
