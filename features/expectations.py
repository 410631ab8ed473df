"""The expectations every dataset table is held to, as suites of boolean checks computed in
numpy (features.validate runs them through great-expectations and reports).

Two suites per table and game: `<game>.<table>.schema` (one row per column: the Arrow type
against features.schema, nulls only where allowed) and `<game>.<table>` (value ranges, key
uniqueness, consistency with the rules and with the `games` table). Checks that replay or
rebuild states run on a seeded sample of rows (`sample`); the others see every row.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from features.schema import SCHEMAS, TABLES, list_parts

EXAMPLES = 5
KEYS = {
    "games": ["game_id"],
    "sequences": ["game_id", "player"],
    "positions": ["game_id", "ply", "player"],
}


@dataclass
class Suite:
    """A frame (column name -> 1-d array) and the expectations it must meet."""

    name: str
    frame: dict[str, np.ndarray]
    keys: list[str]
    expectations: list[tuple[str, dict[str, Any], str]] = field(default_factory=list)

    def expect(self, kind: str, says: str, **kwargs: Any) -> None:
        self.expectations.append((kind, kwargs, says))

    def between(self, column: str, low: float, high: float, says: str) -> None:
        self.expect("ExpectColumnValuesToBeBetween", says, column=column, min_value=low,
                    max_value=high)  # fmt: skip

    def derived(self, column: str, values: np.ndarray, says: str) -> None:
        """A boolean column computed here; GX expects it to be True on every row."""
        self.frame[column] = np.asarray(values, dtype=bool)
        self.expect("ExpectColumnValuesToBeInSet", says, column=column, value_set=[True])


# ---- reading lists robustly (a corrupt shard must fail a check, not crash the gate) ---------
def _list_rows(column: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(flat values as float64 or int64, per-row lengths, row index of each value)."""
    values, lengths = list_parts(column)
    return values, lengths, np.repeat(np.arange(len(lengths)), lengths)


def _rows_all(ok: np.ndarray, rows: np.ndarray, n: int) -> np.ndarray:
    """Per row: every value of the row passes (empty rows pass)."""
    return np.bincount(rows[~ok], minlength=n) == 0


