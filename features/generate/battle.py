"""Battle data generation: the learning player explores at random against chosen agents.

The study's technique (Part III §11.3): X games; in each, the learning player (seat `player`)
tries up to `k` distinct random actions at every one of its steps, depth-first, each branch
continuing the game with the opponents choosing through their agent specs (`agents`), until
`y` terminal states are reached and, optionally, at least `z` of them won by the learning
player. Reaching Z wins may be slow or impossible against a strong opponent, so a game stops
after `budget` terminal states whatever happened; the count of such games is kept in the games
table's schema metadata (`gridbots.gave_up`).

Every terminal state reached is a complete game (one `games` row and its `sequences` rows). The
learning player's decision points become `positions` rows whose `action_scores` are the mean
outcome of the explored branches per action (NaN for actions not tried); as in the study, the
position's game, action and outcome follow the best final state reached below it for the
learning player. `Explorer` is the shared depth-first engine; imitation reuses it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from agents.base import Agent, AgentError, _split_specs, make
from engine.protocol import CHANCE, SIMULTANEOUS, Game, GameError, State
from features.errors import DataError
from features.generate import checked_scenario, shard_units
from features.generate.tables import (
    GameTable,
    PositionTable,
    beats_rivals,
    checked_number,
    game_seeds,
    merge_params,
    shard_tables,
)

DEFAULT_OPPONENT = "random:guards=win+block"

PARAMS: dict[str, Any] = {
    "x": 10,  # games (the dataset's X; split into shards of shard_size games)
    "games": None,  # another name for x
    "shard_size": 100,  # games per shard
    "y": 4,  # terminal states per game
    "z": 0,  # wins of the learning player required before the next game (0: none)
    "k": 3,  # random actions tried at each step of the learning player
    "player": 0,  # the learning player's seat
    "agents": [DEFAULT_OPPONENT],  # one spec for all opponents, or one per seat (own ignored)
    "budget": 200,  # terminal states after which a game is given up
    "scenario": {},  # scenario options of every game (e.g. {"opening": 4})
}

Move = int | list[int]


@dataclass
class Frame:
    """A decision point on the depth-first path: the state before it and the moves to try."""

    state: State
    step: int
    moves: list[Move]
    record: bool
    next: int = 0
    sums: np.ndarray | None = None
    counts: np.ndarray | None = None
    best: tuple[float, int, int] | None = field(default=None)  # (outcome, game id, action)


class Explorer:
    """Depth-first exploration of one game's branches; subclasses say which moves to try."""

    def __init__(
        self,
        game: Game,
        learner: int,
        agents: list[Agent | None],
        seat_specs: list[str],
        rng: np.random.Generator,
        games: GameTable,
        positions: PositionTable,
        y: int,
        z: int,
        budget: int,
    ):
        self.game = game
        self.learner = learner
        self.agents = agents
        self.seat_specs = seat_specs
        self.rng = rng
        self.games = games
        self.positions = positions
        self.y, self.z, self.budget = y, z, budget

    # ---- what a technique decides ----------------------------------------------------------
    def moves(self, state: State) -> tuple[list[Move], bool]:
        """The moves to try at a non-terminal `state` (first = main line) and whether the
        node is a decision point of the learning player."""
        raise NotImplementedError

    # ---- helpers for subclasses ------------------------------------------------------------
    def chance(self, state: State) -> tuple[list[Move], bool]:
        return [state.random_action(self.rng)], False

    def agent_action(self, state: State, player: int) -> int:
        if not state.legal_actions(player):
            return self.game.neutral_action
        return int(self.agents[player].step(state.clone(), player))

    def learner_action(self, move: Move) -> int:
        return move[self.learner] if isinstance(move, list) else move

    # ---- the search ------------------------------------------------------------------------
    def run(self, start: State, seed: int, scenario: dict[str, Any]) -> bool:
        """Explores from `start`; True when the game was given up short of `z` wins."""
        stack: list[Frame] = []
        state, step = start.clone(), 0
        terminals = wins = 0
        while True:
            while not state.is_terminal():
                moves, record = self.moves(state)
                if len(moves) > 1 or record:
                    frame = Frame(state.clone(), step, moves, record, next=1)
                    if record:
                        frame.sums = np.zeros(self.game.num_actions)
                        frame.counts = np.zeros(self.game.num_actions, dtype=np.int64)
                    stack.append(frame)
                _apply(state, moves[0])
                step += 1
            outcome = state.returns()
            game_id = self.games.add(state.history(), outcome, seed, scenario, self.seat_specs)
            terminals += 1
            mine = outcome[self.learner]
            wins += beats_rivals(outcome, self.learner, self.game.teams)
            for frame in stack:
                if frame.record:
                    action = self.learner_action(frame.moves[frame.next - 1])
                    frame.sums[action] += mine
                    frame.counts[action] += 1
                    if frame.best is None or mine > frame.best[0]:
                        frame.best = (mine, game_id, action)
            done = terminals >= self.y and wins >= self.z
            if done or terminals >= self.budget:
                break
            while stack and stack[-1].next == len(stack[-1].moves):
                self._finish(stack.pop())
            if not stack:
                break
            frame = stack[-1]
            state, step = frame.state.clone(), frame.step + 1
            _apply(state, frame.moves[frame.next])
            frame.next += 1
        while stack:
            self._finish(stack.pop())
        return wins < self.z

    def _finish(self, frame: Frame) -> None:
        """The learning player's position row, once every branch below it is done."""
        if not frame.record or frame.best is None:
            return
        with np.errstate(invalid="ignore", divide="ignore"):
            scores = np.where(frame.counts > 0, frame.sums / frame.counts, np.nan)
        outcome, game_id, action = frame.best
        self.positions.add(game_id, frame.step, self.learner, frame.state, action, outcome, scores)


