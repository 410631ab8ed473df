"""Encoders: dataset tables (Arrow, or pandas) to the numpy arrays models train on, and back.

Pure functions of a table and its game; nothing here knows a game's rules. What a game must
say about itself comes through optional hooks on its Game class:

  board_codes(states [n, state_size]) -> int8 [n, H, W]   0 empty, p + 1 player p's piece or
                                                            head, -1 deadly tile,
                                                            -(p + 2) the tile p's piece left
  deadly_tiles: bool                                       its board codes use -1
  neck_tiles: bool                                         they use -(p + 2) too
  symmetries() -> [(observation_perm, action_perm), ...]   see features/symmetry.py
  sequence_length: int                                     default window of the sequence
                                                            encoders (the study's: 20 rounds
                                                            for Connect 4, 112 for Lazerbike)

Sequences are read step-major from `sequences.actions` ([length, num_players] per row). For a
turn-based game the steps fold into rounds (one action per player, the study's layout: the
Connect 4 round [5, -1] is "player 1 played column 6, the game ended before player 2 moved");
simultaneous laps are rounds already. Encodings return a dict of arrays with one row per
sample; `ENCODINGS` names them for `gridbots encode`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from agents.sequence.codec import (  # noqa: F401 (EncodingError, decode_… are re-exported)
    EncodingError,
    board_blocks,
    board_one_hot,
    board_width,
    decode_one_hot_actions,
    one_hot_actions,
    rounds_from_steps,
    sequence_length,
    step_boards,
    step_history,
)
from agents.value.features import COUNT_LENGTH  # the one width, shared with the agents
from features.errors import DataError
from features.schema import initial_state, list_parts, replay


# ---- Arrow helpers -----------------------------------------------------------------------------
def arrow(table: Any) -> pa.Table:
    """An Arrow table from an Arrow or pandas table."""
    if isinstance(table, pa.Table):
        return table
    return pa.Table.from_pandas(table, preserve_index=False)


def list_matrix(column: Any, width: int, dtype: Any, fill: float = 0) -> np.ndarray:
    """A list column whose non-null rows all hold `width` values, as an [n, width] matrix
    (null rows hold `fill`)."""
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    n = len(arr)
    lengths = arr.value_lengths().fill_null(width).to_numpy(zero_copy_only=False)
    if n and (lengths != width).any():
        bad = int(np.flatnonzero(lengths != width)[0])
        raise DataError(f"row {bad}: a list of {int(lengths[bad])} values, expected {width}")
    out = np.full((n, width), fill, dtype=dtype)
    present = ~arr.is_null().to_numpy(zero_copy_only=False)
    flat = arr.flatten().to_numpy(zero_copy_only=False)
    out[present] = flat.reshape(-1, width) if width else flat.reshape(-1, 0)
    return out


def _ragged(column: Any) -> tuple[np.ndarray, np.ndarray]:
    """(flat int64 values, offsets) of a list column (features.schema.list_parts)."""
    values, lengths = list_parts(column)
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return values.astype(np.int64), offsets


def _column(table: pa.Table, name: str, dtype: Any) -> np.ndarray:
    return table.column(name).to_numpy().astype(dtype)


# ---- sequences ---------------------------------------------------------------------------------
def action_rounds(
    sequences: Any, game, width: int, fold: bool | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """([n, width, num_players] int16 actions per round, padded / cut with the neutral value;
    [n] rounds per row) of a sequences table. `fold` defaults to True for turn-based games."""
    values, offsets = _ragged(arrow(sequences).column("actions"))
    return rounds_from_steps(values, offsets, game, width, fold)


def _row_info(table: pa.Table) -> dict[str, np.ndarray]:
    return {
        "game_id": _column(table, "game_id", np.int64),
        "player": _column(table, "player", np.int8),
        "outcome": _column(table, "outcome", np.float32),
    }


def seat_outcomes(info: dict[str, np.ndarray], num_players: int) -> np.ndarray:
    """[n, P] float32 from the rows' `game_id`, `player` and `outcome`: every seat's outcome in
    each row's game (NaN where a seat has no row), so a row says who won its game without its
    game's other rows beside it."""
    ids, index = np.unique(info["game_id"], return_inverse=True)
    outcomes = np.full((len(ids), num_players), np.nan, dtype=np.float32)
    outcomes[index, info["player"].astype(np.int64)] = info["outcome"]
    return outcomes[index]


