"""Datasets on disk: Parquet shards plus `manifest.json`, safe against kill -9 and resumable.

Layout: DIR/{games,sequences,positions}/part-NNNNN.parquet and DIR/manifest.json. A shard is
done only when its three files exist *and* the manifest lists it. Workers write each table to a
temporary file (fsynced); the parent renames the three into place, fsyncs the folders, then
rewrites the manifest through a temporary file and a rename. A kill at any moment therefore
leaves whole shards and a manifest that says `complete: false`; running the same command again
deletes stray temporary files, skips finished shards and ends with the dataset an uninterrupted
run writes (every shard is a pure function of game, params, seed and shard number, so the
number of workers changes nothing). A different command on an existing dataset is refused.

The folder holds nothing of how it was made: no timings, hosts, worker ids or dates, so the same
command writes the same bytes (DVC sees an unchanged output, and a regenerated dataset leaves its
downstream stages up to date). How a run went (each shard's worker and seconds, the run's
seconds) is returned with the final manifest (`run`), for the caller to report (the pipeline's
generate stage writes it to its metrics file).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shutil
import socket
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from features.errors import DataError
from features.schema import SCHEMA_VERSION, SCHEMAS, TABLES

MANIFEST = "manifest.json"
TEMP_SUFFIX = ".tmp"
COMPRESSION = "zstd"
#: dictionary encoding only where values repeat (it slows list columns of numbers down)
DICTIONARY = ["technique", "game", "scenario", "agents.list.element"]


def shard_name(shard: int) -> str:
    return f"part-{shard:05d}.parquet"


def shard_path(root: Path, table: str, shard: int) -> Path:
    return Path(root) / table / shard_name(shard)


# ---- small file-system helpers -----------------------------------------------------------------
def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_atomic(path: Path, data: bytes) -> None:
    temp = path.with_name(f".{path.name}.{os.getpid()}{TEMP_SUFFIX}")
    with open(temp, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temp, path)
    _fsync_dir(path.parent)


def _stray_temps(root: Path) -> Iterator[Path]:
    for folder in (root, *(root / t for t in TABLES)):
        if folder.is_dir():
            yield from (p for p in folder.iterdir() if p.name.endswith(TEMP_SUFFIX))


# ---- manifest ----------------------------------------------------------------------------------
def read_manifest(root: Path | str) -> dict[str, Any]:
    path = Path(root) / MANIFEST
    if not path.is_file():
        raise DataError(f"no dataset at {root}: {MANIFEST} is missing")
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise DataError(f"unreadable {path}: {error}") from None


def _identity(game, technique: str, params: dict[str, Any], seed: int) -> dict[str, Any]:
    """What makes two commands the same dataset (workers and timings do not)."""
    return json.loads(
        json.dumps(
            {
                "schema_version": SCHEMA_VERSION,
                "game": game.spec(),
                "technique": technique,
                "params": params,
                "seed": int(seed),
            },
            sort_keys=True,
        )
    )


def _content_hash(shards: dict[str, Any]) -> str:
    digest = hashlib.sha256()
    for key in sorted(shards, key=int):
        for table in TABLES:
            digest.update(f"{key}/{table}:{shards[key]['sha256'][table]}\n".encode())
    return digest.hexdigest()


# ---- one shard (runs in a worker process) ------------------------------------------------------
_CACHE: dict[tuple[str, str], Any] = {}


def _setup(game_spec: str, technique: str) -> tuple[Any, Any]:
    """Game and technique module, built once per process (numba kernels load once)."""
    key = (game_spec, technique)
    if key not in _CACHE:
        from engine import parse_game_spec
        from features.generate import technique as technique_module

        _CACHE[key] = (parse_game_spec(game_spec), technique_module(technique))
    return _CACHE[key]


def parquet_bytes(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    pq.write_table(table, sink, compression=COMPRESSION, use_dictionary=DICTIONARY)
    return sink.getvalue()


def run_shard(task: dict[str, Any]) -> dict[str, Any]:
    """Generates one shard and writes its three tables to fsynced temporary files."""
    started = time.perf_counter()
    game, module = _setup(task["game"], task["technique"])
    tables = module.generate_shard(
        game, task["params"], task["seed"], task["shard"], task["first_game_id"]
    )
    generated = time.perf_counter()
    root = Path(task["root"])
    result: dict[str, Any] = {"shard": task["shard"], "rows": {}, "sha256": {}, "temp": {}}
    for table in TABLES:
        data = tables[table]
        if not data.schema.equals(SCHEMAS[table]):
            raise DataError(f"{task['technique']}: {table} table does not match the schema")
        payload = parquet_bytes(data)
        final = shard_path(root, table, task["shard"])
        temp = final.with_name(f".{final.name}.{os.getpid()}{TEMP_SUFFIX}")
        with open(temp, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        result["rows"][table] = data.num_rows
        result["sha256"][table] = hashlib.sha256(payload).hexdigest()
        result["temp"][table] = str(temp)
    result["worker"] = f"{socket.gethostname()}:{os.getpid()}"  # which machine made it
    result["seconds"] = {
        "generate": round(generated - started, 4),
        "write": round(time.perf_counter() - generated, 4),
    }
    return result


# ---- the generation run ------------------------------------------------------------------------
class Plan:
    """A dataset being written (or resumed): the shards left to do, and how each finished one
    is committed. `gridbots generate` and the pipeline's generate stage both write through it,
    so a killed run of either resumes where it stopped."""

    def __init__(self, root: Path, manifest: dict[str, Any], tasks: list[dict[str, Any]]):
        self.root = root
        self.manifest = manifest
        self.tasks = tasks  # one per shard still to generate, for run_shard (any process)
        self.planned = int(manifest["planned_shards"])
        self.started = time.time()
        self.began = time.strftime("%Y-%m-%dT%H:%M:%S")
        self.shard_runs: dict[str, dict[str, Any]] = {}  # this run's shards: worker, seconds

    @property
    def done(self) -> int:
        return len(self.manifest["shards"])

    def commit(self, result: dict[str, Any]) -> None:
        """A finished shard from run_shard: its temporary files renamed into place, then the
        manifest rewritten (a kill between the two only costs that shard)."""
        for table, temp in result.pop("temp").items():
            os.replace(temp, shard_path(self.root, table, result["shard"]))
        for table in TABLES:
            _fsync_dir(self.root / table)
        how = {key: result.pop(key) for key in ("worker", "seconds") if key in result}
        self.shard_runs[str(result["shard"])] = how
        self.manifest["shards"][str(result["shard"])] = result
        _save(self.root, self.manifest)

    def finish(self) -> dict[str, Any]:
        """Marks the dataset complete (every planned shard committed); the final manifest, with
        this run's record under `run` (never written into the folder)."""
        done = self.manifest["shards"]
        missing = [k for k in range(self.planned) if str(k) not in done]
        if missing:
            raise DataError(f"{self.root}: shards {missing[:5]} are not committed yet")
        for temp in _stray_temps(self.root):  # an attempt a lost worker left half-written
            temp.unlink(missing_ok=True)
        manifest = self.manifest
        manifest["complete"] = True
        manifest["content_hash"] = _content_hash(done)
        manifest["counts"] = {t: sum(s["rows"][t] for s in done.values()) for t in TABLES}
        _save(self.root, manifest)
        run = {
            "seconds": round(time.time() - self.started, 3),
            "started": self.began,
            "finished": time.strftime("%Y-%m-%dT%H:%M:%S"),
            "shards": dict(sorted(self.shard_runs.items(), key=lambda item: int(item[0]))),
        }
        return {**manifest, "run": run}


