"""What every stage's flow shares: atomic outputs, lineage, the task runner, tracking's URI.

Each stage lives in its own module of pipeline/stages/ so that a stage's DVC deps are exactly the
files it runs (flows.pipeline.dependencies derives them from the imports).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from engine.files import write_json  # noqa: F401 (the stages import it from here)
from engine.protocol import GameError

RETRIES = {"retries": 2, "retry_delay_seconds": 1, "cache_policy": NO_CACHE}
#: the agent spec that plays an exported artifact, by its kind
SPEC_OF_KIND = {
    "onnx": "onnx:{path}",
    "hmm-json": "seq:model={path}",
    "crfsuite": "seq:model={path}",
}


class StageError(GameError):
    """A stage cannot go on (its input failed validation, a parity check failed): exit 2."""


#: games in all below which a tournament stays in threads (spawning the processes costs ~1.5 s)
MIN_POOL_GAMES = 2000
#: the process pool `local_processes` lends `cluster_task` (None: work runs in the task's thread)
_LOCAL_POOL: Any = None


@contextlib.contextmanager
def local_processes(
    params: dict[str, Any],
    dask: str | None,
    games: int | None,
    pool: Callable[[int], Any],
    workers: int | None = None,
) -> Iterator[None]:
    """Without a cluster, runs the fan-out's work in `workers` (default: params `workers`)
    spawned processes instead of the task runner's threads: matches of Python agents hold the
    GIL, so two threads used one core (study 000's evaluation: 1,210 CPU-s in 1,116 s), and a
    TD configuration trains in numba on one core. Below MIN_POOL_GAMES games in all (`games`;
    None for work that is not matches), starting the processes (imports, numba caches) costs
    more than it saves: threads stay. `pool(workers)` makes the executor
    (agents.onnx.runtime.process_pool)."""
    global _LOCAL_POOL
    workers = max(1, int(params.get("workers", 1) if workers is None else workers))
    few = games is not None and games < MIN_POOL_GAMES
    if dask_address(params, dask) or workers < 2 or few:
        yield
        return
    with pool(workers) as executor:
        _LOCAL_POOL = executor
        try:
            yield
        finally:
            _LOCAL_POOL = None


@contextlib.contextmanager
def atomic_dir(final: Path) -> Iterator[Path]:
    """A scratch folder beside `final` that replaces it only when the block succeeds."""
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    stale = re.compile(rf"\.{re.escape(final.name)}\.[a-z0-9_]{{8}}\.tmp")  # mkdtemp's names
    for left in final.parent.iterdir():  # a killed attempt's scratch folder
        if left.is_dir() and stale.fullmatch(left.name):
            shutil.rmtree(left, ignore_errors=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent))
    try:
        yield scratch
        if final.exists():
            shutil.rmtree(final) if final.is_dir() else final.unlink()
        os.replace(scratch, final)
    finally:
        if scratch.exists():
            shutil.rmtree(scratch, ignore_errors=True)


#: what a training's run record (metrics/GAME/train-runs/NAME.json) holds rather than its DVC
#: output: MLflow's ids and the registry version differ on every run of the same inputs
RUN_IDS = ("run_id", "parent_run_id", "version")


def run_record_path(root: Path, game: str, name: str) -> Path:
    """A training's run record: one folder per game, so the stages that read the versions
    (export, promote) depend on exactly these files whatever models a profile trains."""
    return Path(root) / "metrics" / game / "train-runs" / f"{name}.json"


def export_record_path(root: Path, game: str) -> Path:
    """The export stage's record of the versions it exported (name, run_id, version each)."""
    return Path(root) / "metrics" / game / "export-run.json"


def trained_run(root: Path, game: str, name: str) -> dict[str, Any]:
    """`trained/GAME/NAME/run.json` with the ids its stage recorded beside it (a metrics file,
    so that a rerun of the same inputs leaves the DVC output's bytes as they were)."""
    run = json.loads((Path(root) / "trained" / game / name / "run.json").read_text())
    record = run_record_path(root, game, name)
    if record.is_file():  # a stage that still keeps its ids in run.json has none
        run.update(json.loads(record.read_text()))
    return run


def lineage(root: Path) -> dict[str, str]:
    """The git commit and dvc.lock hash every MLflow run is tagged with."""
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    lock = Path(root) / "dvc.lock"
    digest = hashlib.sha256(lock.read_bytes()).hexdigest() if lock.is_file() else "none"
    return {"git.commit": commit, "dvc.lock_sha256": digest}


#: a Dask address for every stage of a run (`gridbots repro --cluster` sets it): unlike params
#: dask.address it changes no stage's DVC params, since where a task runs changes no result
DASK_ENV = "GRIDBOTS_DASK_ADDRESS"


def http_ok(url: str, timeout: float = 2.0) -> bool:
    """A local server answers GET `url`."""
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=timeout):  # our own servers on loopback
            return True
    except OSError:
        return False


def tcp_ok(address: str, timeout: float = 2.0) -> bool:
    """A TCP connect to tcp://HOST:PORT succeeds."""
    import socket

    host, _, port = address.removeprefix("tcp://").rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            return True
    except (OSError, ValueError):
        return False


def dask_address(params: dict[str, Any], dask: str | None = None) -> str:
    """The Dask scheduler a stage's fan-out runs on ('' for none): the argument, else
    $GRIDBOTS_DASK_ADDRESS (which `gridbots repro --cluster` sets), else params dask.address."""
    return dask or os.environ.get(DASK_ENV) or params.get("dask", {}).get("address") or ""