def quantitative(
    sequences: Any, game, length: int | None = None, plies: bool = False, boards: bool = False,
    games: Any = None, seat: int | None = None,
) -> dict[str, np.ndarray]:  # fmt: skip
    """Per round the vector of every player's actions as numbers: `inputs` are rounds 0..T-1,
    `targets` rounds 1..T (the next round to predict), both [n, T, num_players].

    `plies` (turn-based games): every move is a round of its own, so a model deciding for any
    seat has seen every move before it. The study's folding hides the first mover's latest move
    from the second seat (both share a round), which costs the second seat dearly.
    `boards`: also `boards` [n, T, bits], the board each input round leaves (`round_boards`).
    `seat`: only that seat's rows. A row holds every seat's actions, so a model of every seat
    needs one row a game; the others would double the file and the memory that loads it.
    `seat_outcomes` [n, P] keeps every seat's result."""
    table = arrow(sequences)
    if plies and game.simultaneous:
        raise DataError(f"plies apply to turn-based games; {game.name} plays simultaneous laps")
    info = _row_info(table)
    info["seat_outcomes"] = seat_outcomes(info, game.num_players)
    if seat is not None:
        if not 0 <= seat < game.num_players:
            raise DataError(f"seat {seat}: {game.name} has seats 0..{game.num_players - 1}")
        keep = info["player"] == seat
        table, info = table.filter(pa.array(keep)), {k: v[keep] for k, v in info.items()}
    length = length or (int(game.max_game_length) if plies else sequence_length(game))
    rounds, counts = action_rounds(table, game, length + 1, False if plies else None)
    arrays = {
        "inputs": rounds[:, :length],
        "targets": rounds[:, 1:],
        "rounds": counts,
        **info,
    }
    if boards:
        if not (plies or game.simultaneous):
            raise DataError("boards need one round per move: add --plies (turn-based games)")
        if games is None:
            raise DataError("boards are replayed from the games table; none given")
        arrays["boards"] = round_boards(games, arrays["game_id"], game, length)
    return arrays


def round_boards(games: Any, game_ids: np.ndarray, game, length: int) -> np.ndarray:
    """[n, length, bits] int8: per sequence row (by game id) the board after each of its first
    `length` steps, replayed from the games table through the game's kernels; zero past the
    end. Every step is a round here (plies or laps), so step k's board sits beside round k."""
    table = arrow(games).select(["game_id", "seed", "scenario", "history"])
    out = np.zeros((len(game_ids), length, board_width(game)), dtype=np.int8)
    where: dict[int, list[int]] = {}
    for row, gid in enumerate(np.asarray(game_ids).tolist()):
        where.setdefault(gid, []).append(row)
    k = game.kernels
    for record in table.to_pylist():
        rows = where.get(record["game_id"])
        if not rows:
            continue
        initial = initial_state(game, record["seed"], record["scenario"]).array
        _, states = step_history(k, initial, record["history"], game.num_players,
                                 game.neutral_action)  # fmt: skip
        bits = step_boards(game, states[:length])
        out[rows, : len(bits)] = bits
    missing = set(where) - set(table.column("game_id").to_pylist())
    if missing:
        raise DataError(f"{len(missing)} sequence game id(s) lack a games row: {min(missing)}…")
    return out


def qualitative(
    sequences: Any, game, length: int | None = None, plies: bool = False, boards: bool = False,
    games: Any = None, seat: int | None = None,
) -> dict[str, np.ndarray]:  # fmt: skip
    """`quantitative` with every action one-hot: [n, T, P * (num_actions + 1)] int8."""
    arrays = quantitative(sequences, game, length, plies, boards, games, seat)
    for key in ("inputs", "targets"):
        arrays[key] = one_hot_actions(arrays[key], game.num_actions, game.neutral_action)
    return arrays


# ---- positions ---------------------------------------------------------------------------------
def _states(table: pa.Table) -> np.ndarray:
    column = table.column("state").combine_chunks()
    width = int(column.value_lengths().to_numpy(zero_copy_only=False)[0]) if len(column) else 0
    return list_matrix(column, width, np.int64)


def board_codes(positions: Any, game) -> dict[str, np.ndarray]:
    """The game's board codes of every position: `codes` [n, H, W] int8."""
    hook = getattr(game, "board_codes", None)
    if hook is None:
        raise DataError(f"{game.name} has no board codes (Game.board_codes is not defined)")
    table = arrow(positions)
    codes = np.asarray(hook(_states(table)), dtype=np.int8)
    info = _row_info(table)
    return {"codes": codes, **info}


