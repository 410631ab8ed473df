"""Game rules and match running: numpy + numba only."""

import engine.numba_patches  # noqa: F401  (before any kernel compiles)
from engine.protocol import (
    CHANCE,
    SIMULTANEOUS,
    TERMINAL,
    Game,
    GameError,
    IllegalActionError,
    KernelSet,
    State,
)
from engine.registry import game_names, load_game, parse_game_spec, register

__all__ = [
    "CHANCE",
    "SIMULTANEOUS",
    "TERMINAL",
    "Game",
    "GameError",
    "IllegalActionError",
    "KernelSet",
    "State",
    "game_names",
    "load_game",
    "parse_game_spec",
    "register",
]
