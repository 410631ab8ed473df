"""Every validation expectation has a corruption that it, and only it, catches.

One small real Connect 4 dataset (features.store, randomized technique). Each case damages a
copy the way its expectation guards against, as a faulty technique would (the shard's sha256 is
re-recorded, so the hash check lets it through), and the gate must fail on exactly that
expectation. A few expectations cannot fail alone: a game id missing from `games` also voids
the checks gated on finding the game, a length past max_game_length is also past the game's
own length; those cases name the extra failures the corruption implies, nothing more. Checks that
compare cheap columns with a state replay run with `sample=0` where the damage would also
(rightly) break the replay. A last test fails when an expectation is added without a case here.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine import load_game
from engine.games import connect4 as c4
from features.expectations import build_suites
from features.store import generate_dataset
from features.validate import read_shards, validate_dataset

GAME = load_game("connect4")
LIMIT = GAME.max_game_length
SHARD = "part-00000.parquet"


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("corruptions") / "c4"
    generate_dataset(root, "connect4", "randomized", {"x": 30, "y": 3}, seed=0)
    return root


# ---- corrupting helpers ----------------------------------------------------------------------
def rewrite(directory: Path, table: str, change) -> None:
    """change(Arrow table) -> table, written back with its hash and row count re-recorded."""
    path = directory / table / SHARD
    after = change(pq.read_table(path))
    pq.write_table(after, path)
    manifest = json.loads((directory / "manifest.json").read_text())
    shard = manifest["shards"]["0"]
    shard["sha256"][table] = hashlib.sha256(path.read_bytes()).hexdigest()
    shard["rows"][table] = manifest["counts"][table] = after.num_rows
    (directory / "manifest.json").write_text(json.dumps(manifest))


def column(name: str, edit):
    """A change that edits one column as a Python list: edit(values, table) -> values."""

    def change(t: pa.Table) -> pa.Table:
        i = t.column_names.index(name)
        values = edit(t.column(name).to_pylist(), t)
        return t.set_column(i, t.schema.field(i), pa.array(values, t.schema.field(i).type))

    return change


def at(row_of, value_of):
    """Sets values[row] = value_of(values[row], table) at row = row_of(table)."""

    def edit(values, t):
        row = row_of(t)
        values[row] = value_of(values[row], t)
        return values

    return edit


def copy_row(source: int, target: int):
    """Row `target` becomes a copy of row `source` (every column)."""

    def change(t: pa.Table) -> pa.Table:
        rows = t.to_pylist()
        rows[target] = dict(rows[source])
        return pa.Table.from_pylist(rows, schema=t.schema)

    return change


def append_copy(source: int):
    return lambda t: pa.concat_tables([t, t.slice(source, 1)])


def drop_row(row: int):
    return lambda t: pa.concat_tables([t.slice(0, row), t.slice(row + 1)])


def first(predicate):
    """The first row index of a table whose row (a dict) satisfies predicate(row, table)."""
    return lambda t: next(i for i, r in enumerate(t.to_pylist()) if predicate(r, t))


def game_length(t_rows_game_id: int, directory_games: pa.Table) -> int:
    ids = directory_games.column("game_id").to_pylist()
    return directory_games.column("length")[ids.index(t_rows_game_id)].as_py()


def _has_full_column(r, _t) -> bool:
    return 0 in r["legal_mask"]


def _full_column(r) -> int:
    return r["legal_mask"].index(0)


def with_policy(make):
    """A policy on the first position with a full column: make(mask, full_column) -> policy."""

    def edit(values, t):
        row = first(_has_full_column)(t)
        r = t.to_pylist()[row]
        values[row] = make(np.array(r["legal_mask"], float), _full_column(r)).tolist()
        return values

    return column("policy", edit)


def null_in(name: str):
    """A null in a column features.schema does not allow nulls in (written as nullable)."""

    def change(t: pa.Table) -> pa.Table:
        i = t.column_names.index(name)
        values = t.column(name).to_pylist()
        values[0] = None
        field = t.schema.field(i).with_nullable(True)
        return t.set_column(i, field, pa.array(values, field.type))

    return change


def widen(name: str, kind):
    def change(t: pa.Table) -> pa.Table:
        i = t.column_names.index(name)
        return t.set_column(i, name, t.column(name).cast(kind))

    return change


def stone_outside_the_mask(state, r):
    """A stone bit where the mask says empty: board code 3. The stored features follow the
    damaged state, so only the board-code check can see it."""
    s = np.array(state, np.int64)
    cells = (c * c4.STRIDE + r for c in range(c4.WIDTH) for r in range(c4.HEIGHT))
    bit = next(b for b in cells if not (int(s[c4.MASK]) >> b) & 1)
    s[c4.POSITION] |= np.int64(1) << bit
    return s.tolist()


def features_of(state, player) -> list[float]:
    out = np.empty(int(np.prod(GAME.observation_shape)), np.float32)
    GAME.kernels.observation(np.array(state, np.int64), int(player), out)
    return out.tolist()


def board_codes_damage(t: pa.Table) -> pa.Table:
    rows = t.to_pylist()
    rows[0]["state"] = stone_outside_the_mask(rows[0]["state"], rows[0])
    rows[0]["features"] = features_of(rows[0]["state"], rows[0]["player"])
    return pa.Table.from_pylist(rows, schema=t.schema)


def longer_than_its_game(t: pa.Table) -> pa.Table:
    """A sequence one step longer than its game (still within max_game_length)."""
    rows = t.to_pylist()
    i = next(k for k, r in enumerate(rows) if r["length"] < LIMIT)
    rows[i]["length"] += 1
    rows[i]["actions"] += [GAME.neutral_action] * GAME.num_players
    return pa.Table.from_pylist(rows, schema=t.schema)


def _seat_one(r, _t) -> bool:
    return r["player"] == 1


# ---- the cases: (suite, expectation column) -> (table, change, sample, implied extras) ------
P, S, G = "connect4.positions", "connect4.sequences", "connect4.games"
# fmt: off
CASES: dict[tuple[str, str], tuple] = {
    # games
    (G, "game_id"): ("games", append_copy(0), 200, ()),
    (G, "game"): ("games", column("game", at(lambda t: 2, lambda v, t: "othello")), 200, ()),
    (G, "length"): ("games", column("length", at(lambda t: 0, lambda v, t: LIMIT + 1)), 0, ()),
    (G, "returns_ok"): ("games", column("returns", at(lambda t: 0, lambda v, t: [*v, 0.0])), 200,
                        ()),
    (G, "agents_ok"): ("games", column("agents", at(lambda t: 0, lambda v, t: [*v, "random"])),
                       200, ()),
    (G, "history_values_ok"): ("games", column("history", at(lambda t: 0,
                               lambda v, t: [9, *v[1:]])), 0, ()),
    (G, "sequences_ok"): ("sequences", drop_row(0), 200, ()),
    (G, "replays_ok"): ("games", column("history", at(lambda t: 0, lambda v, t: v[:-1])), 200,
                        ()),
    # sequences
    (S, "['game_id', 'player']"): ("sequences", copy_row(0, 1), 200, ()),
    (S, "player"): ("sequences", column("player", at(first(_seat_one), lambda v, t: 2)), 200,
                    ()),
    (S, "num_players"): ("sequences", column("num_players", at(lambda t: 0, lambda v, t: 3)),
                         200, ()),
    (S, "length"): ("sequences", lambda t: column("actions", at(lambda t: 0, lambda v, t: v
                    + [-1] * 2 * (LIMIT + 1 - len(v) // 2)))(column("length", at(
                    lambda t: 0, lambda v, t: LIMIT + 1))(t)), 200,
                    ("length_within_game",)),
    (S, "actions_len_ok"): ("sequences", column("actions", at(lambda t: 0, lambda v, t: v[:-1])),
                            200, ()),
    (S, "actions_range_ok"): ("sequences", column("actions", at(lambda t: 3,
                              lambda v, t: [9, *v[1:]])), 200, ()),
    (S, "game_known"): ("sequences", column("game_id", at(lambda t: 0, lambda v, t: 10**6)), 200,
                        ("outcome_matches_game", "length_within_game", f"{G}:sequences_ok")),
    (S, "outcome_matches_game"): ("sequences", column("outcome", at(first(
                                  lambda r, t: r["outcome"] != 0), lambda v, t: -v)), 200, ()),
    (S, "length_within_game"): ("sequences", longer_than_its_game, 200, ()),
    # positions
    (P, "['game_id', 'ply', 'player']"): ("positions", copy_row(0, 1), 200, ()),
    (P, "player"): ("positions", column("player", at(first(_seat_one), lambda v, t: 2)), 200,
                    ()),
    (P, "ply"): ("positions", column("ply", at(lambda t: 0, lambda v, t: LIMIT + 1)), 200,
                 ("ply_within_game",)),
    (P, "immediate_wins"): ("positions", column("immediate_wins", at(lambda t: 0,
                            lambda v, t: -1)), 200, ()),
    (P, "action_range_ok"): ("positions", column("action", at(first(lambda r, t:
                             r["legal_mask"][-1] == 1), lambda v, t: 9)), 200, ()),
    (P, "mask_ok"): ("positions", column("legal_mask", at(lambda t: 0, lambda v, t: [*v, 0])),
                     200, ()),
    (P, "action_legal"): ("positions", column("action", at(first(_has_full_column), lambda v, t:
                          _full_column(t.to_pylist()[first(_has_full_column)(t)]))), 200, ()),
    (P, "immediate_wins_ok"): ("positions", column("immediate_wins", at(first(_has_full_column),
                               lambda v, t: GAME.num_actions)), 200, ()),
    (P, "features_ok"): ("positions", column("features", at(lambda t: 0,
                         lambda v, t: [float("nan"), *v[1:]])), 0, ()),
    (P, "scores_ok"): ("positions", column("action_scores", at(lambda t: 0,
                       lambda v, t: [*v, 0.0])), 200, ()),
    (P, "policy_ok"): ("positions", with_policy(lambda m, _: 0.5 * m / m.sum()), 200, ()),
    (P, "policy_legal"): ("positions", with_policy(lambda m, c: np.where(np.arange(len(m)) == c,
                          0.1, 0.9 * m / m.sum())), 200, ()),
    (P, "game_known"): ("positions", column("game_id", at(lambda t: 0, lambda v, t: 10**6)), 200,
                        ("outcome_consistent", "ply_within_game")),
    (P, "outcome_consistent"): ("positions", column("outcome", at(lambda t: 4,
                                lambda v, t: 2.0)), 200, ()),
    (P, "ply_within_game"): ("positions", "ply_past_game", 200, ()),
    (P, "state_size_ok"): ("positions", column("state", at(lambda t: 0, lambda v, t: [*v, 0])),
                           200, ()),
    (P, "mask_matches_state"): ("positions", column("legal_mask", at(first(lambda r, t:
                                r["action"] != 0), lambda v, t: [1 - v[0], *v[1:]])), 200, ()),
    (P, "features_match_state"): ("positions", column("features", at(lambda t: 2,
                                  lambda v, t: [1.0 - v[0], *v[1:]])), 200, ()),
    (P, "board_codes_ok"): ("positions", board_codes_damage, 200, ()),
}
# fmt: on
SCHEMA_DAMAGE = {
    "games": ("length", pa.int64()),
    "sequences": ("actions", pa.list_(pa.int32())),
    "positions": ("outcome", pa.float64()),
}
NULLABLE_VICTIM = {"games": "seed", "sequences": "outcome", "positions": "action"}
for _table, (_name, _kind) in SCHEMA_DAMAGE.items():
    _suite = f"connect4.{_table}.schema"
    CASES[(_suite, "['expected', 'actual']")] = (_table, widen(_name, _kind), 200, ())
    CASES[(_suite, "nulls_ok")] = (_table, null_in(NULLABLE_VICTIM[_table]), 200, ())
    CASES[(_suite, "rows_ok")] = (_table, f"rows:{_table}", 200, ())


def damage(directory: Path, table: str, change) -> None:
    if change == "ply_past_game":  # a ply beyond its own game's length (within the limit)
        games = pq.read_table(directory / "games" / SHARD)

        def edit(values, t):
            ids = t.column("game_id").to_pylist()
            i = next(k for k, g in enumerate(ids) if game_length(g, games) < LIMIT)
            values[i] = game_length(ids[i], games) + 1
            return values

        rewrite(directory, table, column("ply", edit))
    elif isinstance(change, str) and change.startswith("rows:"):  # the manifest lists one more
        manifest = json.loads((directory / "manifest.json").read_text())
        manifest["shards"]["0"]["rows"][table] += 1
        (directory / "manifest.json").write_text(json.dumps(manifest))
    else:
        rewrite(directory, table, change)


def key_of(suite: str, kwargs: dict) -> str:
    found = kwargs.get("column") or kwargs.get("column_list")
    return str(found or [kwargs.get("column_A"), kwargs.get("column_B")])


@pytest.mark.slow
@pytest.mark.parametrize("expectation", sorted(CASES), ids="{0[0]}:{0[1]}".format)
def test_each_corruption_fails_exactly_its_expectation(dataset, tmp_path, expectation):
    suite, _ = expectation
    table, change, sample, implied = CASES[expectation]
    data = tmp_path / "data"
    shutil.copytree(dataset, data, ignore=shutil.ignore_patterns("validation"))
    damage(data, table, change)
    report = validate_dataset(data, sample=sample, docs=False, write=False)
    failed = {(f["suite"], str(f["column"])) for f in report.failures()}
    extras = {(e.split(":")[0], e.split(":")[1]) if ":" in e else (suite, e) for e in implied}
    assert not report.success
    assert failed == {expectation, *extras}, report.summary()


def test_the_clean_dataset_passes_and_every_expectation_has_a_case(dataset):
    report = validate_dataset(dataset, docs=False, write=False)
    assert report.success, report.summary()
    _, parts = read_shards(dataset)
    manifest = json.loads((dataset / "manifest.json").read_text())
    suites, skipped = build_suites(GAME, parts, manifest["game"]["state_size"])
    assert not skipped
    every = {(s.name, key_of(s.name, kwargs)) for s in suites for _, kwargs, _ in s.expectations}
    assert every == set(CASES)
