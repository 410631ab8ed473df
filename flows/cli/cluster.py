"""`gridbots cluster up | down | status | env | add`: a Dask cluster with its one Prefect server
and its one MLflow server on this machine (flows/cluster/local.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer()

cluster_app = typer.Typer(
    help="A Dask cluster with one Prefect and one MLflow server (127.0.0.1 by default).",
    no_args_is_help=True,
)
app.add_typer(cluster_app, name="cluster")
STATE_DIR = Annotated[
    Path,
    typer.Option("--state-dir", help="Where the cluster's state, logs and databases live."),
]


@cluster_app.command("up")
def up(
    workers: Annotated[int, typer.Option(min=0, max=256, help="Dask workers (1 thread each).")] = 2,
    host: Annotated[str, typer.Option(help="Address every process binds.")] = "127.0.0.1",
    state_dir: STATE_DIR = Path(".cluster"),
    mlflow_backend: Annotated[
        str | None,
        typer.Option(help="MLflow backend store URI (default: SQLite in the state dir)."),
    ] = None,
    mlflow_artifacts: Annotated[
        str | None,
        typer.Option(help="MLflow artifact destination (default: a folder in the state dir)."),
    ] = None,
    data_root: Annotated[
        Path | None, typer.Option(help="The project folder workers run in (default: here).")
    ] = None,
    nanny: Annotated[
        bool, typer.Option(help="Each worker under a Dask nanny that restarts it if it dies.")
    ] = True,
):
    """Starts a Prefect server, an MLflow server, a Dask scheduler and N workers."""
    from flows.cluster import local as cluster

    state = cluster.up(
        state_dir,
        workers=workers,
        host=host,
        mlflow_backend=mlflow_backend,
        mlflow_artifacts=mlflow_artifacts,
        data_root=data_root,
        nanny=nanny,
        say=lambda text: typer.echo(f"starting {text}", err=True),
    )
    typer.echo(f"cluster up ({state['state_dir']}):")
    _echo_env(state)
    typer.echo("run the pipeline on it: gridbots repro --cluster")


@cluster_app.command("add")
def add(
    workers: Annotated[int, typer.Option(min=1, max=256, help="Workers to add.")] = 1,
    state_dir: STATE_DIR = Path(".cluster"),
):
    """Starts more workers on a running cluster (they take tasks at once, mid-stage too)."""
    from flows.cluster import local as cluster

    for entry in cluster.add_workers(state_dir, workers):
        typer.echo(f"{entry['name']}: pid {entry['pid']}")


@cluster_app.command("down")
def down(state_dir: STATE_DIR = Path(".cluster")):
    """Stops exactly the recorded processes (their process groups: SIGTERM, then SIGKILL)."""
    from flows.cluster import local as cluster

    for entry in cluster.down(state_dir):
        typer.echo(f"stopped {entry['name']} (pid {entry['pid']})")


@cluster_app.command("status")
def status(
    state_dir: STATE_DIR = Path(".cluster"),
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable.")] = False,
):
    """Each recorded process alive or dead, the servers' health, the workers Dask counts."""
    from flows.cluster import local as cluster

    report = cluster.status(state_dir)
    if as_json:
        typer.echo(json.dumps(report, indent=2))
        return
    from rich import box
    from rich.console import Console
    from rich.table import Table

    table = Table(box=box.SIMPLE_HEAD)
    for column in ("name", "pid", "state", "address"):
        table.add_column(column, no_wrap=True)
    for row in report["processes"]:
        table.add_row(
            row["name"], str(row["pid"]), "alive" if row["alive"] else "dead", row["address"] or ""
        )
    Console().print(table)
    health = {True: "healthy", False: "not answering"}
    typer.echo(
        f"Prefect {health[report['prefect_healthy']]}, MLflow {health[report['mlflow_healthy']]}"
    )
    typer.echo(f"workers counted by the scheduler: {report['workers_counted']}")
    if not all(row["alive"] for row in report["processes"]):
        raise typer.Exit(1)


@cluster_app.command("env")
def env(state_dir: STATE_DIR = Path(".cluster")):
    """Shell lines that point a shell's gridbots commands at the cluster: eval "$(… env)"."""
    from flows.cluster import local as cluster

    _echo_env(cluster.read_state(state_dir))


def _echo_env(state: dict) -> None:
    from flows.cluster.local import client_env

    for key, value in client_env(state).items():
        typer.echo(f"export {key}={value}")
