"""The three data types every generation technique writes, as Arrow schemas.

`games`: one row per game. `sequences`: one row per game and player, holding the action of
every player at every step (the original study's layout: in a turn-based game the players who
do not act in a step get the game's neutral value, −1 for Connect 4; dead Lazerbike bikes −2),
flattened step-major into `actions` with `num_players` entries per step. `positions`: one row
per recorded position, with enough to rebuild the state (`state`, the kernel array, plus the
game spec and scenario of its game row), the side to move, the legal mask, a-priori features
(the observation tensor of the side to move, flattened) and a-posteriori targets.

Columns use variable-length lists so one schema serves every game; `manifest.json` records
the game's shapes (num_actions, observation_shape, state_size) next to the shards.
`replay` reads a games row back as the states its history passes through.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa

SCHEMA_VERSION = 1
TABLES = ("games", "sequences", "positions")

GAMES = pa.schema(
    [
        pa.field("game_id", pa.int64(), nullable=False),  # unique within a dataset
        pa.field("technique", pa.string(), nullable=False),
        pa.field("game", pa.string(), nullable=False),  # game spec, e.g. lazerbike:players=4
        pa.field("scenario", pa.string(), nullable=False),  # JSON of the scenario options
        pa.field("seed", pa.int64(), nullable=False),  # scenario seed
        pa.field("agents", pa.list_(pa.string()), nullable=False),  # one spec per seat
        pa.field("returns", pa.list_(pa.float32()), nullable=False),  # one per player
        pa.field("length", pa.int32(), nullable=False),  # steps (laps for simultaneous games)
        pa.field("history", pa.list_(pa.int16()), nullable=False),  # flat, as State.history()
    ]
)

SEQUENCES = pa.schema(
    [
        pa.field("game_id", pa.int64(), nullable=False),
        pa.field("player", pa.int8(), nullable=False),  # whose outcome this row carries
        pa.field("num_players", pa.int8(), nullable=False),
        pa.field("length", pa.int32(), nullable=False),  # steps
        pa.field("actions", pa.list_(pa.int16()), nullable=False),  # length * num_players
        pa.field("outcome", pa.float32(), nullable=False),  # the row player's return
    ]
)

POSITIONS = pa.schema(
    [
        pa.field("game_id", pa.int64(), nullable=False),
        pa.field("ply", pa.int32(), nullable=False),  # step index within the game
        pa.field("player", pa.int8(), nullable=False),  # side to move (the player recorded)
        pa.field("state", pa.list_(pa.int64()), nullable=False),  # kernel state array
        pa.field("legal_mask", pa.list_(pa.int8()), nullable=False),  # num_actions
        pa.field("features", pa.list_(pa.float32()), nullable=False),  # observation, flat
        pa.field("action", pa.int16(), nullable=False),  # action played (neutral if none)
        pa.field("outcome", pa.float32(), nullable=False),  # final return of `player`
        # per-action a-posteriori scores for `player` (mean outcome over the final states
        # reached after that action; NaN where the action was not explored)
        pa.field("action_scores", pa.list_(pa.float32()), nullable=False),
        pa.field("immediate_wins", pa.int16(), nullable=False),  # actions that win at once
        pa.field("policy", pa.list_(pa.float32()), nullable=True),  # self-play visit shares
    ]
)

SCHEMAS = {"games": GAMES, "sequences": SEQUENCES, "positions": POSITIONS}


def list_parts(column: Any) -> tuple[np.ndarray, np.ndarray]:
    """(flat values, per-row lengths) of a list column; a null row counts as empty, so a
    corrupt shard reaches the checks instead of crashing the reader."""
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    lengths = arr.value_lengths().fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    return arr.flatten().to_numpy(zero_copy_only=False), lengths


def initial_state(game, seed: int, scenario: str | None) -> Any:
    """The state a games row starts from: its seeded scenario, less the opening (the opening's
    moves are already in the row's history)."""
    options = json.loads(scenario or "{}")
    options.pop("opening", None)
    return game.new_initial_state(seed=int(seed), **options)


def replay(game, seed: int, scenario: str | None, moves: list[int]) -> Iterator[Any]:
    """The states a games row passes through from its seeded scenario, each yielded before its
    step is applied and the last after it; a simultaneous lap takes num_players moves at once.
    It is one State advanced in place: copy what you keep. Positions tables hold decision
    points only; a search also meets chance nodes."""
    state = initial_state(game, seed, scenario)
    k = 0
    while k < len(moves):
        yield state
        if state.is_simultaneous_node():
            state.apply_actions(moves[k : k + game.num_players])
            k += game.num_players
        else:
            state.apply_action(moves[k])
            k += 1
    yield state
