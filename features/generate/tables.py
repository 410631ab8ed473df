"""Recorded games and positions → the three Arrow tables of features.schema, in bulk.

Techniques only keep, per game, its flat history (as `State.history()`), scenario, seed, agents
and returns; `GameTable` replays each history through a per-game compiled loop to find who moved
at every step, which is what the step-major `sequences` layout needs (chance steps are kept in
`games.history` and left out of `sequences`). `PositionTable` collects position rows as numpy
arrays and builds the list columns with offsets at the end, never one Python object per value.
The helpers at the bottom (seeding, parameter checks, immediate wins) are shared by the
agent-driven techniques.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from agents.guards import immediate_wins, win_buffers
from engine.protocol import SIMULTANEOUS, TERMINAL, Game, State
from engine.specialise import (
    apply_action,
    apply_joint,
    bind,
    current_player,
    generic,
)
from features.schema import GAMES, POSITIONS, SEQUENCES


# ---- numba loops --------------------------------------------------------------------------
@generic
def replay_steps(s, history, num_players, neutral, actions_out):
    """Replays `history` on `s` (in place), writing the step-major [steps, num_players] action
    matrix of the non-chance steps into `actions_out` (neutral for players who did not act).
    Returns (all steps, player steps); -1 steps when the history does not fit the game."""
    joint = np.empty(num_players, dtype=np.int64)
    i = 0
    steps = 0
    rows = 0
    n = history.shape[0]
    while i < n:
        mover = current_player(s)
        if mover == TERMINAL:
            return -1, rows
        if mover == SIMULTANEOUS:
            if i + num_players > n:
                return -1, rows
            for p in range(num_players):
                joint[p] = history[i + p]
                actions_out[rows * num_players + p] = history[i + p]
            apply_joint(s, joint)
            i += num_players
            rows += 1
        else:
            if mover >= 0:
                for p in range(num_players):
                    actions_out[rows * num_players + p] = neutral
                actions_out[rows * num_players + mover] = history[i]
                rows += 1
            apply_action(s, history[i])
            i += 1
        steps += 1
    return steps, rows


@generic
def describe_position(s, player, teams, num_players, neutral, mask, buffers):
    """Fills `player`'s legal mask; returns how many of its actions win at once
    (agents.guards.immediate_wins, the one definition)."""
    mask[:] = 0
    n, won = immediate_wins(s, player, teams, num_players, neutral, buffers)
    moves = buffers[0][0]
    for i in range(n):
        mask[moves[i]] = 1
    return won


# ---- tables -------------------------------------------------------------------------------
def _list_array(chunks: Sequence[np.ndarray], dtype: np.dtype, mask: np.ndarray | None = None):
    """One Arrow list column from per-row numpy arrays (offsets + one flat values buffer)."""
    lengths = np.fromiter((len(c) for c in chunks), dtype=np.int64, count=len(chunks))
    offsets = np.zeros(len(chunks) + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    values = np.concatenate(chunks).astype(dtype) if chunks else np.zeros(0, dtype)
    if mask is not None and mask.any():
        return pa.ListArray.from_arrays(pa.array(offsets), pa.array(values), mask=pa.array(mask))
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(values))


@dataclass
class GameTable:
    """Game rows of one shard; `add` returns the new row's game id."""

    game: Game
    technique: str
    first_game_id: int
    rows: list[tuple] = field(default_factory=list)

    def add(
        self,
        history: Sequence[int],
        returns_: Sequence[float],
        seed: int,
        scenario: dict[str, Any],
        agents: Sequence[str],
    ) -> int:
        game_id = self.first_game_id + len(self.rows)
        self.rows.append(
            (
                game_id,
                np.asarray(history, dtype=np.int64),
                np.asarray(returns_, dtype=np.float32),
                int(seed),
                dict(scenario),
                list(agents),
            )
        )
        return game_id

    def __len__(self) -> int:
        return len(self.rows)

    def tables(self) -> tuple[pa.Table, pa.Table]:
        """(games, sequences): every history is replayed from its seeded scenario."""
        g = self.game
        n = g.num_players
        replay = bind(replay_steps, g.kernels.search())
        spec = g.spec()
        lengths, flats, seq_lengths, seq_actions = [], [], [], []
        for game_id, history, _, seed, scenario, _ in self.rows:
            start = dict(scenario)
            start.pop("opening", None)  # the history already holds the opening
            s = g.new_initial_state(seed=seed, **start).array.copy()
            buffer = np.empty(max(len(history), 1) * n, dtype=np.int64)
            steps, rows = replay(s, history, n, g.neutral_action, buffer)
            if steps < 0:
                raise ValueError(f"game {game_id}: history does not replay in {spec}")
            lengths.append(steps)
            flats.append(history)
            seq_lengths.append(rows)
            seq_actions.append(buffer[: rows * n])
        count = len(self.rows)
        games = pa.Table.from_arrays(
            [
                pa.array([r[0] for r in self.rows], pa.int64()),
                pa.array([self.technique] * count, pa.string()),
                pa.array([spec] * count, pa.string()),
                pa.array([json.dumps(r[4], sort_keys=True) for r in self.rows], pa.string()),
                pa.array([r[3] for r in self.rows], pa.int64()),
                pa.array([r[5] for r in self.rows], pa.list_(pa.string())),
                _list_array([r[2] for r in self.rows], np.float32),
                pa.array(lengths, pa.int32()),
                _list_array(flats, np.int16),
            ],
            schema=GAMES,
        )
        ids = np.repeat(np.array([r[0] for r in self.rows], dtype=np.int64), n)
        players = np.tile(np.arange(n, dtype=np.int8), count)
        outcomes = np.concatenate([r[2] for r in self.rows]) if count else np.zeros(0)
        per_player = [a for a in seq_actions for _ in range(n)]
        sequences = pa.Table.from_arrays(
            [
                pa.array(ids, pa.int64()),
                pa.array(players, pa.int8()),
                pa.array(np.full(count * n, n, dtype=np.int8), pa.int8()),
                pa.array(np.repeat(np.array(seq_lengths, dtype=np.int32), n), pa.int32()),
                _list_array(per_player, np.int16),
                pa.array(outcomes.astype(np.float32), pa.float32()),
            ],
            schema=SEQUENCES,
        )
        return games, sequences


