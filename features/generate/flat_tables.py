"""Arrow tables from the flat arrays the numba techniques fill (randomized, thorough): games,
sequences and positions in features.schema's layout, without a Python object per row."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa

from engine.protocol import Game
from features.schema import GAMES, POSITIONS, SEQUENCES


def constant_strings(value: str, n: int) -> pa.Array:
    data = value.encode()
    offsets = np.arange(n + 1, dtype=np.int32) * len(data)
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(data * n))


def list_array(offsets: np.ndarray, values: np.ndarray, kind: pa.DataType) -> pa.Array:
    return pa.ListArray.from_arrays(
        pa.array(offsets.astype(np.int32, copy=False)), pa.array(values, type=kind)
    )


def fixed_lists(matrix: np.ndarray, kind: pa.DataType) -> pa.Array:
    rows, width = matrix.shape
    offsets = np.arange(rows + 1, dtype=np.int64) * width
    return list_array(offsets, np.ascontiguousarray(matrix).reshape(-1), kind)


def build_tables(
    game: Game,
    technique: str,
    first_game_id: int,
    seeds: np.ndarray,
    agents: list[str],
    games: tuple,
    positions: tuple,
    scenario: dict | None = None,
) -> dict[str, pa.Table]:
    """The three tables from the arrays the numba loops return (see randomized_states); every
    game began from `scenario` (options of the game's seeded start) at its seed."""
    g_state, g_returns, g_length, g_seq_len, hist_off, hist, seq_off, seq = games
    n, players = len(g_length), game.num_players
    ids = first_game_id + np.arange(n, dtype=np.int64)
    agent_values = pa.array(agents * n, type=pa.string()) if n else pa.array([], pa.string())
    games_table = pa.Table.from_arrays(
        [
            pa.array(ids),
            constant_strings(technique, n),
            constant_strings(game.spec(), n),
            constant_strings(json.dumps(scenario or {}), n),
            pa.array(seeds[g_state].astype(np.int64)),
            pa.ListArray.from_arrays(
                pa.array(np.arange(n + 1, dtype=np.int32) * players), agent_values
            ),
            fixed_lists(g_returns, pa.float32()),
            pa.array(g_length),
            list_array(hist_off, hist, pa.int16()),
        ],
        schema=GAMES,
    )
    sequences = pa.Table.from_arrays(
        [
            pa.array(np.repeat(ids, players)),
            pa.array(np.tile(np.arange(players, dtype=np.int8), n)),
            pa.array(np.full(n * players, players, dtype=np.int8)),
            pa.array(np.repeat(g_seq_len, players)),
            list_array(seq_off, seq, pa.int16()),
            pa.array(g_returns.reshape(-1)),
        ],
        schema=SEQUENCES,
    )
    p_game, p_ply, p_player, p_state, p_mask, p_feat, p_action, p_outcome, p_scores, p_wins = (
        positions
    )
    rows = len(p_game)
    positions_table = pa.Table.from_arrays(
        [
            pa.array(first_game_id + p_game),
            pa.array(p_ply),
            pa.array(p_player),
            fixed_lists(p_state, pa.int64()),
            fixed_lists(p_mask, pa.int8()),
            fixed_lists(p_feat, pa.float32()),
            pa.array(p_action),
            pa.array(p_outcome),
            fixed_lists(p_scores, pa.float32()),
            pa.array(p_wins),
            pa.nulls(rows, pa.list_(pa.float32())),
        ],
        schema=POSITIONS,
    )
    return {"games": games_table, "sequences": sequences, "positions": positions_table}