def decode_board_one_hot(bits: np.ndarray, player: np.ndarray, num_players: int,
                         shape: tuple[int, int], deadly: bool,
                         necks: bool = False) -> np.ndarray:  # fmt: skip
    """The inverse of `board_one_hot`: absolute codes [n, H, W]."""
    n = len(bits)
    cells = int(np.prod(shape))
    blocks = np.asarray(bits).reshape(n, num_players * (1 + int(necks)) + int(deadly), cells)
    codes = np.zeros((n, cells), dtype=np.int8)
    player = np.asarray(player, dtype=np.int64)
    for k in range(num_players):
        owner = ((player + k) % num_players + 1).astype(np.int8)
        codes = np.where(blocks[:, k] == 1, owner[:, None], codes)
    if deadly:
        codes[blocks[:, num_players] == 1] = -1
    if necks:
        for k in range(num_players):
            owner = ((player + k) % num_players + 1).astype(np.int8)
            neck = blocks[:, num_players + int(deadly) + k] == 1
            codes = np.where(neck, -(owner[:, None] + 1), codes)
    return codes.reshape(n, *shape)


def board_onehot_encoding(positions: Any, game) -> dict[str, np.ndarray]:
    arrays = board_codes(positions, game)
    codes = arrays.pop("codes")
    arrays["board"] = board_one_hot(codes, arrays["player"], game.num_players, *board_blocks(game))
    return arrays


def count_one_hot(counts: np.ndarray, length: int = COUNT_LENGTH) -> np.ndarray:
    """[n, k] counts → [n, k * length] int8, each count a one-hot of `length` (Prismata's
    representation); counts beyond length - 1 saturate at the last bit."""
    counts = np.clip(np.asarray(counts, dtype=np.int64), 0, length - 1)
    out = np.zeros((*counts.shape, length), dtype=np.int8)
    np.put_along_axis(out, counts[..., None], 1, axis=-1)
    return out.reshape(counts.shape[0], -1)


def counts(positions: Any, game, length: int = COUNT_LENGTH) -> dict[str, np.ndarray]:
    """Per position the count of set cells of every observation plane (own pieces, the
    opponent's, ...), of legal actions and of immediately winning actions, each one-hot."""
    table = arrow(positions)
    size = int(np.prod(game.observation_shape))
    features = list_matrix(table.column("features"), size, np.float32)
    planes = features.reshape(len(features), game.observation_shape[0], -1)
    mask = list_matrix(table.column("legal_mask"), game.num_actions, np.int64)
    raw = np.concatenate(
        [
            np.rint(planes.sum(axis=2)).astype(np.int64),
            mask.sum(axis=1, keepdims=True),
            _column(table, "immediate_wins", np.int64)[:, None],
        ],
        axis=1,
    )
    return {"counts": count_one_hot(raw, length), "raw_counts": raw, **_row_info(table)}


def planes(positions: Any, game, augment: bool = False) -> dict[str, np.ndarray]:
    """Feature planes [n, *observation_shape] with the legal mask [n, num_actions] as a second
    input; targets: action, outcome, policy (zeros where none, see `has_policy`) and scores.
    With `augment`, every row under each of the game's symmetries."""
    table = arrow(positions)
    size = int(np.prod(game.observation_shape))
    n = table.num_rows
    policy = table.column("policy").combine_chunks()
    arrays = {
        "planes": list_matrix(table.column("features"), size, np.float32).reshape(
            n, *game.observation_shape
        ),
        "mask": list_matrix(table.column("legal_mask"), game.num_actions, np.float32),
        "policy": list_matrix(policy, game.num_actions, np.float32),
        "has_policy": ~policy.is_null().to_numpy(zero_copy_only=False),
        "action_scores": list_matrix(table.column("action_scores"), game.num_actions, np.float32),
        "action": _column(table, "action", np.int16),
        **_row_info(table),
    }
    if augment:
        from features.symmetry import augment as apply_symmetries

        arrays = apply_symmetries(arrays, game)
    return arrays


