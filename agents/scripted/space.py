"""`space:dist=N`: a path-finding survival agent for trail games such as Lazerbike.

For each own action it assumes the worst joint move of the other players (as simab's MIN node)
and scores the lap that follows by the room left: the tiles the bike can still reach within
`dist` steps (Dijkstra from engine.pathfind over the game's `walk_grid(s, player)` hook, which
gives per-tile costs with blocked tiles < 0). A finished game scores its return, far beyond any
room; ties break at random. Cheap, and never drives into a dead end it can see.
"""

from __future__ import annotations

import itertools

import numpy as np

from agents.base import Agent, AgentError, builder, option
from engine.pathfind import distances_from
from engine.protocol import SIMULTANEOUS, Game, State

RESULT_SCALE = 1e6


@builder("space")
class SpaceAgent(Agent):
    """Max over own actions of the min over others' joint moves of the reachable room."""

    def __init__(self, game: Game, spec: str, seed: int | None = None, **options: str):
        super().__init__(game, spec, seed)
        self.dist = option(options, "dist", float, 30.0)
        if options:
            raise AgentError(f"space: unknown option(s) {sorted(options)}; known: dist")
        if getattr(game, "walk_grid", None) is None or not game.simultaneous:
            raise AgentError(f"space: {game.name} has no `walk_grid` hook (simultaneous games)")

    def room(self, state: State, player: int) -> float:
        """What the position is worth to `player`: the result, or the tiles within reach."""
        if state.is_terminal():
            return state.returns()[player] * RESULT_SCALE
        if not state.legal_actions(player):
            return -RESULT_SCALE
        cost, width, height, source = self.game.walk_grid(state.array, player)
        dist, _ = distances_from(cost, width, height, source, self.dist)
        return float((dist > 0).sum())

    def step(self, state: State, player: int | None = None) -> int:
        player = 0 if player is None else player
        own = state.legal_actions(player) if state.current_player() == SIMULTANEOUS else []
        if not own:
            return self.game.neutral_action
        others = [p for p in range(self.game.num_players) if p != player]
        choices = [state.legal_actions(p) or [self.game.neutral_action] for p in others]
        values = []
        for action in own:
            worst = np.inf
            for combo in itertools.product(*choices):
                joint = [0] * self.game.num_players
                joint[player] = action
                for p, a in zip(others, combo, strict=True):
                    joint[p] = a
                child = state.clone()
                child.apply_actions(joint)
                worst = min(worst, self.room(child, player))
            values.append(worst)
        best = [a for a, v in zip(own, values, strict=True) if v == max(values)]
        return int(best[int(self.rng.integers(len(best)))])