def plan(
    root: Path | str,
    game_spec: str,
    technique: str,
    options: dict[str, Any],
    seed: int = 0,
    replace: bool = False,
) -> Plan:
    """Opens the dataset at `root` for writing: a new one, or the same command's interrupted
    one (stray temporary files removed, finished shards kept). A dataset made by another
    command is refused, or with `replace` (an output the caller owns, such as a DVC stage's)
    deleted first."""
    from engine import parse_game_spec
    from features import generate

    root = Path(root)
    game = parse_game_spec(game_spec)
    module, params = generate.parse_params(game, technique, options)
    identity = _identity(game, technique, params, seed)
    planned = generate.num_shards(module, game, params)
    stride = generate.game_id_stride(module, game, params)
    if replace and root.exists() and _made_by_another(root, identity):
        shutil.rmtree(root)
    manifest = _open(root, game, identity, planned)
    for temp in _stray_temps(root):
        temp.unlink(missing_ok=True)
    done = manifest["shards"]
    todo = [
        k
        for k in range(planned)
        if str(k) not in done or not all(shard_path(root, t, k).is_file() for t in TABLES)
    ]
    for k in todo:
        done.pop(str(k), None)
    tasks = [
        {
            "game": game.spec(),
            "technique": technique,
            "params": params,
            "seed": int(seed),
            "shard": k,
            "first_game_id": k * stride,
            "root": str(root.resolve()),
        }
        for k in todo
    ]
    return Plan(root, manifest, tasks)


