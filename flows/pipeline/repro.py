"""The repro runner: `dvc repro` with one Prefect server and one warm stage host for all its
stages, a rehearsal beside a first run, and dvc stopped as a group on Ctrl-C or SIGTERM.

`gridbots repro` (flows/cli/pipeline.py) calls `run_repro`; `gridbots ui` starts its servers
with `start_prefect_server`. Nothing here imports the command line.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import typer

from flows.cluster.local import group_members, stop_groups
from flows.pipeline import rehearsal
from flows.pipeline.host import start_host
from flows.pipeline.settings import quiet


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_http(url: str, seconds: float, process: subprocess.Popen) -> bool:
    import urllib.request

    deadline = time.time() + seconds
    while time.time() < deadline:
        if process.poll() is not None:
            return False
        try:
            urllib.request.urlopen(url, timeout=2)  # our own local server
            return True
        except OSError:
            time.sleep(0.5)
    return False


def start_prefect_server(port: int | None = None) -> tuple[subprocess.Popen, str]:
    """A Prefect server on 127.0.0.1; (process, API URL)."""
    port = port or _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1",
         "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its own group: its uvicorn child stops with it
    )  # fmt: skip
    api = f"http://127.0.0.1:{port}/api"
    # Prefect's own setting for how long a server may take to start (busy machines: raise it)
    patience = float(os.environ.get("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS") or 90)
    if not _wait_http(f"{api}/health", patience, process):
        stop_servers([process], grace=10.0)
        raise typer.Exit(1)
    return process, api


def run_repro(
    targets: list[str] | None,
    force: bool = False,
    cluster: bool = False,
    state_dir: Path = Path(".cluster"),
    rehearse: bool | None = None,
) -> int:
    """`dvc repro` (or the stages named) with one Prefect server and one warm stage host for
    all stages; its exit code (a stop by a signal: 128 + its number)."""
    quiet()
    env = dict(os.environ)
    if rehearse is None:
        rehearse = not targets and not cluster and rehearsal.needed(Path.cwd())
    if cluster:  # its Prefect and MLflow servers, its scheduler: every stage reads them
        from flows.cluster.local import ClusterError, client_env, read_state, status

        report = status(state_dir)
        if not (
            report["prefect_healthy"] and report["mlflow_healthy"] and report["workers_counted"]
        ):
            raise ClusterError(
                f"the cluster in {state_dir} is not healthy: gridbots cluster status"
            )
        env.update(client_env(read_state(state_dir)))
    if not Path(".dvc").is_dir():
        subprocess.run(["dvc", "init", "-q"], check=True)
    # first, so it is ahead of the stages from the start (its folder is in .dvc/tmp)
    helpers = [rehearsal.start(Path.cwd(), env)] if rehearse else []
    try:
        if not cluster and not env.get("PREFECT_API_URL"):
            typer.echo("starting a Prefect server for this run …", err=True)
            server, env["PREFECT_API_URL"] = start_prefect_server()
            helpers.append(server)
        host, env = start_host(env)  # stages use it once its imports are done, before that not
        helpers.append(host)
        command = ["dvc", "repro", *(["--force"] if force else []), *(targets or [])]
        code = _run_dvc(command, env)
    finally:
        stop_servers(helpers, grace=30.0)
        if rehearse:  # the rehearsal's folder, if it was killed before it could remove it
            shutil.rmtree(rehearsal.SCRATCH, ignore_errors=True)
    return code


def _run_dvc(command: list[str], env: dict[str, str], grace: float = 30.0) -> int:
    """Runs dvc in a process group of its own and returns its exit code. Ctrl-C, SIGTERM or
    SIGHUP to `gridbots repro` reach that group as SIGINT, as Ctrl-C in a terminal reaches dvc
    and its stage (both stop; the next run resumes), and whatever of the group is still there
    when dvc ends, or `grace` seconds after the signal, is stopped too: a `gridbots repro`
    killed on its own used to leave dvc running stages, its host and server gone."""
    stopped: list[int] = []
    deadline = float("inf")
    process: subprocess.Popen | None = None

    def forward(signum: int, _frame: object) -> None:
        nonlocal deadline
        if not stopped:
            deadline = time.monotonic() + grace
        stopped.append(signum)
        if process is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGINT)

    # the handlers come first: a signal between dvc's start and theirs used to end this process
    # alone (the default action), leaving dvc's group running, as CI once saw
    stops = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    previous = {signum: signal.signal(signum, forward) for signum in stops}
    try:
        process = subprocess.Popen(command, env=env, start_new_session=True)
        if stopped:  # a signal came while dvc was starting (it may have ended already)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGINT)
        code = None
        while code is None:
            try:
                code = process.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                if time.monotonic() > deadline:  # dvc did not stop: end its group
                    stop_groups([process.pid], 0.0)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if process is not None and (stopped or group_members(process.pid)):
            stop_groups([process.pid], grace)
    if stopped:
        name = signal.Signals(stopped[0]).name
        typer.echo(f"gridbots: repro stopped by {name}; run it again to resume", err=True)
        return 128 + stopped[0]
    return code


def stop_servers(processes: list[subprocess.Popen], grace: float) -> None:
    """Each server was started in a process group of its own: the cluster's stop_groups ends
    the groups (children too) within one shared grace period, then the servers are reaped."""
    stop_groups([process.pid for process in processes], grace)
    for process in processes:
        process.wait()


def tracking_uri(params: Path) -> str:
    from flows.pipeline.params import load

    try:
        return str(load(params).get("mlflow", {}).get("tracking_uri") or "sqlite:///mlflow.db")
    except Exception:  # the UI still opens on the default store
        return "sqlite:///mlflow.db"