def task_runner(params: dict[str, Any], dask: str | None = None):
    """Dask when a stage has an address (`dask_address`), threads otherwise."""
    address = dask_address(params, dask)
    if address:
        try:
            from prefect_dask import DaskTaskRunner
        except ImportError:
            raise StageError(
                "a Dask address needs the dask extra: pip install 'gridbots[dask]'"
            ) from None
        require_cluster_servers(address)
        return DaskTaskRunner(address=address)
    from prefect.task_runners import ThreadPoolTaskRunner

    return ThreadPoolTaskRunner(max_workers=max(1, int(params.get("workers", 1))))


def run_flow(
    stage: Any,
    params: dict[str, Any],
    dask: str | None,
    *args: Any,
    processes: int = 1,
    pool: Callable[[int], Any] | None = None,
) -> Any:
    """Runs the flow `stage(*args)` of a stage whose fan-out stays in its own process without a
    cluster (a loop, PlayerZero's own pools: exactly as before the cluster existed). With a
    Dask address it runs `stage(*args, on_cluster=True)` on the cluster's task runner, where
    the flow hands its jobs to `fan_out`. Given a `pool` factory and no address, the flow hands
    its jobs to `fan_out` too (`on_cluster=True`: jobs as tasks), on `processes` threads that
    each wait on one of `processes` spawned processes (`local_processes`; one process: the jobs
    run one after another in the task's thread)."""
    address = dask_address(params, dask)
    if address:
        runner = task_runner(params, address)
        return stage.with_options(task_runner=runner)(*args, on_cluster=True)
    if pool is None:
        return stage(*args)
    from prefect.task_runners import ThreadPoolTaskRunner

    runner = ThreadPoolTaskRunner(max_workers=max(1, processes))
    with local_processes(params, None, None, pool, workers=processes):
        return stage.with_options(task_runner=runner)(*args, on_cluster=True)


@task(**RETRIES, task_run_name="{label}")
def cluster_task(work: str, job: Any, label: str) -> Any:
    """One job of a stage's fan-out on whichever worker (or thread) is free. `work` names a
    module-level function ("package.module:function") that the worker imports, so only that
    name and the job go through the scheduler: small JSON-able arguments, with models and
    datasets as paths in the shared data root. Every work function writes under temporary
    names or into a folder of its own that the flow commits, and closes a killed attempt's
    MLflow run, so the retry of a task lost with its worker duplicates nothing. Inside
    `local_processes` the work runs in the flow's process pool (the task waits for it)."""
    module, _, name = work.partition(":")
    function = getattr(importlib.import_module(module), name)
    pool = _LOCAL_POOL
    return function(job) if pool is None else pool.submit(function, job).result()


def fan_out(
    work: Callable[[Any], Any], jobs: Sequence[Any], title: str | None = None
) -> Iterator[Any]:
    """`work(job)` for every job as a `cluster_task` on the running flow's task runner (a Dask
    cluster's workers, the flow's threads, or the processes of `local_processes`): every
    generation shard, sweep configuration, tournament pairing, TD configuration, PlayerZero
    self-play shard or arena pair and NEAT seed of a cluster run goes through here. Results
    come in job order, each as soon as it and those before it are done, so the caller commits
    them as they arrive. With a `title`, a progress bar counts the jobs as each finishes."""
    name = f"{work.__module__}:{work.__name__}"
    futures = [
        cluster_task.submit(name, job, f"{work.__name__}-{index}") for index, job in enumerate(jobs)
    ]
    with progress_bar(title, len(futures)) as advance:
        for future in futures if title else ():
            future.add_done_callback(lambda _done: advance())
        for future in futures:
            yield future.result()


@contextlib.contextmanager
def progress_bar(title: str | None, total: int) -> Iterator[Callable[[], None]]:
    """A rich progress bar of `total` jobs (nothing without a title); yields its `advance`,
    which any thread may call as a job finishes."""
    if title is None:
        yield lambda: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    columns = (
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, transient=False) as bar:
        task_id = bar.add_task(title, total=total)
        yield lambda: bar.advance(task_id)


def require_cluster_servers(address: str) -> None:
    """Refuses, before anything runs, a Dask address without the Prefect server its workers
    must report to (without one, every worker would start a temporary server of its own)."""
    from prefect.settings import get_current_settings

    api = get_current_settings().api.url
    if not api:
        raise StageError(
            f"Dask address {address} but no Prefect server: start one with `gridbots cluster up`"
            ' and run `eval "$(gridbots cluster env)"` (or set PREFECT_API_URL)'
        )
    if not http_ok(f"{api.rstrip('/')}/health", timeout=5):
        raise StageError(
            f"no Prefect server answers at PREFECT_API_URL={api}: start it "
            "(`gridbots cluster up`) or point PREFECT_API_URL at a running one"
        )
    if not tcp_ok(address, timeout=5):
        raise StageError(
            f"no Dask scheduler answers at {address}: start one with `gridbots cluster up`"
        )


def use_tracking(params: dict[str, Any], root: Path) -> None:
    """MLflow at params mlflow.tracking_uri (a relative SQLite path is relative to `root`)."""
    uri = params["mlflow"]["tracking_uri"]
    if uri.startswith("sqlite:///") and not uri.startswith("sqlite:////"):
        uri = f"sqlite:///{(Path(root) / uri[len('sqlite:///') :]).resolve()}"
    os.environ.setdefault("MLFLOW_TRACKING_URI", uri)
