"""`gridbots stage NAME …` (what dvc.yaml runs), `gridbots repro`, `gridbots serve`, `gridbots ui`.

One stage = one command = one Prefect flow in flows/stages/NAME.py. Every stage reads params.yaml
first and refuses a missing or wrong-typed key with one line naming it and the stage (exit 2).
Without PREFECT_API_URL Prefect starts a temporary server per command (about 10 s each), so
`gridbots repro` (what `make demo` runs) starts one server for the whole `dvc repro`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated

import typer

stage_app = typer.Typer(help="Pipeline stages (dvc.yaml runs these).", no_args_is_help=True)
GAME = Annotated[str, typer.Argument(help="Game whose chain the stage belongs to.")]
PARAMS = Annotated[Path, typer.Option("--params", help="Parameters file.")]
DASK = Annotated[
    str | None,
    typer.Option("--dask-address", help="tcp://HOST:PORT of a Dask scheduler (else params)."),
]
ROOT = Path(".")
DEFAULT_PARAMS = Path("params.yaml")
HEARTBEAT_ENV = "PREFECT_FLOWS_HEARTBEAT_FREQUENCY"


@stage_app.callback()
def _stage_settings(context: typer.Context) -> None:
    """A stage's flow sends Prefect heartbeats only when PREFECT_FLOWS_HEARTBEAT_FREQUENCY asks
    for them (for a server automation that marks silent runs Crashed). With Prefect's default
    (one every 180 s) every stage waited at its end for the heartbeat thread to wake and stop:
    a cold `make demo`'s 73 stages took 901 s with it, 704 s without (median 1.9 s a stage)."""
    quiet()  # first: the settings below are a snapshot of the environment
    if HEARTBEAT_ENV in os.environ:
        return
    from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings

    context.with_resource(temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}))


def quiet_defaults(env: Mapping[str, str]) -> dict[str, str]:
    """The variables `quiet` would add to `env` (those it lacks): the stage host applies them to
    a caller's environment to compare it with its own, so the caller need not import anything."""
    from engine.noise import TELEMETRY_OFF, verbose

    defaults = dict(TELEMETRY_OFF)
    if not verbose(env):  # TensorFlow's log: engine.noise.import_tensorflow
        defaults["PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL"] = "WARNING"
    return {key: value for key, value in defaults.items() if key not in env}


def quiet() -> None:
    """No telemetry; and unless `--verbose`, Prefect's console shows warnings and errors only
    (the runs' INFO logs still reach the Prefect UI)."""
    from engine.noise import verbose

    os.environ.update(quiet_defaults(os.environ))
    if not verbose():
        # Prefect's senders of events and logs warn when they stop with items still to send
        # ("Still processing items"): a normal drain at a flow's end, sent all the same
        for name in ("EventsWorker", "APILogWorker"):
            logging.getLogger(name).setLevel(logging.ERROR)


def _load(stage: str, game: str | None, name: str | None, path: Path) -> dict:
    from flows.params import load_for

    quiet()
    return load_for(stage, game, name, path)


@stage_app.command("generate")
def generate(
    game: GAME,
    technique: Annotated[str, typer.Argument(help="A key of GAME.datasets.")],
    params: PARAMS = DEFAULT_PARAMS,
    dask: DASK = None,
):
    """data/GAME/TECHNIQUE: the dataset's shards fanned out on the task runner."""
    from flows.stages.generate import generate_flow

    result = generate_flow(ROOT, _load("generate", game, technique, params), game, technique, dask)
    typer.echo(f"data/{game}/{technique}: {result['counts']}")


@stage_app.command("validate")
def validate(game: GAME, technique: str, params: PARAMS = DEFAULT_PARAMS):
    """validation/GAME/TECHNIQUE.json, only when the dataset passes every suite."""
    from flows.stages.validate import validate_flow

    verdict = validate_flow(ROOT, _load("validate", game, technique, params), game, technique)
    typer.echo(verdict["summary"])


@stage_app.command("encode")
def encode(game: GAME, name: str, params: PARAMS = DEFAULT_PARAMS):
    """encoded/GAME/NAME.npz from a validated dataset."""
    from flows.stages.encode import encode_flow

    result = encode_flow(ROOT, _load("encode", game, name, params), game, name)
    typer.echo(f"encoded/{game}/{name}.npz: {result['rows']} rows")


