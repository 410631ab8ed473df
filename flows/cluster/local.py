"""A gridbots cluster on one machine: a Prefect server, an MLflow server, a Dask scheduler and
N Dask workers, each a separate process in its own process group, recorded in a state file.

Why one Prefect server: a Dask worker runs a Prefect task through the task engine, which talks
to whatever API the worker's settings name. A flow that itself runs on a temporary server gives
the workers nothing to talk to, so each worker started a temporary server of its own (and they
fought over one SQLite file, and outlived the workers). Here every process is started with the
addresses it needs (`PREFECT_API_URL`, `MLFLOW_TRACKING_URI`, `GRIDBOTS_DATA_ROOT`), workers
with temporary servers switched off, and `down` stops exactly the recorded process groups.

The state file (`STATE_DIR/cluster.json`, rewritten atomically after every start) is what
`down`, `status`, `env` and `gridbots repro --cluster` read. A recorded process counts as ours
only while its PID still has the start time recorded with it (a reused PID is not ours).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from engine.files import write_json
from engine.noise import TELEMETRY_OFF
from engine.protocol import GameError
from flows.pipeline.stage_io import DASK_ENV, http_ok, tcp_ok

STATE_FILE = "cluster.json"
DEFAULT_STATE_DIR = Path(".cluster")
DATA_ROOT_ENV = "GRIDBOTS_DATA_ROOT"
ROLES = ("prefect", "mlflow", "scheduler", "worker")
#: what a flow (or a worker) of a cluster is told: client_env
CLIENT_ENV_KEYS = ("PREFECT_API_URL", "MLFLOW_TRACKING_URI", DASK_ENV, DATA_ROOT_ENV)


class ClusterError(GameError):
    """The cluster cannot be started or reached: one line, exit 2."""


# ---- ports, health, process identity -----------------------------------------------------------
def free_port(host: str) -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def started_at(pid: int) -> float | None:
    import psutil

    try:
        return psutil.Process(pid).create_time()
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None


def alive(entry: dict[str, Any]) -> bool:
    """The recorded process still runs (same PID and start time, not a zombie)."""
    import psutil

    try:
        process = psutil.Process(entry["pid"])
        return (
            abs(process.create_time() - entry["started"]) < 0.01
            and process.status() != psutil.STATUS_ZOMBIE
        )
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


def group_members(pgid: int) -> list[int]:
    """PIDs still in process group `pgid` (a server's own children included)."""
    import psutil

    found = []
    for process in psutil.process_iter(["pid", "status"]):
        try:
            if os.getpgid(process.pid) == pgid and process.status() != psutil.STATUS_ZOMBIE:
                found.append(process.pid)
        except (ProcessLookupError, psutil.NoSuchProcess, PermissionError):
            continue
    return found


# ---- the state file ----------------------------------------------------------------------------
def state_path(state_dir: Path) -> Path:
    return Path(state_dir) / STATE_FILE


def read_state(state_dir: Path) -> dict[str, Any]:
    path = state_path(state_dir)
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise ClusterError(
            f"no cluster recorded in {path}: start one with gridbots cluster up"
        ) from None
    except ValueError:
        raise ClusterError(f"{path} is not a cluster state file") from None


def _save(state: dict[str, Any]) -> None:
    write_json(state_path(Path(state["state_dir"])), state)


# ---- starting ----------------------------------------------------------------------------------
def _base_env(state: dict[str, Any]) -> dict[str, str]:
    """What every process of the cluster is started with."""
    env = dict(os.environ)
    for key in CLIENT_ENV_KEYS:
        env.pop(key, None)  # another cluster's or a shell's: never this cluster's
    env.update(
        {
            **TELEMETRY_OFF,
            "PREFECT_HOME": str(Path(state["state_dir"]) / "prefect"),
            DATA_ROOT_ENV: state["data_root"],
            "PYTHONPATH": os.pathsep.join(
                p for p in [state["code_root"], os.environ.get("PYTHONPATH", "")] if p
            ),
        }
    )
    return env


def client_env(state: dict[str, Any]) -> dict[str, str]:
    """The addresses a flow (or a worker) of this cluster needs."""
    values = (state["prefect_api_url"], state["mlflow_uri"], state["scheduler"], state["data_root"])
    return dict(zip(CLIENT_ENV_KEYS, values, strict=True))


def _spawn(state: dict, role: str, name: str, argv: list[str], env: dict, **info) -> dict:
    """One process in its own process group, output to STATE_DIR/logs/NAME.log; recorded."""
    logs = Path(state["state_dir"]) / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    log = logs / f"{name}.log"
    with open(log, "ab") as out:
        process = subprocess.Popen(
            argv,
            cwd=state["data_root"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: `down` stops it and its children
        )
    entry = {
        "role": role,
        "name": name,
        "pid": process.pid,
        "pgid": process.pid,
        "started": started_at(process.pid) or time.time(),
        "log": str(log),
        "argv": argv,
        **info,
    }
    state["processes"].append(entry)
    _save(state)  # recorded before we wait on it: a failed `up` is still stopped by `down`
    return entry


def _wait(check, entry: dict[str, Any], seconds: float) -> None:
    deadline = time.time() + seconds
    while time.time() < deadline:
        if check():
            return
        if not alive(entry):
            raise ClusterError(f"the {entry['name']} process exited; see {entry['log']}")
        time.sleep(0.3)
    raise ClusterError(f"the {entry['name']} process did not answer in {seconds:.0f} s")


def up(
    state_dir: Path,
    workers: int = 2,
    host: str = "127.0.0.1",
    mlflow_backend: str | None = None,
    mlflow_artifacts: str | None = None,
    data_root: Path | None = None,
    timeout: float = 120.0,
    say=lambda _text: None,
    nanny: bool = True,
) -> dict[str, Any]:
    """Starts the servers, the scheduler and `workers` workers; the recorded state. With
    `nanny` each worker runs under a Dask nanny that restarts it should it die alone."""
    state_dir = Path(state_dir).resolve()
    if state_path(state_dir).is_file():
        running = [p for p in read_state(state_dir)["processes"] if alive(p)]
        if running:
            raise ClusterError(f"a cluster is already up in {state_dir}: gridbots cluster down")
    state_dir.mkdir(parents=True, exist_ok=True)
    code_root = Path(__file__).resolve().parents[2]
    state: dict[str, Any] = {
        "state_dir": str(state_dir),
        "host": host,
        "data_root": str(Path(data_root or Path.cwd()).resolve()),
        "code_root": str(code_root),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "nanny": nanny,
        "processes": [],
    }
    prefect_port, mlflow_port, dask_port = (free_port(host) for _ in range(3))
    state["prefect_api_url"] = f"http://{host}:{prefect_port}/api"
    state["mlflow_uri"] = f"http://{host}:{mlflow_port}"
    state["scheduler"] = f"tcp://{host}:{dask_port}"
    state["mlflow_backend"] = mlflow_backend or f"sqlite:///{state_dir / 'mlflow.db'}"
    state["mlflow_artifacts"] = mlflow_artifacts or str(state_dir / "mlartifacts")
    _save(state)
    env = _base_env(state)
    try:
        say(f"Prefect server  {state['prefect_api_url']}")
        prefect = _spawn(
            state, "prefect", "prefect",
            [sys.executable, "-m", "prefect", "server", "start", "--host", host,
             "--port", str(prefect_port)],
            env, address=state["prefect_api_url"],
        )  # fmt: skip
        say(f"MLflow server   {state['mlflow_uri']}")
        mlflow = _spawn(
            state, "mlflow", "mlflow",
            [sys.executable, "-m", "mlflow", "server", "--host", host, "--port",
             str(mlflow_port), "--workers", "1", "--backend-store-uri",
             state["mlflow_backend"], "--artifacts-destination", state["mlflow_artifacts"]],
            # no job runners: they serve MLflow's GenAI jobs (seven processes, ~250 MB each)
            {**env, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}, address=state["mlflow_uri"],
        )  # fmt: skip
        say(f"Dask scheduler  {state['scheduler']}")
        scheduler = _spawn(
            state, "scheduler", "scheduler",
            [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", host,
             "--port", str(dask_port), "--no-dashboard"],
            env, address=state["scheduler"],
        )  # fmt: skip
        _wait(lambda: tcp_ok(state["scheduler"]), scheduler, timeout)
        _wait(lambda: http_ok(f"{state['prefect_api_url']}/health"), prefect, timeout)
        _wait(lambda: http_ok(f"{state['mlflow_uri']}/health"), mlflow, timeout)
        add_workers(state_dir, workers, timeout=timeout, say=say)
    except BaseException:
        down(state_dir)
        raise
    return read_state(state_dir)


def worker_env(state: dict[str, Any]) -> dict[str, str]:
    """A worker talks to the cluster's servers and never starts a temporary Prefect server."""
    return {
        **_base_env(state),
        **client_env(state),
        "PREFECT_SERVER_EPHEMERAL_ENABLED": "false",
        "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL": "WARNING",
        "OMP_NUM_THREADS": "1",  # one task per worker thread: no oversubscription
    }


def add_workers(state_dir: Path, count: int, timeout: float = 120.0, say=lambda _t: None):
    """Starts `count` more workers (each one thread, its own process group) and waits until the
    scheduler counts them; a worker that joins while a stage runs takes its share of tasks."""
    state = read_state(state_dir)
    if not any(p["role"] == "scheduler" and alive(p) for p in state["processes"]):
        raise ClusterError(f"the cluster in {state_dir} has no running scheduler")
    taken = {p["name"] for p in state["processes"]}
    new = []
    for _ in range(count):
        index = next(k for k in range(10_000) if f"worker-{k}" not in taken)
        name = f"worker-{index}"
        taken.add(name)
        say(f"Dask worker     {name}")
        new.append(
            _spawn(
                state, "worker", name,
                [sys.executable, "-m", "distributed.cli.dask_worker", state["scheduler"],
                 "--name", name, "--nthreads", "1", "--nworkers", "1", "--no-dashboard",
                 "--host", state["host"], "--local-directory",
                 str(Path(state["state_dir"]) / "dask" / name),
                 "--nanny" if state.get("nanny", True) else "--no-nanny"],
                worker_env(state),
            )
        )  # fmt: skip
    names = {entry["name"] for entry in new}
    for entry in new:
        _wait(lambda: names <= set(scheduler_workers(state["scheduler"])), entry, timeout)
    return new


def scheduler_workers(address: str) -> dict[str, str]:
    """name → address of the workers the scheduler counts now ({} when unreachable)."""
    if not tcp_ok(address):
        return {}
    from distributed import Client

    try:
        with Client(address, timeout=5, set_as_default=False) as client:
            info = client.scheduler_info(n_workers=-1)["workers"]
    except (OSError, TimeoutError):
        return {}
    return {str(w.get("name")): a for a, w in info.items()}


# ---- stopping and looking ----------------------------------------------------------------------
def _stop_groups(entries: list[dict[str, Any]], grace: float) -> None:
    stop_groups([e["pgid"] for e in entries if alive(e) or group_members(e["pgid"])], grace)


def stop_groups(groups: list[int], grace: float) -> None:
    """SIGTERM to each process group, SIGKILL to what is left after `grace` seconds (shared by
    all the groups); returns once none has a live member (zombies aside) or 10 s later."""
    for pgid in groups:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGTERM)
    deadline = time.time() + grace
    while time.time() < deadline and any(group_members(g) for g in groups):
        time.sleep(0.2)
    for pgid in groups:
        if group_members(pgid):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, signal.SIGKILL)
    deadline = time.time() + 10
    while time.time() < deadline and any(group_members(g) for g in groups):
        time.sleep(0.1)