def replayed_positions(games: Any, game, every: int = 1) -> pa.Table:
    """Every `every`-th state of each game replayed from the games table, chance nodes and
    both movers alike, as a positions table value-planes reads (`player` 0 and player 0's
    result as `outcome`): what a search's leaves look like, not only where someone decided."""
    table = arrow(games)
    columns: dict[str, list] = {"game_id": [], "ply": [], "player": [], "state": [], "outcome": []}
    for row in table.select(["game_id", "seed", "scenario", "history", "returns"]).to_pylist():
        for ply, state in enumerate(replay(game, row["seed"], row["scenario"], row["history"])):
            if ply % every == 0 and not state.is_terminal():
                columns["game_id"].append(row["game_id"])
                columns["ply"].append(ply)
                columns["player"].append(0)
                columns["state"].append(state.array.astype(np.int64))
                columns["outcome"].append(row["returns"][0])
    return pa.table({
        "game_id": pa.array(columns["game_id"], pa.int64()),
        "ply": pa.array(columns["ply"], pa.int32()),
        "player": pa.array(columns["player"], pa.int8()),
        "state": pa.array(columns["state"], pa.list_(pa.int64())),
        "outcome": pa.array(columns["outcome"], pa.float32()),
    })  # fmt: skip


def value_planes(positions: Any, game, playout_weight: float = 0.0) -> dict[str, np.ndarray]:
    """Value-network rows over observation planes seen from BOTH players of a two-player game:
    each position twice, once per player, with that player's outcome (the mover's negated for
    the other). A search asks a value network about positions where either side, or chance, is
    to move; seen from one side only, half of them would lie outside its training data.

    `playout_weight` w > 0 (games with a portfolio): the target is (1 - w) x the game's result
    + w x the result of the portfolio's scripted playout from the position, a second opinion on
    the position itself that separates positions of one game, which the result alone cannot."""
    if not 0.0 <= playout_weight <= 1.0:
        raise DataError(f"value-planes: playout_weight {playout_weight} must lie in [0, 1]")
    portfolio = game.portfolio
    if playout_weight and portfolio is None:
        raise DataError(f"value-planes: {game.name} has no scripted playout (playout_weight)")
    table = arrow(positions)
    states = _states(table)
    info = _row_info(table)
    size = int(np.prod(game.observation_shape))
    n = len(states)
    planes = np.zeros((2 * n, size), dtype=np.float32)
    playouts = np.zeros(2 * n, dtype=np.float32)
    for i, s in enumerate(states):
        for side in (0, 1):
            game.kernels.observation(s, side, planes[2 * i + side])
            if playout_weight:
                playouts[2 * i + side] = portfolio.playout(s, side)
    mover_is_zero = info["player"] == 0
    outcome = np.empty(2 * n, dtype=np.float32)
    outcome[0::2] = np.where(mover_is_zero, info["outcome"], -info["outcome"])
    outcome[1::2] = -outcome[0::2]
    if playout_weight:
        outcome = (1.0 - playout_weight) * np.clip(outcome, -1.0, 1.0) + playout_weight * playouts
    return {
        "planes": planes.reshape(2 * n, *game.observation_shape),
        "outcome": outcome.astype(np.float32),
        "player": np.tile(np.array([0, 1], dtype=np.int8), n),
        "game_id": np.repeat(info["game_id"], 2),
    }


# ---- registry and files ------------------------------------------------------------------------
ENCODINGS: dict[str, tuple[str, Callable[..., dict[str, np.ndarray]]]] = {
    "quantitative": ("sequences", quantitative),
    "qualitative": ("sequences", qualitative),
    "board-codes": ("positions", board_codes),
    "board-onehot": ("positions", board_onehot_encoding),
    "count-onehot": ("positions", counts),
    "planes": ("positions", planes),
    "value-planes": ("positions", value_planes),
}


def encoding(name: str) -> tuple[str, Callable[..., dict[str, np.ndarray]]]:
    """(table it reads, function) of encoding `name`; DataError when unknown."""
    if name not in ENCODINGS:
        raise DataError(f"unknown encoding {name!r}; known: {', '.join(ENCODINGS)}")
    return ENCODINGS[name]