@stage_app.command("train")
def train(game: GAME, name: str, params: PARAMS = DEFAULT_PARAMS, dask: DASK = None):
    """trained/GAME/NAME: a sweep on MLflow (its configurations on a Dask cluster when given
    one), the best run registered."""
    from flows.stages.train import train_flow

    result = train_flow(ROOT, _load("train", game, name, params), game, name, dask)
    typer.echo(
        f"trained/{game}/{name}: run {result['run_id']}, version {result['version']}, "
        f"{result['configurations']} configuration(s)"
    )


@stage_app.command("export")
def export(game: GAME, params: PARAMS = DEFAULT_PARAMS):
    """exports/GAME: every trained model's file, checked and played once."""
    from flows.stages.export import export_flow

    for item in export_flow(ROOT, _load("export", game, None, params), game):
        typer.echo(f"exports/{game}/{item['name']}/{item['file']} (parity {item['parity']})")


@stage_app.command("evaluate")
def evaluate(game: GAME, params: PARAMS = DEFAULT_PARAMS, dask: DASK = None):
    """evaluation/GAME: the tournament (Parquet, JSON, PNG)."""
    from flows.stages.evaluate import evaluate_flow

    summary = evaluate_flow(ROOT, _load("evaluate", game, None, params), game, dask)
    for rank, row in enumerate(summary["standings"], start=1):
        typer.echo(f"{rank}. {row['spec']}: {row['score']:.3f} over {row['games']} games")


@stage_app.command("promote")
def promote(game: GAME, params: PARAMS = DEFAULT_PARAMS):
    """promotion/GAME.json: the gate for each family's new versions."""
    from flows.stages.promote import promote_flow

    result = promote_flow(ROOT, _load("promote", game, None, params), game)
    for info in result["families"].values():
        typer.echo(f"{info['model']}: production = {info['production'] or 'none'}")


@stage_app.command("zoo-import")
def zoo_import(params: PARAMS = DEFAULT_PARAMS):
    """imports/zoo.json: each zoo entry registered once (its name's first production version
    when the name has none), before the trainings whose gate it then defends."""
    from flows.stages.zoo import zoo_import_flow
    from models.zoo import CHECKOUT_ZOO

    zoo_root = ROOT / "zoo" if (ROOT / "zoo").is_dir() else CHECKOUT_ZOO
    result = zoo_import_flow(ROOT, _load("zoo-import", None, None, params), zoo_root)
    for row in result["entries"]:
        what = "imported" if row["imported"] else "already registered"
        typer.echo(f"zoo:{row['entry']}: {row['name']}/{row['version']} ({what})")


# ---- the territory chain (issue 11): NEAT training per case and the comparison with study 003
@stage_app.command("neat")
def neat(
    game: GAME,
    name: Annotated[str, typer.Argument(help="A key of GAME.models (a NEAT training case).")],
    params: PARAMS = DEFAULT_PARAMS,
    dask: DASK = None,
):
    """trained/GAME/NAME: a NEAT training case, every seed (each a cluster task when given a
    Dask cluster), the champion registered."""
    from flows.stages.neat import neat_stage

    summary = neat_stage(ROOT, _load("neat", game, name, params), name, dask)
    typer.echo(
        f"trained/{game}/{name}: best fitness {summary['metrics']['best_fitness']:.2f} "
        f"(seed {summary['best_seed']}), version {summary['version']}, parity {summary['parity']}"
    )


@stage_app.command("study")
def study(game: GAME, params: PARAMS = DEFAULT_PARAMS):
    """studies/GAME/README.md: the chain's figures beside its study's."""
    from flows.stages.study import study_flow

    typer.echo(str(study_flow(ROOT, _load("study", game, None, params))))


@stage_app.command("playerzero")
def playerzero(
    game: Annotated[str, typer.Argument(help="A key of params playerzero (connect4, othello…).")],
    params: PARAMS = DEFAULT_PARAMS,
    generations: Annotated[
        int | None, typer.Option(min=0, help="Run up to this many generations (default: params).")
    ] = None,
    dask: DASK = None,
):
    """playerzero/GAME: self-play generations, training, arena, registry (resumable); its
    self-play shards, arena pairs and evaluation match on a Dask cluster when given one."""
    from flows.stages.playerzero import playerzero_stage

    settings = _load("playerzero", None, game, params)
    result = playerzero_stage(ROOT, settings, game, generations, dask)
    best = (result["best"] or {}).get("path", "none")
    typer.echo(f"playerzero/{game}: {result['generation']} generations; best {best}")