def down(state_dir: Path, grace: float = 15.0) -> list[dict[str, Any]]:
    """Stops exactly the recorded process groups (workers first, servers last); the state file
    is removed once none of them is left. Returns the entries it stopped."""
    state = read_state(state_dir)
    entries = state["processes"]
    order = sorted(entries, key=lambda e: -ROLES.index(e["role"]))
    workers = [e for e in order if e["role"] == "worker"]
    _stop_groups(workers, grace)
    _stop_groups([e for e in order if e["role"] != "worker"], grace)
    left = [e["name"] for e in entries if alive(e) or group_members(e["pgid"])]
    if left:
        raise ClusterError(f"still running after SIGKILL: {', '.join(left)}")
    state_path(state_dir).unlink(missing_ok=True)
    return entries


def stop_worker(state_dir: Path, name: str, hard: bool = True) -> dict[str, Any]:
    """Kills one worker's process group (SIGKILL by default: a machine lost mid-task)."""
    state = read_state(state_dir)
    for entry in state["processes"]:
        if entry["role"] == "worker" and entry["name"] == name:
            with_signal = signal.SIGKILL if hard else signal.SIGTERM
            with contextlib.suppress(ProcessLookupError):
                os.killpg(entry["pgid"], with_signal)
            return entry
    raise ClusterError(f"no worker {name!r} in {state_path(state_dir)}")


def status(state_dir: Path) -> dict[str, Any]:
    """Each recorded process alive or dead, the servers' health, the workers Dask counts."""
    state = read_state(state_dir)
    counted = scheduler_workers(state["scheduler"])
    rows = []
    for entry in state["processes"]:
        row = {k: entry.get(k) for k in ("role", "name", "pid", "address", "log")}
        row["alive"] = alive(entry)
        if entry["role"] == "worker":
            row["address"] = counted.get(entry["name"])
        rows.append(row)
    return {
        **{k: state[k] for k in ("state_dir", "data_root", "created", "scheduler")},
        "prefect_api_url": state["prefect_api_url"],
        "mlflow_uri": state["mlflow_uri"],
        "prefect_healthy": http_ok(f"{state['prefect_api_url']}/health"),
        "mlflow_healthy": http_ok(f"{state['mlflow_uri']}/health"),
        "workers_counted": len(counted),
        "processes": rows,
    }
