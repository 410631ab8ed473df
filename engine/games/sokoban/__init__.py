"""Cooperative Sokoban, the game: levels by name (`levels`) over the lap rules and kernels
(`rules`, whose docstring states the rules, the deadlock test and the state layout)."""

from __future__ import annotations

import re
from typing import Any, ClassVar

import numpy as np

from engine.games.sokoban.levels import level_names, load_level
from engine.games.sokoban.rules import (
    ACTION_NAMES,
    KERNELS,
    LIMIT,
    MAX_PLAYERS,
    OBS_PLANES,
    STATUS,
    STAY,
    STEP,
    layout,
)
from engine.protocol import Game, GameError, KernelSet
from engine.registry import register


@register
class Sokoban(Game):
    """Players push boxes into holes and must all stand on exit tiles at once."""

    name = "sokoban"
    kind = "puzzle"
    simultaneous = True
    neutral_action = STAY
    default_opponent = "planner"  # no opponent in a puzzle: the adviser behind `hint`
    grid_style: ClassVar[dict[str, Any]] = {
        "cell": "square", "background": "#444", "empty": "#f4f6f8", "ink": "#222",
        "pieces": {
            "w": {"color": "#6b5b4b", "name": "wall"}, "b": {"color": "#c98f3e", "name": "box"},
            "h": {"color": "#222", "name": "hole"}, "e": {"color": "#7fd18b", "name": "exit"},
            **{str(p): {"color": "#9cc3ff", "letter": True, "name": f"player {p}"}
               for p in range(1, 5)},
        },
    }  # fmt: skip
    layout = staticmethod(layout)  # the grid the planner reads
    default_params = {"level": "first"}  # noqa: RUF012 (the protocol's class attribute)
    player_counts = (1, MAX_PLAYERS)

    def _kernels(self) -> KernelSet:
        return KERNELS

    def _configure(self) -> None:
        self.level = load_level(str(self.params["level"]))
        self.num_players = self.level.num_players
        self.teams = (0,) * self.num_players
        self.num_actions = 5
        self.observation_shape = (OBS_PLANES, self.level.height, self.level.width)
        self.max_game_length = self.level.limit

    def variants(self) -> list[str]:
        """Every shipped level (engine/boards/sokoban), as a game spec."""
        return [f"{self.name}:level={level}" for level in level_names()]

    def initial_config(self, rng: np.random.Generator, **scenario) -> np.ndarray:
        if scenario:
            raise GameError(
                f"sokoban: unknown scenario option(s) {sorted(scenario)}; "
                "choose the level with the game parameter `level`"
            )
        return self.level.config.copy()

    def grid(self, s: np.ndarray) -> list[str]:
        """w wall, b box, h hole, e exit, 1-4 the players, `.` floor."""
        planes = layout(s)
        tiles = np.full(planes["walls"].shape, ".")
        for name, ch in (("exits", "e"), ("holes", "h"), ("boxes", "b"), ("walls", "w")):
            tiles[planes[name]] = ch
        for p, cell in enumerate(planes["players"]):
            tiles.flat[cell] = str(p + 1)
        return ["".join(line) for line in tiles]

    def render(self, s: np.ndarray) -> str:
        status = ("playing", "won", "lost: lap limit", "lost: deadlock")[int(s[STATUS])]
        lines = [row.replace(".", " ") for row in self.grid(s)]
        lines.append(f"{self.level.name}  lap {int(s[STEP])}/{int(s[LIMIT])}  {status}")
        return "\n".join(lines)

    def action_to_string(self, player: int, action: int) -> str:
        return ACTION_NAMES[action] if 0 <= action < 5 else str(action)

    def parse_moves(self, text: str) -> list[int]:
        """Integers, words (up, down, left, right, stay) or letter runs such as `rrdu s`."""
        actions: list[int] = []
        for token in filter(None, re.split(r"[\s,]+", text.strip().lower())):
            if token.lstrip("-").isdigit():
                actions.append(int(token))
            elif token in ACTION_NAMES:
                actions.append(ACTION_NAMES.index(token))
            elif all(ch in "udlrs" for ch in token):
                actions.extend("udlrs".index(ch) for ch in token)
            else:
                raise GameError(
                    f"sokoban: bad move {token!r}; use 0-4, up/down/left/right/stay or u d l r s"
                )
        return actions