@stage_app.command("report")
def report(params: PARAMS = DEFAULT_PARAMS):
    """reports/pipeline/README.md and the bar charts."""
    from flows.stages.report import report_flow

    typer.echo(str(report_flow(ROOT, _load("report", None, None, params))))


# ---- servers ----------------------------------------------------------------------------------
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
        _stop_servers([process], grace=10.0)
        raise typer.Exit(1)
    return process, api


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
            "find their kernels compiled (flows/rehearsal.py); default: on a first run, "
            "without targets or --cluster.",
        ),
    ] = None,
):
    """`dvc repro` with one Prefect server for all stages, then where to look."""
    from flows import rehearsal

    quiet()
    env = dict(os.environ)
    if rehearse is None:
        rehearse = not targets and not cluster and rehearsal.needed(Path.cwd())
    if cluster:  # its Prefect and MLflow servers, its scheduler: every stage reads them
        from flows.cluster import ClusterError, client_env, read_state, status

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
        from flows.stage_host import start_host

        host, env = start_host(env)  # stages use it once its imports are done, before that not
        helpers.append(host)
        command = ["dvc", "repro", *(["--force"] if force else []), *(targets or [])]
        code = _run_dvc(command, env)
    finally:
        _stop_servers(helpers, grace=30.0)
        if rehearse:  # the rehearsal's folder, if it was killed before it could remove it
            shutil.rmtree(rehearsal.SCRATCH, ignore_errors=True)
    if code:
        raise typer.Exit(code)
    where(params)


def where(params: PARAMS = DEFAULT_PARAMS):
    """Where the results are: tournament table, production versions, UIs, report."""
    import json

    from flows.params import load

    settings = load(params)
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
    uri = os.environ.get("MLFLOW_TRACKING_URI") or _tracking_uri(params)
    from models.tracking import experiment_links

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
        # no GenAI job runners (seven processes, ~250 MB each; flows/cluster.py does the same)
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
        _stop_servers([prefect, mlflow], grace=20.0)


def _run_dvc(command: list[str], env: dict[str, str], grace: float = 30.0) -> int:
    """Runs dvc in a process group of its own and returns its exit code. Ctrl-C, SIGTERM or
    SIGHUP to `gridbots repro` reach that group as SIGINT, as Ctrl-C in a terminal reaches dvc
    and its stage (both stop; the next run resumes), and whatever of the group is still there
    when dvc ends, or `grace` seconds after the signal, is stopped too: a `gridbots repro`
    killed on its own used to leave dvc running stages, its host and server gone."""
    from flows.cluster import group_members, stop_groups

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


def _stop_servers(processes: list[subprocess.Popen], grace: float) -> None:
    """Each server was started in a process group of its own: the cluster's stop_groups ends
    the groups (children too) within one shared grace period, then the servers are reaped."""
    from flows.cluster import stop_groups

    stop_groups([process.pid for process in processes], grace)
    for process in processes:
        process.wait()


def _tracking_uri(params: Path) -> str:
    from flows.params import load

    try:
        return str(load(params).get("mlflow", {}).get("tracking_uri") or "sqlite:///mlflow.db")
    except Exception:  # the UI still opens on the default store
        return "sqlite:///mlflow.db"


def deployment(params: dict, root: str = "."):
    """The improvement cycle as a deployment with params.yaml's cron schedule."""
    from prefect.schedules import Cron

    from flows.pipeline import improvement_cycle

    serve = params["serve"]
    return improvement_cycle.to_deployment(
        name=serve["name"],
        schedule=Cron(serve["cron"], timezone=serve["timezone"]),
        parameters={"root": str(Path(root).resolve())},
        description="dvc repro, then the promotion gate of every game",
    )


def serve(params: PARAMS = DEFAULT_PARAMS):
    """Serves the improvement cycle on its cron schedule (the Prefect UI lists and triggers it)."""
    from prefect import serve as prefect_serve

    settings = _load("serve", None, None, params)
    typer.echo(f"serving improvement-cycle, cron {settings['serve']['cron']!r}; Ctrl-C stops")
    prefect_serve(deployment(settings))


def register(app: typer.Typer) -> None:
    from flows import td_commands

    td_commands.register(stage_app)  # the TD chain's stages (study 002)
    app.add_typer(stage_app, name="stage")
    app.command("repro")(repro)
    app.command("where")(where)
    app.command("serve")(serve)
    app.command("ui")(ui)
