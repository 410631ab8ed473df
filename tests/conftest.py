"""Shared test settings: no telemetry, a quiet numba, hypothesis profiles sized for 2 cores."""

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

settings.register_profile(
    "default",
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)
settings.load_profile("default")