def _padded(column: Any, width: int, fill: float, dtype: Any = np.float64) -> np.ndarray:
    """[n, width] matrix of a list column, cut or padded with `fill`."""
    values, lengths, rows = _list_rows(column)
    n = len(lengths)
    out = np.full((n, width), fill, dtype=dtype)
    starts = np.zeros(n, dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    within = np.arange(len(values)) - starts[rows]
    keep = within < width
    out[rows[keep], within[keep]] = values[keep]
    return out


def _sample(n: int, size: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(n, size=min(n, size), replace=False)) if n else np.zeros(0, int)


def _lookup(ids: np.ndarray, game_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(index into the games table, found) for each id."""
    order = np.argsort(game_ids, kind="stable")
    at = np.searchsorted(game_ids[order], ids)
    at = np.clip(at, 0, max(len(order) - 1, 0))
    found = (game_ids[order][at] == ids) if len(order) else np.zeros(len(ids), bool)
    return (order[at] if len(order) else at), found


def _type_name(kind: pa.DataType) -> str:
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return f"list<{kind.value_type}>"
    return str(kind)


# ---- suites ----------------------------------------------------------------------------------
def schema_suite(game_name: str, table_name: str, parts: list[tuple[str, pa.Table, int]]) -> Suite:
    """One row per shard file and column: its Arrow type against features.schema, nulls only
    where allowed, and the file's row count against the manifest's."""
    expected = SCHEMAS[table_name]
    rows: dict[str, list] = {k: [] for k in ("file", "field", "expected", "actual", "nulls_ok")}
    rows_ok = []
    for name, table, listed in parts:
        fields = [(f.name, _type_name(f.type), f.nullable) for f in expected]
        fields += [(c, "absent", True) for c in table.column_names if c not in expected.names]
        for column, kind, nullable in fields:
            present = column in table.column_names
            rows["file"].append(name)
            rows["field"].append(column)
            rows["expected"].append(kind)
            rows["actual"].append(
                _type_name(table.schema.field(column).type) if present else "missing"
            )
            rows["nulls_ok"].append(nullable or not present or table.column(column).null_count == 0)
            rows_ok.append(table.num_rows == listed)
    frame = {k: np.array(v, dtype=bool if k == "nulls_ok" else object) for k, v in rows.items()}
    suite = Suite(f"{game_name}.{table_name}.schema", frame, ["file", "field"])
    suite.expect(
        "ExpectColumnPairValuesToBeEqual",
        f"every column of `{table_name}` has the type of features.schema",
        column_A="expected",
        column_B="actual",
    )
    suite.derived("nulls_ok", frame["nulls_ok"], "no nulls in a column that does not allow them")
    suite.derived("rows_ok", np.array(rows_ok, dtype=bool), "row counts as in manifest.json")
    return suite


def _rows_ok(column: Any, width: int | None, value_ok, n: int) -> np.ndarray:
    """Per row: `width` values (any number when None), each passing `value_ok`."""
    values, lengths, rows = _list_rows(column)
    ok = _rows_all(value_ok(values), rows, n)
    return ok if width is None else ok & (lengths == width)


def _action_ok(game, chance: bool = False):
    """A player's action id; with `chance`, also a chance outcome (a game's history has both)."""
    bound = game.num_actions + (game.chance_ids if chance else 0)
    return lambda v: (v == game.neutral_action) | ((v >= 0) & (v < bound))


def _game_returns(game, g: pa.Table, ids: np.ndarray, player: np.ndarray):
    """(found in games, index into games, games.returns[player]) for each row."""
    at, found = _lookup(ids, g.column("game_id").to_numpy())
    returns = _padded(g.column("returns"), game.num_players, np.nan)
    seat = np.clip(player.astype(np.int64), 0, game.num_players - 1)
    target = returns[at, seat] if len(returns) else np.full(len(ids), np.nan)
    return found, at, target


def games_suite(game, tables: dict[str, pa.Table], sample: int, seed: int) -> Suite:
    t = tables["games"]
    n, players = t.num_rows, game.num_players
    frame = {c: t.column(c).to_numpy() for c in ("game_id", "technique", "game", "seed", "length")}
    s = Suite(f"{game.name}.games", frame, KEYS["games"])
    s.expect("ExpectColumnValuesToBeUnique", "no duplicate game ids", column="game_id")
    s.expect("ExpectColumnValuesToBeInSet", "the dataset's game", column="game",
             value_set=[game.spec()])  # fmt: skip
    s.between("length", 0, game.max_game_length, "game lengths within max_game_length")
    finite = _rows_ok(t.column("returns"), players, np.isfinite, n)
    s.derived("returns_ok", finite, f"one finite return per player ({players})")
    seats = _list_rows(t.column("agents"))[1]
    s.derived("agents_ok", seats == players, "one agent spec per seat")
    ok = _rows_ok(t.column("history"), None, _action_ok(game, chance=True), n)
    s.derived("history_values_ok", ok, "history entries are action ids or the neutral value")
    ids, counts = np.unique(tables["sequences"].column("game_id").to_numpy(), return_counts=True)
    at, found = _lookup(frame["game_id"], ids)
    ok = found & (counts[at] == players) if len(ids) else np.zeros(n, bool)
    s.derived("sequences_ok", ok, "one sequences row per player")
    replay_ok = np.ones(n, dtype=bool)
    returns = _padded(t.column("returns"), players, np.nan)
    for i in _sample(n, sample, seed):
        replay_ok[i] = _replays(game, t, int(i), returns[i])
    s.derived("replays_ok", replay_ok, "(sample) the history replays legally from the seeded "
              "scenario, in `length` steps, to a state with these returns")  # fmt: skip
    return s


def _replays(game, t: pa.Table, i: int, returns: np.ndarray) -> bool:
    """Replays a games row with the State API: legal, `length` steps, returns if terminal."""
    from engine.protocol import IllegalActionError
    from features.schema import replay

    moves = t.column("history")[i].as_py()
    seed, scenario = t.column("seed")[i].as_py(), t.column("scenario")[i].as_py()
    try:
        states = list(replay(game, seed, scenario, moves))  # one State, yielded at every step
    except (IllegalActionError, ValueError, TypeError, IndexError):
        return False
    state, steps = states[-1], len(states) - 1
    if steps != t.column("length")[i].as_py():
        return False
    return not state.is_terminal() or np.allclose(state.returns(), returns, atol=1e-6)


def sequences_suite(game, tables: dict[str, pa.Table]) -> Suite:
    t = tables["sequences"]
    n, players = t.num_rows, game.num_players
    names = ("game_id", "player", "num_players", "length", "outcome")
    frame = {c: t.column(c).to_numpy() for c in names}
    s = Suite(f"{game.name}.sequences", frame, KEYS["sequences"])
    s.expect("ExpectCompoundColumnsToBeUnique", "one row per game and player",
             column_list=["game_id", "player"])  # fmt: skip
    s.between("player", 0, players - 1, "players are seats of the game")
    s.expect("ExpectColumnValuesToBeInSet", "the game's number of players",
             column="num_players", value_set=[players])  # fmt: skip
    s.between("length", 0, game.max_game_length, "sequence lengths within max_game_length")
    _, lengths, _ = _list_rows(t.column("actions"))
    ok = lengths == frame["length"].astype(np.int64) * players
    s.derived("actions_len_ok", ok, "length x num_players actions per row")
    ok = _rows_ok(t.column("actions"), None, _action_ok(game), n)
    s.derived("actions_range_ok", ok, f"actions in [0, {game.num_actions}) or the neutral "
              f"value {game.neutral_action}")  # fmt: skip
    g = tables["games"]
    found, at, target = _game_returns(game, g, frame["game_id"], frame["player"])
    s.derived("game_known", found, "the game id is in `games`")
    ok = found & np.isclose(frame["outcome"], target, atol=1e-6)
    s.derived("outcome_matches_game", ok, "outcome == games.returns[player]")
    ok = found & (frame["length"] <= g.column("length").to_numpy()[at]) if g.num_rows else found
    s.derived("length_within_game", ok, "no more steps than the game (chance steps left out)")
    return s


def positions_suite(game, tables: dict[str, pa.Table], state_size: int | None, sample: int,
                    seed: int) -> Suite:  # fmt: skip
    t = tables["positions"]
    n, players, actions = t.num_rows, game.num_players, game.num_actions
    names = ("game_id", "ply", "player", "action", "outcome", "immediate_wins")
    frame = {c: t.column(c).to_numpy() for c in names}
    s = Suite(f"{game.name}.positions", frame, KEYS["positions"])
    s.expect("ExpectCompoundColumnsToBeUnique", "one row per game, ply and player",
             column_list=["game_id", "ply", "player"])  # fmt: skip
    s.between("player", 0, players - 1, "the side to move is a seat")
    s.between("ply", 0, game.max_game_length, "plies within max_game_length")
    s.between("immediate_wins", 0, actions, "immediate wins within num_actions")
    action = frame["action"].astype(np.int64)
    neutral = action == game.neutral_action
    s.derived("action_range_ok", _action_ok(game)(action),
              f"action in [0, {actions}) or the neutral value {game.neutral_action}")  # fmt: skip
    ok = _rows_ok(t.column("legal_mask"), actions, lambda v: (v == 0) | (v == 1), n)
    s.derived("mask_ok", ok, f"legal_mask: {actions} values 0 or 1")
    mask = _padded(t.column("legal_mask"), actions, 0, np.int8)
    legal = mask[np.arange(n), np.clip(action, 0, actions - 1)] == 1 if n else np.ones(0, bool)
    s.derived("action_legal", neutral | legal, "the recorded action is legal: mask[action] == 1")
    ok = frame["immediate_wins"] <= mask.sum(axis=1)
    s.derived("immediate_wins_ok", ok, "no more immediate wins than legal actions")
    size = int(np.prod(game.observation_shape))
    ok = _rows_ok(t.column("features"), size, np.isfinite, n)
    s.derived("features_ok", ok, f"features: {size} finite values")
    scores = _padded(t.column("action_scores"), actions, np.nan, np.float32)
    ok = _list_rows(t.column("action_scores"))[1] == actions
    ok &= ~(~np.isnan(scores) & (mask == 0)).any(axis=1)
    s.derived("scores_ok", ok, "action_scores: one per action, NaN on illegal actions")
    column = t.column("policy").combine_chunks()
    has = ~column.is_null().to_numpy(zero_copy_only=False)
    policy = _padded(column, actions, 0.0, np.float32)
    ok = _rows_ok(column, actions, lambda v: np.isfinite(v) & (v >= 0), n)
    ok &= np.isclose(policy.sum(axis=1), 1.0, atol=1e-4)
    s.derived("policy_ok", ~has | ok, "policies: non-negative, summing to 1")
    ok = ~((policy != 0) & (mask == 0)).any(axis=1)
    s.derived("policy_legal", ~has | ok, "policies are zero on illegal actions")
    g = tables["games"]
    found, at, target = _game_returns(game, g, frame["game_id"], frame["player"])
    s.derived("game_known", found, "the game id is in `games`")
    with np.errstate(invalid="ignore"):
        low = np.nanmin(np.where(mask == 1, scores, np.inf), axis=1) - 1e-5
        high = np.nanmax(np.where(mask == 1, scores, -np.inf), axis=1) + 1e-5
    outcome = frame["outcome"].astype(np.float64)
    ok = np.isclose(outcome, target, atol=1e-6) | ((outcome >= low) & (outcome <= high))
    s.derived("outcome_consistent", found & ok,
              "outcome == games.returns[player], or a mean of the explored scores")  # fmt: skip
    ok = found & (frame["ply"] <= g.column("length").to_numpy()[at]) if g.num_rows else found
    s.derived("ply_within_game", ok, "ply within the game's length")
    _rebuild_checks(game, t, s, mask, state_size, sample, seed)
    return s


def _rebuild_checks(game, t: pa.Table, suite: Suite, mask: np.ndarray, state_size: int | None,
                    sample: int, seed: int) -> None:  # fmt: skip
    """Rebuilds sampled states from `state` with the kernels: legal actions and observation
    must agree with the stored mask and features; board codes must be in range."""
    n, k = t.num_rows, game.kernels
    _, lengths, _ = _list_rows(t.column("state"))
    size_ok = lengths == (state_size if state_size else lengths[0] if n else 0)
    suite.derived("state_size_ok", size_ok, "every state array has the game's state size")
    mask_ok, features_ok, codes_ok = (np.ones(n, dtype=bool) for _ in range(3))
    buffer = np.empty(max(game.num_actions, 64), dtype=np.int64)
    observation = np.empty(int(np.prod(game.observation_shape)), dtype=np.float32)
    hook = getattr(game, "board_codes", None)
    lowest = -(game.num_players + 1) if getattr(game, "neck_tiles", False) else -1
    for i in _sample(n, sample, seed + 1):
        player = int(t.column("player")[int(i)].as_py())
        if not size_ok[i] or not 0 <= player < game.num_players:
            continue  # the cheap checks report these rows; the kernels must not see them
        s = np.asarray(t.column("state")[int(i)].as_py(), dtype=np.int64)
        rebuilt = np.zeros(game.num_actions, dtype=np.int8)
        rebuilt[buffer[: k.legal_actions(s, player, buffer)]] = 1
        mask_ok[i] = np.array_equal(rebuilt, mask[i])
        k.observation(s, player, observation)
        stored = np.asarray(t.column("features")[int(i)].as_py(), dtype=np.float32)
        features_ok[i] = np.array_equal(stored, observation)
        if hook is not None:
            codes = np.asarray(hook(s[None]))
            codes_ok[i] = bool(((codes >= lowest) & (codes <= game.num_players)).all())
    says = "(sample) legal_mask == legal actions of the state rebuilt from `state`"
    suite.derived("mask_matches_state", mask_ok, says)
    says = "(sample) features == observation of the rebuilt state"
    suite.derived("features_match_state", features_ok, says)
    codes = "0 empty, p + 1, -1 deadly" + (", -(p + 2) a neck" if lowest < -1 else "")
    says = f"(sample) board codes in {lowest}..{game.num_players} ({codes})"
    suite.derived("board_codes_ok", codes_ok, says)


def _schema_ok(suite: Suite) -> bool:
    f = suite.frame
    return bool((f["expected"] == f["actual"]).all() and f["nulls_ok"].all() and f["rows_ok"].all())


def build_suites(
    game,
    parts: dict[str, list[tuple[str, pa.Table, int]]],
    state_size: int | None = None,
    sample: int = 200,
    seed: int = 0,
) -> tuple[list[Suite], list[str]]:
    """(suites, names of the suites skipped): schema suites for every table (`parts`: per
    table its shards as (name, table, rows the manifest lists)); content suites for the tables
    whose shards all match the schema (and whose partners do: sequences and positions are
    checked against games)."""
    suites = [schema_suite(game.name, name, parts[name]) for name in TABLES]
    good = {name for name, s in zip(TABLES, suites, strict=True) if _schema_ok(s)}
    tables = {
        name: pa.concat_tables([t.cast(SCHEMAS[name]) for _, t, _ in parts[name]])
        if parts[name]
        else SCHEMAS[name].empty_table()
        for name in good
    }
    skipped = []
    if {"games", "sequences"} <= good:
        suites.append(games_suite(game, tables, sample, seed))
        suites.append(sequences_suite(game, tables))
    else:
        skipped += [f"{game.name}.games", f"{game.name}.sequences"]
    if {"games", "positions"} <= good:
        suites.append(positions_suite(game, tables, state_size, sample, seed))
    else:
        skipped.append(f"{game.name}.positions")
    return suites, skipped
