"""What a stage's process sets up before its flow runs: quiet libraries and its checked params.

Shared by the stage commands (flows.pipeline.commands, flows.pipeline.td_commands) and the warm
stage host, which compares a caller's environment with its own after adding `quiet`'s defaults.
Every stage reads params.yaml first and refuses a missing or wrong-typed key with one line naming
it and the stage (exit 2).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated

import typer

from engine.noise import TELEMETRY_OFF, verbose
from flows.pipeline.params import load_for

GAME = Annotated[str, typer.Argument(help="Game whose chain the stage belongs to.")]
PARAMS = Annotated[Path, typer.Option("--params", help="Parameters file.")]
DASK = Annotated[
    str | None,
    typer.Option("--dask-address", help="tcp://HOST:PORT of a Dask scheduler (else params)."),
]
ROOT = Path(".")
DEFAULT_PARAMS = Path("params.yaml")


def quiet_defaults(env: Mapping[str, str]) -> dict[str, str]:
    """The variables `quiet` would add to `env` (those it lacks): the stage host applies them to
    a caller's environment to compare it with its own, so the caller need not import anything."""
    defaults = dict(TELEMETRY_OFF)
    if not verbose(env):  # TensorFlow's log: engine.noise.import_tensorflow
        defaults["PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL"] = "WARNING"
    return {key: value for key, value in defaults.items() if key not in env}


def quiet() -> None:
    """No telemetry; and unless `--verbose`, Prefect's console shows warnings and errors only
    (the runs' INFO logs still reach the Prefect UI)."""
    os.environ.update(quiet_defaults(os.environ))
    if not verbose():
        # Prefect's senders of events and logs warn when they stop with items still to send
        # ("Still processing items"): a normal drain at a flow's end, sent all the same
        for name in ("EventsWorker", "APILogWorker"):
            logging.getLogger(name).setLevel(logging.ERROR)


def load(stage: str, game: str | None, name: str | None, path: Path) -> dict:
    """The stage's params, checked (ParamsError names the key and the stage: exit 2)."""
    quiet()
    return load_for(stage, game, name, path)