class PositionTable:
    """Position rows of one shard; `add` describes a state (mask, features, immediate wins)."""

    def __init__(self, game: Game):
        self.game = game
        g = game
        self._describe = bind(describe_position, g.kernels.search())
        self._teams = np.asarray(g.teams, dtype=np.int64)
        size = g.new_initial_state(seed=0).array.shape[0]
        self._buffers = win_buffers(size, g.num_players, g.num_actions)
        self._features = int(np.prod(g.observation_shape))
        self.columns: dict[str, list] = {name: [] for name in POSITIONS.names}

    def add(
        self,
        game_id: int,
        ply: int,
        player: int,
        state: State | np.ndarray,
        action: int,
        outcome: float,
        action_scores: np.ndarray,
        policy: np.ndarray | None = None,
    ) -> None:
        g = self.game
        s = state.array if isinstance(state, State) else state
        mask = np.zeros(g.num_actions, dtype=np.int8)
        won = self._describe(
            np.ascontiguousarray(s, dtype=np.int64), player, self._teams, g.num_players,
            g.neutral_action, mask, self._buffers,
        )  # fmt: skip
        features = np.zeros(self._features, dtype=np.float32)
        g.kernels.observation(s, player, features)
        c = self.columns
        c["game_id"].append(game_id)
        c["ply"].append(ply)
        c["player"].append(player)
        c["state"].append(s.copy())
        c["legal_mask"].append(mask)
        c["features"].append(features)
        c["action"].append(action)
        c["outcome"].append(outcome)
        c["action_scores"].append(np.asarray(action_scores, dtype=np.float32))
        c["immediate_wins"].append(won)
        c["policy"].append(policy)

    def __len__(self) -> int:
        return len(self.columns["game_id"])

    def table(self) -> pa.Table:
        """The rows sorted by (game_id, ply), whatever order they were added in."""
        c = self.columns
        order = np.lexsort((np.asarray(c["ply"]), np.asarray(c["game_id"])))
        order = order.astype(np.int64)

        def pick(name: str) -> list:
            return [c[name][i] for i in order]

        policies = pick("policy")
        missing = np.array([p is None for p in policies], dtype=bool)
        empty = np.zeros(0, dtype=np.float32)
        scalars = {
            "game_id": pa.int64(),
            "ply": pa.int32(),
            "player": pa.int8(),
            "action": pa.int16(),
            "outcome": pa.float32(),
            "immediate_wins": pa.int16(),
        }
        arrays = []
        for name in POSITIONS.names:
            if name in scalars:
                arrays.append(pa.array(np.asarray(pick(name)), scalars[name]))
            elif name == "policy":
                chunks = [empty if p is None else p for p in policies]
                arrays.append(_list_array(chunks, np.float32, missing))
            else:
                dtype = {"state": np.int64, "legal_mask": np.int8}.get(name, np.float32)
                arrays.append(_list_array(pick(name), dtype))
        return pa.Table.from_arrays(arrays, schema=POSITIONS)


