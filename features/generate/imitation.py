"""Imitation data generation: every seat plays its agent, with occasional random detours.

The study's technique (Part III §11.4): every seat, the learning player's too, is an agent spec
(`agents`); at every step the agent to move chooses, and with probability `w` one extra random
action (a different legal one) is explored as well, on a copy of the game that continues with
the same agents (`rotate`: each game seats them one place further round the table, so every
agent plays every seat). Branches are explored depth-first until `y` terminal states are
reached (and, optionally, `z` wins of the learning player, within `budget` terminal states),
exactly as in battle; with w = 0 every game is a single line, so a shard holds exactly X games.
At a simultaneous step the detour gives one random seat that can act a different random action.

Rows follow battle: each terminal state is a game; the learning player's decision points are
positions, scored by the mean outcome per explored action.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from engine.protocol import CHANCE, SIMULTANEOUS, Game, State
from features.errors import DataError
from features.generate import shard_units
from features.generate.battle import (
    DEFAULT_OPPONENT,
    Explorer,
    Move,
    build_agents,
    check_common,
    with_gave_up,
)
from features.generate.tables import (
    GameTable,
    PositionTable,
    checked_number,
    game_seeds,
    merge_params,
    shard_tables,
)

PARAMS: dict[str, Any] = {
    "x": 10,  # games (the dataset's X; split into shards of shard_size games)
    "games": None,  # another name for x
    "shard_size": 100,  # games per shard
    "y": 4,  # terminal states per game (reached only where detours branch the game)
    "z": 0,  # wins of the learning player required before the next game (0: none)
    "w": 0.1,  # probability of an extra random action at each step
    "player": 0,  # the learning player's seat
    "agents": [DEFAULT_OPPONENT],  # one spec for every seat, or one per seat
    "budget": 200,  # terminal states after which a game is given up
    "scenario": {},  # scenario options of every game
    "rotate": False,  # game i seats the agents (and the learner) i places further round the table
}


class ImitationExplorer(Explorer):
    """The agent's move first; with probability w a different random move as a second branch."""

    def __init__(self, *args: Any, w: float, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.w = w

    def _detour(self, legal: list[int], chosen: int) -> int | None:
        others = [a for a in legal if a != chosen]
        return others[int(self.rng.integers(len(others)))] if others else None

    def moves(self, state: State) -> tuple[list[Move], bool]:
        mover, me = state.current_player(), self.learner
        if mover == CHANCE:
            return self.chance(state)
        branch = self.rng.random() < self.w
        if mover == SIMULTANEOUS:
            n = self.game.num_players
            joint = [self.agent_action(state, p) for p in range(n)]
            acting = [p for p in range(n) if state.legal_actions(p)]
            moves: list[Move] = [joint]
            if branch and acting:
                seat = acting[int(self.rng.integers(len(acting)))]
                other = self._detour(state.legal_actions(seat), joint[seat])
                if other is not None:
                    moves.append([*joint[:seat], other, *joint[seat + 1 :]])
            return moves, me in acting
        chosen = self.agent_action(state, mover)
        moves = [chosen]
        if branch:
            other = self._detour(state.legal_actions(), chosen)
            if other is not None:
                moves.append(other)
        return moves, mover == me


def validate_params(game: Game, params: dict[str, Any]) -> dict[str, Any]:
    p = check_common(game, merge_params("imitation", PARAMS, params, DataError), "imitation")
    p["w"] = checked_number("imitation", p, "w", float, 0.0, 1.0, DataError)
    if not isinstance(p["rotate"], bool):
        raise DataError(f"imitation: rotate={p['rotate']!r} must be true or false")
    return p


def seating(specs: list[str], learner: int, turn: int) -> tuple[list[str], int]:
    """(seat specs, learning seat) of a game whose agents sit `turn` places further round the
    table: with two agents every other game swaps sides, as matches do."""
    n = len(specs)
    shift = turn % n
    return [specs[(seat - shift) % n] for seat in range(n)], (learner + shift) % n


def generate_shard(
    game: Game, params: dict[str, Any], seed: int, shard: int, first_game_id: int
) -> dict[str, pa.Table]:
    """X agent-played games (plus their detours) of one shard, deterministic in its args."""
    p = validate_params(game, params)
    games = GameTable(game, "imitation", first_game_id)
    positions = PositionTable(game)
    gave_up = 0
    first, count = shard_units(p, shard)
    for unit in range(first, first + count):
        scenario_seed, agent_seed, explore_seed = game_seeds(seed, unit, 3)
        start = game.new_initial_state(seed=scenario_seed, **p["scenario"])
        specs, learner = seating(list(p["agents"]), p["player"], unit if p["rotate"] else 0)
        explorer = ImitationExplorer(
            game,
            learner,
            build_agents(game, specs, agent_seed),
            specs,
            np.random.default_rng(explore_seed),
            games,
            positions,
            p["y"],
            p["z"],
            p["budget"],
            w=p["w"],
        )
        gave_up += explorer.run(start, scenario_seed, p["scenario"])
    return with_gave_up(shard_tables(games, positions), gave_up)