def encode_datasets(
    directories: list[str | Path], name: str, **options: Any
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Several dataset folders of one game encoded as one file: a folder keeps the command that
    made it, so more games of the same kind (another seed) come as another folder. Each
    folder's game ids follow the previous folder's, so a split by game keeps games whole."""
    if len(directories) == 1:
        return encode_dataset(directories[0], name, **options)
    from features.store import read_manifest
    from features.validate import game_spec

    games = {game_spec(read_manifest(directory)) for directory in directories}
    if len(games) > 1:  # refused before any folder is encoded
        raise DataError(f"the datasets hold different games ({', '.join(sorted(games))})")
    parts = [encode_dataset(directory, name, **options) for directory in directories]
    offset = 0  # the first folder keeps its ids; each later one's are shifted past them
    for arrays, _ in parts:
        if "game_id" in arrays and len(arrays["game_id"]):
            arrays["game_id"] = arrays["game_id"] + offset
            offset = int(arrays["game_id"].max()) + 1
    joined = {key: np.concatenate([arrays[key] for arrays, _ in parts]) for key in parts[0][0]}
    metas = [meta for _, meta in parts]
    meta = {
        **metas[0],
        "dataset": "+".join(meta["dataset"] for meta in metas),
        "manifest_hash": "+".join(str(meta["manifest_hash"]) for meta in metas),
        "rows": len(next(iter(joined.values()))),
        "shapes": {k: list(v.shape) for k, v in joined.items()},
    }
    return joined, meta


def encode_dataset(
    directory: str | Path, name: str, **options: Any
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Encodes a dataset folder: (arrays, metadata with encoding, game, shapes, dtypes)."""
    table_name, function = encoding(name)
    from engine import parse_game_spec
    from features.store import load_dataset, read_manifest
    from features.validate import game_spec

    manifest = read_manifest(directory)
    spec = game_spec(manifest)
    game = parse_game_spec(spec)
    if options.get("boards"):  # replayed from the games table
        options = {**options, "games": load_dataset(directory, "games")}
    arrays = function(load_dataset(directory, table_name), game, **options)
    options = {k: v for k, v in options.items() if k != "games"}
    meta = {
        "encoding": name,
        "game": spec,
        "dataset": str(directory),
        # the dataset's content hash, so a trained model traces back to its exact rows
        "manifest_hash": manifest.get("content_hash"),
        "table": table_name,
        "options": options,
        "rows": len(next(iter(arrays.values()))),
        "shapes": {k: list(v.shape) for k, v in arrays.items()},
        "dtypes": {k: str(v.dtype) for k, v in arrays.items()},
    }
    return arrays, meta


def save(arrays: dict[str, np.ndarray], meta: dict[str, Any], path: str | Path) -> Path:
    """Writes `.npz` (arrays plus a `meta` JSON string) or `.parquet` (one row per sample, each
    array a list column, shapes and encoding in the schema metadata), under a temporary name
    renamed when complete: a killed writer never leaves a truncated file at `path`."""
    path = Path(path)
    if path.suffix not in (".npz", ".parquet"):
        raise DataError(f"output {path} must end in .npz or .parquet")
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.stem}.{os.getpid()}.tmp{path.suffix}")
    try:
        if path.suffix == ".parquet":
            import pyarrow.parquet as pq

            columns = {}
            for key, values in arrays.items():
                flat = values.reshape(len(values), -1)
                if values.ndim == 1:
                    columns[key] = pa.array(values)
                else:
                    columns[key] = pa.FixedSizeListArray.from_arrays(
                        pa.array(flat.ravel()), flat.shape[1]
                    )
            table = pa.table(columns).replace_schema_metadata({"gridbots": json.dumps(meta)})
            pq.write_table(table, temp)
        else:
            np.savez_compressed(temp, meta=np.array(json.dumps(meta)), **arrays)
        os.replace(temp, path)
    finally:
        temp.unlink(missing_ok=True)
    return path


def load(path: str | Path) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Reads what `save` wrote: (arrays with their shapes restored, metadata)."""
    path = Path(path)
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        table = pq.read_table(path)
        meta = json.loads(table.schema.metadata[b"gridbots"])
        arrays = {}
        for key in table.column_names:
            column = table.column(key).combine_chunks()
            shape = meta["shapes"][key]
            if isinstance(column.type, pa.FixedSizeListType):
                values = column.flatten().to_numpy(zero_copy_only=False)
            else:
                values = column.to_numpy(zero_copy_only=False)
            arrays[key] = values.astype(meta["dtypes"][key]).reshape(shape)
        return arrays, meta
    with np.load(path, allow_pickle=False) as data:  # never unpickle a file we are handed
        meta = json.loads(str(data["meta"]))
        return {k: data[k] for k in data.files if k != "meta"}, meta
