"""`gridbots repro | where | serve | ui`: the pipeline as a whole, and the stages' sub-app.

The commands are thin: the runner is flows.pipeline.repro, the stages' commands
flows.pipeline.commands (added here as `gridbots stage`), the cycle flows.pipeline.cycle.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Annotated

import typer

from flows.pipeline.commands import stage_app
from flows.pipeline.settings import DEFAULT_PARAMS, PARAMS, load, quiet

app = typer.Typer()
app.add_typer(stage_app, name="stage")


@app.command("repro")
def repro(
    targets: Annotated[
        list[str] | None,
        typer.Argument(help="Stages to bring up to date (dvc repro TARGETS); default: all."),
    ] = None,
    params: PARAMS = DEFAULT_PARAMS,
    force: Annotated[bool, typer.Option("--force", help="dvc repro --force.")] = False,
    cluster: Annotated[
        bool,
        typer.Option(
            "--cluster", help="Run every fan-out on the cluster `gridbots cluster up` started."
        ),
    ] = False,
    state_dir: Annotated[
        Path, typer.Option("--state-dir", help="The cluster's state folder (with --cluster).")
    ] = Path(".cluster"),
    rehearse: Annotated[
        bool | None,
        typer.Option(
            "--rehearse/--no-rehearse",
            help="Run the pipeline at its smallest beside dvc on the idle core, so its stages "
            "find their kernels compiled (flows/pipeline/rehearsal.py); default: on a first run, "
            "without targets or --cluster.",
        ),
    ] = None,
):
    """`dvc repro` with one Prefect server for all stages, then where to look."""
    from flows.pipeline.repro import run_repro

    code = run_repro(targets, force, cluster, state_dir, rehearse)
    if code:
        raise typer.Exit(code)
    where(params)


@app.command("where")
def where(params: PARAMS = DEFAULT_PARAMS):
    """Where the results are: tournament table, production versions, UIs, report."""
    import json

    from flows.pipeline.params import load as load_params

    settings = load_params(params)
    for game in settings.get("games", []):
        summary = Path("evaluation") / game / "summary.json"
        if summary.is_file():
            typer.echo(f"\n{game} tournament ({summary}, games.parquet beside it):")
            for rank, row in enumerate(json.loads(summary.read_text())["standings"], start=1):
                typer.echo(f"  {rank}. {row['spec']}: score {row['score']:.3f} / {row['games']}")
        promotion = Path("promotion") / f"{game}.json"
        if promotion.is_file():
            for info in json.loads(promotion.read_text())["families"].values():
                typer.echo(
                    f"  {info['model']}@production = version {info['production'] or 'none'} "
                    f"({info.get('production_label') or '-'})"
                )
    typer.echo(
        "\nreport: reports/pipeline/README.md (charts beside it; studies' figures in reports/)\n"
        "registry: gridbots bots list\n"
        "UIs: make ui (Prefect and MLflow on 127.0.0.1, addresses printed)\n"
        "curves: dvc plots show; numbers: dvc metrics show"
    )


@app.command("ui")
def ui(
    prefect_port: Annotated[int, typer.Option(help="Prefect UI port.")] = 4200,
    mlflow_port: Annotated[int, typer.Option(help="MLflow UI port.")] = 5000,
    params: PARAMS = DEFAULT_PARAMS,
):
    """Starts the Prefect server and the MLflow UI on 127.0.0.1; Ctrl-C stops both."""
    quiet()
    # Ctrl-C and `kill` stop both servers, even when started where SIGINT is ignored (a
    # background job of a script, a test runner's worker): Python then leaves it ignored
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    from flows.pipeline.repro import start_prefect_server, stop_servers, tracking_uri
    from models.tracking import experiment_links

    uri = os.environ.get("MLFLOW_TRACKING_URI") or tracking_uri(params)

    # each game's training runs (MLflow 3.17 opens an experiment on its GenAI overview
    # otherwise), read before the MLflow server may create or upgrade the store
    links = experiment_links(f"http://127.0.0.1:{mlflow_port}", uri)
    prefect, api = start_prefect_server(prefect_port)
    mlflow = subprocess.Popen(
        [sys.executable, "-m", "mlflow", "ui", "--backend-store-uri", uri,
         "--host", "127.0.0.1", "--port", str(mlflow_port),
         "--workers", "1"],  # one person's UI: mlflow's default 4 each import mlflow
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its own group: its server processes stop with it
        # no GenAI job runners (seven processes, ~250 MB each; flows/cluster/local.py does the same)
        env={**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"},
    )  # fmt: skip
    typer.echo(f"Prefect UI: http://127.0.0.1:{prefect_port}  (API {api})")
    typer.echo(f"MLflow UI:  http://127.0.0.1:{mlflow_port}  (store {uri})")
    for name, link in links:
        typer.echo(f"  {name}: {link}")
    typer.echo("Ctrl-C stops both.")
    try:
        while prefect.poll() is None and mlflow.poll() is None:
            time.sleep(1)
    except KeyboardInterrupt:
        pass
    finally:
        stop_servers([prefect, mlflow], grace=20.0)


@app.command("serve")
def serve(params: PARAMS = DEFAULT_PARAMS):
    """Serves the improvement cycle on its cron schedule (the Prefect UI lists and triggers it)."""
    from prefect import serve as prefect_serve

    from flows.pipeline.cycle import deployment

    settings = load("serve", None, None, params)
    typer.echo(f"serving improvement-cycle, cron {settings['serve']['cron']!r}; Ctrl-C stops")
    prefect_serve(deployment(settings))
