"""Command-line options shared by several command groups (match and play both take a scenario).

Kept apart from the command modules so that `gridbots stage …`, which loads flows.cli, does not
execute (and so does not depend on) the interactive play commands.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

import typer

SCENARIO = Annotated[
    list[str] | None,
    typer.Option("--scenario", help="key=value, repeatable: opening=4, start=random."),
]


def scenario_options(items: Sequence[str] | None) -> dict[str, Any]:
    """`opening=4` → {"opening": 4}: whole numbers become ints, anything else stays text."""
    from engine.protocol import GameError

    options: dict[str, Any] = {}
    for item in items or ():
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise GameError(f"--scenario {item!r}: expected key=value")
        value = value.strip()
        options[key.strip()] = int(value) if value.lstrip("-").isdigit() else value
    return options


class UserError(Exception):
    """A problem with the user's input: reported as one line, exit code 2."""


def parse_game(spec: str):
    """A game from its spec (`connect4`, `territory:preset=duel`); GameError names a bad one."""
    from engine import parse_game_spec

    return parse_game_spec(spec)