def shard_tables(games: GameTable, positions: PositionTable) -> dict[str, pa.Table]:
    game_rows, sequence_rows = games.tables()
    return {"games": game_rows, "sequences": sequence_rows, "positions": positions.table()}


# ---- shared by the agent-driven techniques ------------------------------------------------
def game_seeds(seed: int, unit: int, count: int) -> list[int]:
    """`count` independent 63-bit seeds for unit (game) `unit` of a dataset: everything a game
    uses (scenario, agents, exploration, chance) comes from (seed, unit) alone, so rows do not
    depend on the shard size or on the number of workers."""
    words = np.random.SeedSequence([int(seed), int(unit)]).generate_state(count, np.uint64)
    return [int(w >> np.uint64(1)) for w in words]


def beats_rivals(outcome: Sequence[float], player: int, teams: Sequence[int]) -> bool:
    """`player` strictly beats every player of another team (alone: a positive return)."""
    rivals = [q for q in range(len(outcome)) if teams[q] != teams[player]]
    if not rivals:
        return outcome[player] > 0
    return all(outcome[player] > outcome[q] for q in rivals)


def merge_params(
    technique: str, defaults: dict[str, Any], params: dict[str, Any], error: type[Exception]
) -> dict[str, Any]:
    """Defaults overlaid with the given values (None means unset); `games`, where a technique
    accepts it, is another name for X (games); an unknown key is an `error`."""
    given = {k: v for k, v in params.items() if v is not None}
    unknown = sorted(set(given) - set(defaults))
    if unknown:
        raise error(f"{technique}: unknown parameter(s) {unknown}; known: {sorted(defaults)}")
    merged = {**defaults, **given}
    if merged.get("games") is not None:
        merged["x"] = merged["games"]
    merged.pop("games", None)
    return merged


def checked_number(
    technique: str,
    params: dict[str, Any],
    key: str,
    kind: type,
    low: float,
    high: float | None,
    error: type[Exception],
) -> Any:
    """params[key] as `kind` within [low, high], or an `error` naming the parameter."""
    value = params[key]
    try:
        if isinstance(value, bool):
            raise ValueError
        number = kind(value)
        if kind is int and isinstance(value, float) and number != value:
            raise ValueError
    except (TypeError, ValueError):
        raise error(f"{technique}: {key}={value!r} must be {kind.__name__}") from None
    if number != number or number < low or (high is not None and number > high):
        bounds = f">= {low}" if high is None else f"in [{low}, {high}]"
        raise error(f"{technique}: {key}={value!r} must be {bounds}")
    return number
