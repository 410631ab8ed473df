"""The validation gate: real datasets pass; each kind of corruption of a real shard is caught.

Datasets come from the real store and techniques (`features.store.generate_dataset`); each
corruption test copies one, rewrites one Parquet shard with a single defect, and checks that
the gate fails on the expectation that names that defect (the summary and JSON say where).
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
from features.store import generate_dataset
from features.validate import validate_dataset
from flows.entry import main

SHARD = "part-00000.parquet"


@pytest.fixture(scope="module")
def datasets(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("datasets")
    made = {}
    for name, game, technique, options in (
        ("c4", "connect4", "randomized", {"x": 30, "y": 3}),
        ("c4_selfplay", "connect4", "selfplay", {"x": 2, "agents": "mcts:sims=30"}),
        ("bikes", "lazerbike", "randomized", {"x": 6, "y": 2}),
    ):
        generate_dataset(root / name, game, technique, options, seed=0)
        made[name] = root / name
    return made


def copy(src: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "data"
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("validation"))
    return dst


def rewrite(directory: Path, table: str, change) -> None:
    """Replaces the first shard of `table` by change(its Arrow table), same number of rows, and
    records its hash as the store would: a technique that wrote bad rows, not a changed file."""
    path = directory / table / SHARD
    before = pq.read_table(path)
    after = change(before)
    assert after.num_rows == before.num_rows
    pq.write_table(after, path)
    manifest = json.loads((directory / "manifest.json").read_text())
    manifest["shards"]["0"]["sha256"][table] = hashlib.sha256(path.read_bytes()).hexdigest()
    (directory / "manifest.json").write_text(json.dumps(manifest))


def set_column(table: pa.Table, name: str, values) -> pa.Table:
    index = table.column_names.index(name)
    return table.set_column(
        index, table.schema.field(index), pa.array(values, table.schema.field(index).type)
    )


def failures(directory: Path) -> dict[tuple[str, str], dict]:
    report = validate_dataset(directory, docs=False)
    assert not report.success
    return {(f["suite"], str(f["column"])): f for f in report.failures()}


# ---- clean data ----------------------------------------------------------------------------
def test_clean_dataset_passes_with_json_and_data_docs(datasets, tmp_path, capsys):
    data = copy(datasets["c4"], tmp_path)
    assert main(["validate", str(data)]) == 0
    out = capsys.readouterr().out
    assert "PASSED" in out and "connect4.positions" in out
    result = json.loads((data / "validation" / "result.json").read_text())
    assert result["success"] is True and result["failures"] == []
    names = {r["suite"] for r in result["suites"]}
    assert {"connect4.games", "connect4.sequences", "connect4.positions"} <= names
    assert (data / "validation" / "data_docs" / "index.html").is_file()


@pytest.mark.slow
def test_a_relative_folder_validates_with_its_data_docs(datasets, tmp_path, monkeypatch):
    """`gridbots validate data/x` from the project root: great_expectations' Data Docs store
    raised ValueError (a traceback) on a relative folder."""
    copy(datasets["c4"], tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["validate", "data"]) == 0
    assert (tmp_path / "data" / "validation" / "data_docs" / "index.html").is_file()


@pytest.mark.parametrize("name", ["c4_selfplay", "bikes"])
def test_other_techniques_and_simultaneous_games_pass(datasets, name, tmp_path):
    report = validate_dataset(copy(datasets[name], tmp_path), docs=False)
    assert report.success, report.summary()
    if name == "c4_selfplay":  # real visit policies were checked, not skipped
        policies = pq.read_table(datasets[name] / "positions" / SHARD).column("policy")
        assert policies.null_count == 0


# ---- one corruption per test ---------------------------------------------------------------
def test_wrong_column_type(datasets, tmp_path):
    data = copy(datasets["c4"], tmp_path)

    def widen(t):
        i = t.column_names.index("actions")
        return t.set_column(i, "actions", t.column("actions").cast(pa.list_(pa.int32())))

    rewrite(data, "sequences", widen)
    found = failures(data)
    key = ("connect4.sequences.schema", "['expected', 'actual']")
    assert key in found
    assert any(e.get("field") == "actions" for e in found[key]["examples"])


def test_missing_column(datasets, tmp_path):
    data = copy(datasets["c4"], tmp_path)
    rewrite(data, "positions", lambda t: t.drop_columns(["immediate_wins"]))
    found = failures(data)
    examples = found[("connect4.positions.schema", "['expected', 'actual']")]["examples"]
    assert any(e.get("field") == "immediate_wins" for e in examples)


def test_action_out_of_range_in_sequences(datasets, tmp_path):
    data = copy(datasets["c4"], tmp_path)

    def bad_action(t):
        rows = t.column("actions").to_pylist()
        rows[3][0] = 9  # connect4 has columns 0..6; -1 is the neutral value
        return set_column(t, "actions", rows)

    rewrite(data, "sequences", bad_action)
    found = failures(data)
    assert found[("connect4.sequences", "actions_range_ok")]["unexpected"] == 1


def _row_with_illegal_action(t: pa.Table) -> tuple[int, int]:
    for i, mask in enumerate(t.column("legal_mask").to_pylist()):
        if 0 in mask:
            return i, mask.index(0)
    raise AssertionError("the fixture has no position with a full column")


def test_recorded_action_illegal(datasets, tmp_path):
    data = copy(datasets["c4"], tmp_path)

    def illegal(t):
        i, column = _row_with_illegal_action(t)
        actions = t.column("action").to_pylist()
        actions[i] = column
        return set_column(t, "action", actions)

    rewrite(data, "positions", illegal)
    found = failures(data)
    assert found[("connect4.positions", "action_legal")]["unexpected"] == 1


def test_legal_mask_disagrees_with_rebuilt_state(datasets, tmp_path):
    data = copy(datasets["c4"], tmp_path)

    def flip(t):
        masks = t.column("legal_mask").to_pylist()
        actions = t.column("action").to_pylist()
        column = next(c for c in range(7) if c != actions[5])
        masks[5][column] = 1 - masks[5][column]  # the played action stays legal
        return set_column(t, "legal_mask", masks)

    rewrite(data, "positions", flip)
    found = failures(data)
    assert found[("connect4.positions", "mask_matches_state")]["unexpected"] == 1
    assert ("connect4.positions", "action_legal") not in found


def test_features_disagree_with_rebuilt_state(datasets, tmp_path):
    data = copy(datasets["c4"], tmp_path)

    def smudge(t):
        features = t.column("features").to_pylist()
        features[2][0] = 1.0 - features[2][0]
        return set_column(t, "features", features)

    rewrite(data, "positions", smudge)
    assert ("connect4.positions", "features_match_state") in failures(data)


def _with_policy(t: pa.Table, make) -> pa.Table:
    i, column = _row_with_illegal_action(t)
    masks = t.column("legal_mask").to_pylist()
    policies = t.column("policy").to_pylist()
    policies[i] = make(np.array(masks[i], dtype=float), column).tolist()
    return set_column(t, "policy", policies)


def test_policy_not_summing_to_one(datasets, tmp_path):
    data = copy(datasets["c4"], tmp_path)
    rewrite(data, "positions", lambda t: _with_policy(t, lambda m, _: 0.5 * m / m.sum()))
    found = failures(data)
    assert found[("connect4.positions", "policy_ok")]["unexpected"] == 1
    assert ("connect4.positions", "policy_legal") not in found


def test_policy_on_illegal_action(datasets, tmp_path):
    data = copy(datasets["c4"], tmp_path)

    def leaky(mask, column):
        policy = mask / mask.sum() * 0.9
        policy[column] = 0.1  # still sums to 1, but on a full column
        return policy

    rewrite(data, "positions", lambda t: _with_policy(t, leaky))
    found = failures(data)
    assert found[("connect4.positions", "policy_legal")]["unexpected"] == 1
    assert ("connect4.positions", "policy_ok") not in found


def test_sequence_longer_than_max_game_length(datasets, tmp_path):
    data = copy(datasets["c4"], tmp_path)
    limit = load_game("connect4").max_game_length

    def stretch(t):
        lengths = t.column("length").to_pylist()
        lengths[0] = limit + 1
        return set_column(t, "length", lengths)

    rewrite(data, "sequences", stretch)
    found = failures(data)
    assert found[("connect4.sequences", "length")]["unexpected"] == 1


def test_duplicate_game_ids(datasets, tmp_path):
    data = copy(datasets["c4"], tmp_path)

    def duplicate(t):
        ids = t.column("game_id").to_pylist()
        ids[1] = ids[0]
        return set_column(t, "game_id", ids)

    rewrite(data, "games", duplicate)
    found = failures(data)
    assert found[("connect4.games", "game_id")]["unexpected"] == 2


def test_sequence_outcome_disagrees_with_games(datasets, tmp_path):
    data = copy(datasets["c4"], tmp_path)

    def flip(t):
        outcomes = t.column("outcome").to_pylist()
        i = next(k for k, v in enumerate(outcomes) if v != 0)
        outcomes[i] = -outcomes[i]
        return set_column(t, "outcome", outcomes)

    rewrite(data, "sequences", flip)
    found = failures(data)
    assert found[("connect4.sequences", "outcome_matches_game")]["unexpected"] == 1


def test_position_outcome_disagrees_with_games(datasets, tmp_path):
    data = copy(datasets["c4"], tmp_path)

    def impossible(t):
        outcomes = t.column("outcome").to_pylist()
        outcomes[4] = 2.0  # neither the game's return nor a mean of explored scores
        return set_column(t, "outcome", outcomes)

    rewrite(data, "positions", impossible)
    found = failures(data)
    assert found[("connect4.positions", "outcome_consistent")]["unexpected"] == 1


def test_history_that_does_not_replay(datasets, tmp_path):
    data = copy(datasets["c4"], tmp_path)

    def cut(t):
        histories = t.column("history").to_pylist()
        histories[0] = histories[0][:-1]  # one move short of its length and returns
        return set_column(t, "history", histories)

    rewrite(data, "games", cut)
    found = failures(data)
    assert found[("connect4.games", "replays_ok")]["unexpected"] == 1


# ---- the command ---------------------------------------------------------------------------
def test_failing_gate_exits_1_with_readable_summary(datasets, tmp_path, capsys):
    data = copy(datasets["c4"], tmp_path)

    def flip(t):
        outcomes = t.column("outcome").to_pylist()
        i = next(k for k, v in enumerate(outcomes) if v != 0)
        outcomes[i] = -outcomes[i]
        return set_column(t, "outcome", outcomes)

    rewrite(data, "sequences", flip)
    assert main(["validate", str(data), "--no-docs"]) == 1
    out = capsys.readouterr().out
    assert "FAILED" in out and "outcome_matches_game" in out and "1 of 180 rows" in out
    assert "game_id=" in out  # examples name the rows
    result = json.loads((data / "validation" / "result.json").read_text())
    assert result["success"] is False
    assert [f["column"] for f in result["failures"]] == ["outcome_matches_game"]


def test_missing_or_half_written_dataset_is_bad_input(datasets, tmp_path, capsys):
    assert main(["validate", str(tmp_path / "nothing")]) == 2
    data = copy(datasets["c4"], tmp_path)
    manifest = json.loads((data / "manifest.json").read_text())
    manifest["complete"] = False
    (data / "manifest.json").write_text(json.dumps(manifest))
    assert main(["validate", str(data)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("gridbots: error:") for line in err)


# ---- a shard changed after it was written: stopped before anything reads it ----------------
@pytest.mark.parametrize("damage", ["changed", "truncated"])
@pytest.mark.parametrize("command", ["validate", "encode"])
def test_a_changed_or_truncated_shard_stops_the_reader(datasets, tmp_path, capsys, damage, command):
    data = copy(datasets["c4"], tmp_path)
    path = data / "sequences" / SHARD  # the table both read (encode: qualitative sequences)
    if damage == "changed":  # a valid Parquet file, even the same rows, but not the bytes written
        pq.write_table(pq.read_table(path), path, compression="gzip")
    else:
        path.write_bytes(path.read_bytes()[:-100])
    argv = ["validate", str(data)]
    if command == "encode":
        argv = ["encode", str(data), "--encoding", "qualitative", "--out", str(tmp_path / "e.npz")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "sequences/part-00000.parquet changed since it was written" in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "e.npz").exists()
