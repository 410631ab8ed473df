"""Dataset storage: round trip, worker independence, kill -9 and resume, refusals."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest

from engine import load_game
from features.errors import DataError
from features.generate import parse_params
from features.schema import SCHEMA_VERSION, SCHEMAS, TABLES
from features.store import MANIFEST, generate_dataset, load_dataset, read_manifest, shard_path

ROOT = Path(__file__).resolve().parents[1]
SMALL = {"x": 30, "y": 4, "shard_size": 40}  # 10 states per shard: 3 shards of 40 games


def _same(a: pa.Table, b: pa.Table) -> bool:
    """Equality that treats NaN (unexplored action scores) as equal to NaN."""
    return a.schema.equals(b.schema) and a.to_pandas().equals(b.to_pandas())


def _tables(root: Path) -> dict[str, pa.Table]:
    return {table: load_dataset(root, table, verify=True) for table in TABLES}


def test_round_trip_matches_the_shards_and_the_manifest(tmp_path):
    manifest = generate_dataset(tmp_path / "d", "connect4", "randomized", SMALL, seed=4)
    assert manifest["complete"] and manifest["planned_shards"] == 3
    assert manifest["counts"] == {"games": 120, "sequences": 240, "positions": 30}
    on_disk = read_manifest(tmp_path / "d")
    assert on_disk["schema_version"] == SCHEMA_VERSION
    assert on_disk["game"]["num_actions"] == 7 and on_disk["game"]["state_size"] == 4
    assert on_disk["game"]["observation_shape"] == [2, 6, 7]
    assert on_disk["game"]["neutral_action"] == -1
    assert on_disk["technique"] == "randomized" and on_disk["seed"] == 4
    assert sorted(on_disk["shards"]) == ["0", "1", "2"]
    assert all(s["rows"]["games"] == 40 for s in on_disk["shards"].values())
    game = load_game("connect4")
    module, params = parse_params(game, "randomized", SMALL)
    tables = _tables(tmp_path / "d")
    for table in TABLES:
        assert tables[table].schema.equals(SCHEMAS[table])
        direct = [module.generate_shard(game, params, 4, k, k * 40)[table] for k in range(3)]
        assert _same(tables[table], pa.concat_tables(direct))
    assert tables["games"].column("game_id").to_pylist() == list(range(120))


def test_workers_do_not_change_the_data(tmp_path):
    options = {"x": 60, "y": 3, "shard_size": 30}
    one = generate_dataset(tmp_path / "one", "connect4", "randomized", options, workers=1)
    two = generate_dataset(tmp_path / "two", "connect4", "randomized", options, workers=2)
    assert one["content_hash"] == two["content_hash"]
    a, b = _tables(tmp_path / "one"), _tables(tmp_path / "two")
    assert all(_same(a[t], b[t]) for t in TABLES)


def _command(out: Path, seed: int = 1) -> list[str]:
    return [
        sys.executable, "-m", "flows.cli", "generate", "connect4", "randomized", "--out",
        str(out), "--x", "16000", "--y", "5", "--shard-size", "1000", "--seed", str(seed),
    ]  # fmt: skip


@pytest.mark.slow
def test_kill_9_then_resume_gives_the_uninterrupted_dataset(tmp_path):
    killed = tmp_path / "killed"
    process = subprocess.Popen(_command(killed), cwd=ROOT, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while time.time() < deadline:  # kill once two shards are committed
        try:
            if len(json.loads((killed / MANIFEST).read_text())["shards"]) >= 2:
                break
        except (OSError, ValueError):
            pass
        time.sleep(0.005)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    manifest = read_manifest(killed)
    assert not manifest["complete"] and 2 <= len(manifest["shards"]) < 80
    for key in manifest["shards"]:  # every listed shard is whole
        for table in TABLES:
            assert shard_path(killed, table, int(key)).is_file()
    with pytest.raises(DataError, match="incomplete"):
        load_dataset(killed, "games")
    (killed / "games" / ".part-00079.parquet.999.tmp").write_bytes(b"half")  # a torn write
    resumed = subprocess.run(_command(killed), cwd=ROOT, capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    assert not list(killed.rglob("*.tmp"))
    fresh = tmp_path / "fresh"
    manifest = generate_dataset(
        fresh, "connect4", "randomized", {"x": 16000, "y": 5, "shard_size": 1000}, seed=1
    )
    assert read_manifest(killed)["content_hash"] == manifest["content_hash"]
    a, b = _tables(killed), _tables(fresh)
    assert all(_same(a[t], b[t]) for t in TABLES)


def test_unlisted_or_missing_shard_files_are_redone(tmp_path):
    root = tmp_path / "d"
    reference = generate_dataset(root, "connect4", "randomized", SMALL)
    manifest = read_manifest(root)
    del manifest["shards"]["1"]  # renamed but never listed: killed before the manifest
    manifest["complete"] = False
    (root / MANIFEST).write_text(json.dumps(manifest))
    shard_path(root, "positions", 2).unlink()  # listed, but a file is gone
    again = generate_dataset(root, "connect4", "randomized", SMALL)
    assert again["content_hash"] == reference["content_hash"] and again["complete"]


def test_another_command_on_the_same_directory_is_refused(tmp_path):
    root = tmp_path / "d"
    generate_dataset(root, "connect4", "randomized", SMALL, seed=1)
    for game, options, seed in [
        ("connect4", SMALL, 2),
        ("connect4", {**SMALL, "y": 5}, 1),
        ("othello", SMALL, 1),
    ]:
        with pytest.raises(DataError, match="another command"):
            generate_dataset(root, game, "randomized", options, seed=seed)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(DataError, match="not empty"):
        generate_dataset(tmp_path / "other", "connect4", "randomized", SMALL)


def test_reader_refuses_missing_and_half_written_datasets(tmp_path):
    with pytest.raises(DataError, match="missing"):
        load_dataset(tmp_path / "nothing", "games")
    root = tmp_path / "d"
    generate_dataset(root, "connect4", "randomized", SMALL)
    with pytest.raises(DataError, match="unknown table"):
        load_dataset(root, "moves")
    path = shard_path(root, "sequences", 1)
    path.write_bytes(path.read_bytes()[:100])  # truncated
    with pytest.raises(DataError, match=r"unreadable|changed since it was written"):
        load_dataset(root, "sequences")
    shard_path(root, "games", 0).unlink()
    with pytest.raises(DataError, match="half-written"):
        load_dataset(root, "games")