def _made_by_another(root: Path, identity: dict[str, Any]) -> bool:
    try:
        return read_manifest(root).get("identity") != identity
    except DataError:  # no manifest (or an unreadable one): not a dataset to resume
        return any(True for _ in _listing(root))


def generate_dataset(
    root: Path | str,
    game_spec: str,
    technique: str,
    options: dict[str, Any],
    seed: int = 0,
    workers: int = 1,
    progress: Callable[[int, int], None] | None = None,
    mapper: Callable[[Callable[[dict[str, Any]], Any], list[dict[str, Any]]], Iterable[Any]]
    | None = None,
) -> dict[str, Any]:
    """Writes (or resumes) the dataset at `root`; returns the final manifest.

    `options` are the command's technique options (None = default); `progress(done, total)` is
    called after every shard. `mapper` runs the shards elsewhere instead of `workers`
    processes (a cluster: `mapper(run_shard, tasks)` yields their results in order), each
    committed here as it comes.
    """
    job = plan(root, game_spec, technique, options, seed)
    if progress:
        progress(job.done, job.planned)

    def finish(result: dict[str, Any]) -> None:
        job.commit(result)
        if progress:
            progress(job.done, job.planned)

    if mapper is not None:
        for result in mapper(run_shard, job.tasks):
            finish(result)
    elif workers <= 1 or len(job.tasks) <= 1:
        for task in job.tasks:
            finish(run_shard(task))
    else:
        _run_pool(iter(job.tasks), workers, finish)
    return job.finish()


def _run_pool(tasks: Iterator[dict[str, Any]], workers: int, finish: Callable) -> None:
    """A few shards in flight per worker; results are committed as they arrive."""
    with ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn")) as pool:
        pending = set()
        for task in tasks:
            pending.add(pool.submit(run_shard, task))
            if len(pending) >= 2 * workers:
                ready, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in ready:
                    finish(future.result())
        for future in pending:
            finish(future.result())


