"""What every `gridbots stage` sets before its command runs (flows.pipeline.commands): no Prefect
flow heartbeats unless PREFECT_FLOWS_HEARTBEAT_FREQUENCY asks for them, only for the command.
(That its console stays quiet is checked on a real stage: tests/test_pipeline.py.)"""

from __future__ import annotations

import click
import pytest

from flows.pipeline.commands import HEARTBEAT_ENV, _stage_settings


@pytest.fixture
def clean_env(monkeypatch):
    """The variables the callback may set, restored after the test."""
    for key in (HEARTBEAT_ENV, "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "GRIDBOTS_VERBOSE"):
        monkeypatch.delenv(key, raising=False)
    return monkeypatch


def _inside_a_stage() -> int | None:
    from prefect.settings import get_current_settings

    with click.Context(click.Command("stage")) as context:
        _stage_settings(context)
        return get_current_settings().flows.heartbeat_frequency


def test_a_stage_sends_no_heartbeats(clean_env):
    from prefect.settings import get_current_settings

    before = get_current_settings().flows.heartbeat_frequency
    assert before == 180  # Prefect's default: one heartbeat thread per flow run
    assert _inside_a_stage() is None
    assert get_current_settings().flows.heartbeat_frequency == before  # only for the command


def test_heartbeats_stay_when_asked_for(clean_env):
    from prefect.settings import get_current_settings

    clean_env.setenv(HEARTBEAT_ENV, "60")  # read by Prefect when a stage's process starts
    assert _inside_a_stage() == get_current_settings().flows.heartbeat_frequency is not None