def _apply(state: State, move: Move) -> None:
    if isinstance(move, list):
        state.apply_actions(move)
    else:
        state.apply_action(move)


class BattleExplorer(Explorer):
    """The learning player tries up to `k` random actions; everyone else asks its agent."""

    def __init__(self, *args: Any, k: int, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.k = k

    def _sample(self, legal: list[int]) -> list[int]:
        order = self.rng.permutation(len(legal))[: self.k]
        return [legal[int(i)] for i in order]

    def moves(self, state: State) -> tuple[list[Move], bool]:
        mover, me = state.current_player(), self.learner
        if mover == CHANCE:
            return self.chance(state)
        if mover == SIMULTANEOUS:
            joint = [
                self.agent_action(state, p) if p != me else self.game.neutral_action
                for p in range(self.game.num_players)
            ]
            legal = state.legal_actions(me)
            if not legal:
                return [joint], False
            return [[*joint[:me], a, *joint[me + 1 :]] for a in self._sample(legal)], True
        if mover == me:
            return list(self._sample(state.legal_actions())), True
        return [self.agent_action(state, mover)], False


# ---- parameters -----------------------------------------------------------------------------
def seat_specs(game: Game, specs: Any, technique: str) -> list[str]:
    """One agent spec per seat from one spec, a list, or a `a;b` / `a,b` string; every spec
    must build for this game."""
    if isinstance(specs, str):
        specs = _split_specs(specs)
    specs = [str(s).strip() for s in specs if str(s).strip()]
    if len(specs) == 1:
        specs = specs * game.num_players
    if len(specs) != game.num_players:
        raise DataError(
            f"{technique}: {game.name} has {game.num_players} seats; give one agent spec "
            f"or {game.num_players}, got {len(specs)}"
        )
    for spec in set(specs):
        try:
            make(spec, game, seed=0)
        except GameError as error:  # AgentError included
            raise DataError(f"{technique}: agent {spec!r}: {error}") from None
    return specs


def check_common(game: Game, params: dict[str, Any], technique: str) -> dict[str, Any]:
    """X, Y, Z, budget, learning seat and scenario, shared by battle and imitation."""
    p = dict(params)
    for key, low in (("x", 0), ("y", 1), ("z", 0), ("budget", 1), ("shard_size", 1)):
        p[key] = checked_number(technique, p, key, int, low, None, DataError)
    p["player"] = checked_number(technique, p, "player", int, 0, game.num_players - 1, DataError)
    if p["budget"] < p["y"]:
        raise DataError(f"{technique}: budget={p['budget']} is below y={p['y']}")
    p["scenario"] = checked_scenario(game, p["scenario"], technique)
    p["agents"] = seat_specs(game, p["agents"], technique)
    return p


def validate_params(game: Game, params: dict[str, Any]) -> dict[str, Any]:
    p = check_common(game, merge_params("battle", PARAMS, params, DataError), "battle")
    p["k"] = checked_number("battle", p, "k", int, 1, None, DataError)
    return p


def build_agents(
    game: Game, specs: list[str], seed: int, skip: int | None = None
) -> list[Agent | None]:
    """Seat agents with seeds derived from one game seed (None for a seat that explores)."""
    try:
        return [
            None if seat == skip else make(spec, game, seed=seed + seat)
            for seat, spec in enumerate(specs)
        ]
    except AgentError as error:
        raise DataError(str(error)) from None


def with_gave_up(tables: dict[str, pa.Table], gave_up: int) -> dict[str, pa.Table]:
    """Records the games given up short of Z wins in the games table's schema metadata."""
    games = tables["games"]
    meta = dict(games.schema.metadata or {})
    meta[b"gridbots.gave_up"] = str(gave_up).encode()
    return {**tables, "games": games.replace_schema_metadata(meta)}


def generate_shard(
    game: Game, params: dict[str, Any], seed: int, shard: int, first_game_id: int
) -> dict[str, pa.Table]:
    """X explored games of one shard, deterministic in (params, seed, shard)."""
    p = validate_params(game, params)
    games = GameTable(game, "battle", first_game_id)
    positions = PositionTable(game)
    me = p["player"]
    specs = list(p["agents"])
    specs[me] = f"battle:k={p['k']}"
    gave_up = 0
    first, count = shard_units(p, shard)
    for unit in range(first, first + count):
        scenario_seed, agent_seed, explore_seed = game_seeds(seed, unit, 3)
        start = game.new_initial_state(seed=scenario_seed, **p["scenario"])
        explorer = BattleExplorer(
            game,
            me,
            build_agents(game, p["agents"], agent_seed, skip=me),
            specs,
            np.random.default_rng(explore_seed),
            games,
            positions,
            p["y"],
            p["z"],
            p["budget"],
            k=p["k"],
        )
        gave_up += explorer.run(start, scenario_seed, p["scenario"])
    return with_gave_up(shard_tables(games, positions), gave_up)