def _open(root: Path, game, identity: dict[str, Any], planned: int) -> dict[str, Any]:
    """The manifest to resume, or a new one; refuses a directory made by another command."""
    if (root / MANIFEST).is_file():
        manifest = read_manifest(root)
        if manifest.get("identity") != identity:
            old = manifest.get("identity", {})
            raise DataError(
                f"{root} holds a dataset made by another command "
                f"({old.get('technique')} on {old.get('game')}, seed {old.get('seed')}, "
                f"params {old.get('params')}); use another --out or delete it"
            )
        manifest["complete"] = False
        manifest["content_hash"] = None
        manifest.pop("timings", None)  # what a manifest written before issue 68 held
        for shard in manifest["shards"].values():
            shard.pop("worker", None)
            shard.pop("seconds", None)
        return manifest
    if root.exists() and any(not p.name.endswith(TEMP_SUFFIX) for p in _listing(root)):
        raise DataError(f"{root} is not empty and holds no gridbots dataset; use another --out")
    for table in TABLES:
        (root / table).mkdir(parents=True, exist_ok=True)
    metadata = game.metadata()
    metadata["state_size"] = len(game.new_state_array(seed=0))
    manifest = {
        "schema_version": SCHEMA_VERSION,
        "identity": identity,
        "game": {"spec": game.spec(), **metadata},
        "technique": identity["technique"],
        "params": identity["params"],
        "seed": identity["seed"],
        "planned_shards": planned,
        "shards": {},
        "complete": False,
        "content_hash": None,
        "counts": {},
    }
    _save(root, manifest)
    return manifest


def _listing(root: Path) -> Iterator[Path]:
    for path in root.rglob("*"):
        if path.is_file():
            yield path


def _save(root: Path, manifest: dict[str, Any]) -> None:
    _write_atomic(root / MANIFEST, json.dumps(manifest, indent=1, sort_keys=True).encode())


# ---- reading -----------------------------------------------------------------------------------
def shard_files(root: Path | str, table: str) -> list[Path]:
    """The Parquet files of `table` in shard order; DataError unless the dataset is whole."""
    root = Path(root)
    if table not in TABLES:
        raise DataError(f"unknown table {table!r}; known: {', '.join(TABLES)}")
    manifest = read_manifest(root)
    if not manifest.get("complete"):
        raise DataError(f"{root} is incomplete (an interrupted run): run the same command again")
    shards = manifest.get("shards", {})
    if len(shards) != manifest.get("planned_shards"):
        raise DataError(f"{root}: manifest lists {len(shards)} of {manifest.get('planned_shards')}")
    paths = []
    for key in sorted(shards, key=int):
        path = shard_path(root, table, int(key))
        if not path.is_file():
            raise DataError(f"{root} is half-written: {path} is missing")
        paths.append(path)
    return paths


def read_verified(path: Path, expected_sha256: str) -> bytes:
    """A shard file's bytes, only if they are the ones the manifest recorded: a shard changed or
    truncated since it was written stops the reader with one clear line."""
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise DataError(f"{path} is unreadable: {error}") from None
    if hashlib.sha256(data).hexdigest() != expected_sha256:
        raise DataError(
            f"{path} changed since it was written (its sha256 is not the manifest's): "
            "generate the dataset again"
        )
    return data


def load_dataset(root: Path | str, table: str, verify: bool = True) -> pa.Table:
    """One table of a complete dataset (all shards), each shard checked against the manifest's
    hash (unless `verify` is off) and row count."""
    root = Path(root)
    paths = shard_files(root, table)
    shards = read_manifest(root)["shards"]
    parts = []
    for key, path in zip(sorted(shards, key=int), paths, strict=True):
        try:
            if verify:
                part = pq.read_table(
                    pa.BufferReader(read_verified(path, shards[key]["sha256"][table]))
                )
            else:
                part = pq.read_table(path)
        except (OSError, pa.ArrowException) as error:
            raise DataError(f"{path} is unreadable (half-written?): {error}") from None
        if part.num_rows != shards[key]["rows"][table]:
            raise DataError(f"{path} has {part.num_rows} rows, the manifest says otherwise")
        parts.append(part.cast(SCHEMAS[table]))
    if not parts:
        return SCHEMAS[table].empty_table()
    return pa.concat_tables(parts)


@contextlib.contextmanager
def progress_bar(label: str) -> Iterator[Callable[[int, int], None]]:
    """A rich progress bar on stderr (silent when stderr is not a terminal)."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    console = Console(stderr=True)
    bar = Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=True,
        disable=not console.is_terminal,
    )
    task = bar.add_task(label, total=None)

    def update(done: int, total: int) -> None:
        bar.update(task, completed=done, total=total)

    with bar:
        yield update
