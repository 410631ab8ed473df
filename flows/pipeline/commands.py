"""`gridbots stage NAME …`: the commands dvc.yaml runs, one per stage, each running one flow.

One stage = one command = one Prefect flow in flows/pipeline/stages/NAME.py (the TD chain's
old commands, flows.pipeline.td_commands, name the generic ones). The program's entry
(flows/entry.py) sends
`gridbots stage …` here, or to the warm stage host, without loading the rest of the command
line: a stage's DVC deps are the files it runs, and the command line is none of them. Each
command imports its stage's module only when it runs, so a stage loads its own flow alone.
Without PREFECT_API_URL Prefect starts a temporary server per command (about 10 s each), so
`gridbots repro` starts one server for the whole `dvc repro` (flows.pipeline.repro).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from flows.pipeline.settings import (
    DASK,
    DEFAULT_PARAMS,
    GAME,
    PARAMS,
    ROOT,
    load,
    quiet,
)
from flows.pipeline.td_commands import td_app

stage_app = typer.Typer(
    help="Pipeline stages (dvc.yaml runs these).", no_args_is_help=True, add_completion=False
)
stage_app.add_typer(td_app)  # the TD chain's old commands (study 002): renamed
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


@stage_app.command("generate")
def generate(
    game: GAME,
    technique: Annotated[str, typer.Argument(help="A key of GAME.datasets.")],
    params: PARAMS = DEFAULT_PARAMS,
    dask: DASK = None,
):
    """data/GAME/TECHNIQUE: the dataset's shards fanned out on the task runner."""
    from flows.pipeline.stages.generate import generate_flow

    result = generate_flow(ROOT, load("generate", game, technique, params), game, technique, dask)
    typer.echo(f"data/{game}/{technique}: {result['counts']}")


@stage_app.command("validate")
def validate(game: GAME, technique: str, params: PARAMS = DEFAULT_PARAMS):
    """validation/GAME/TECHNIQUE.json, only when the dataset passes every suite."""
    from flows.pipeline.stages.validate import validate_flow

    verdict = validate_flow(ROOT, load("validate", game, technique, params), game, technique)
    typer.echo(verdict["summary"])


@stage_app.command("encode")
def encode(game: GAME, name: str, params: PARAMS = DEFAULT_PARAMS):
    """encoded/GAME/NAME.npz from a validated dataset."""
    from flows.pipeline.stages.encode import encode_flow

    result = encode_flow(ROOT, load("encode", game, name, params), game, name)
    typer.echo(f"encoded/{game}/{name}.npz: {result['rows']} rows")


@stage_app.command("train")
def train(game: GAME, name: str, params: PARAMS = DEFAULT_PARAMS, dask: DASK = None):
    """trained/GAME/NAME: a sweep on MLflow (its configurations on a Dask cluster when given
    one), the best run registered."""
    from flows.pipeline.stages.train import train_flow

    result = train_flow(ROOT, load("train", game, name, params), game, name, dask)
    typer.echo(
        f"trained/{game}/{name}: run {result['run_id']}, version {result['version']}, "
        f"{result['configurations']} configuration(s)"
    )


@stage_app.command("export")
def export(game: GAME, params: PARAMS = DEFAULT_PARAMS):
    """exports/GAME: every trained model's file, checked and played once."""
    from flows.pipeline.stages.export import export_flow

    for item in export_flow(ROOT, load("export", game, None, params), game):
        typer.echo(f"exports/{game}/{item['name']}/{item['file']} (parity {item['parity']})")


@stage_app.command("evaluate")
def evaluate(game: GAME, params: PARAMS = DEFAULT_PARAMS, dask: DASK = None):
    """evaluation/GAME: the tournament (Parquet, JSON, PNG)."""
    from flows.pipeline.stages.evaluate import evaluate_flow

    summary = evaluate_flow(ROOT, load("evaluate", game, None, params), game, dask)
    for rank, row in enumerate(summary["standings"], start=1):
        typer.echo(f"{rank}. {row['spec']}: {row['score']:.3f} over {row['games']} games")


@stage_app.command("promote")
def promote(game: GAME, params: PARAMS = DEFAULT_PARAMS):
    """promotion/GAME.json: the gate for each family's new versions."""
    from flows.pipeline.stages.promote import promote_flow

    result = promote_flow(ROOT, load("promote", game, None, params), game)
    for info in result["families"].values():
        typer.echo(f"{info['model']}: production = {info['production'] or 'none'}")


@stage_app.command("zoo-import")
def zoo_import(params: PARAMS = DEFAULT_PARAMS):
    """imports/zoo.json: each zoo entry registered once (its name's first production version
    when the name has none), before the trainings whose gate it then defends."""
    from flows.pipeline.stages.zoo import zoo_import_flow
    from models.zoo import CHECKOUT_ZOO

    zoo_root = ROOT / "zoo" if (ROOT / "zoo").is_dir() else CHECKOUT_ZOO
    result = zoo_import_flow(ROOT, load("zoo-import", None, None, params), zoo_root)
    for row in result["entries"]:
        what = "imported" if row["imported"] else "already registered"
        typer.echo(f"zoo:{row['entry']}: {row['name']}/{row['version']} ({what})")


def renamed(old: str, new: str) -> None:
    """A stage command that moved: one line naming the new one (exit 2)."""
    from flows.pipeline.stage_io import StageError

    raise StageError(f"gridbots stage {old} is now gridbots stage {new}")


# ---- stages that moved onto the generic ones (issue 68): one line naming the new command
@stage_app.command("neat", hidden=True, context_settings={"ignore_unknown_options": True})
def neat(
    game: GAME,
    name: Annotated[str, typer.Argument()],
    rest: Annotated[list[str] | None, typer.Argument(hidden=True)] = None,
):
    """Moved: `gridbots stage train GAME NAME` trains a NEAT case as every family."""
    renamed(f"neat {game} {name}", f"train {game} {name}")


@stage_app.command("study")
def study(game: GAME, params: PARAMS = DEFAULT_PARAMS, dask: DASK = None):
    """studies/GAME: a study reproduced (territory: study 003's comparison; othello: study
    002's design, its matrices and minimax match)."""
    from flows.pipeline.stages.study import study_stage

    typer.echo(str(study_stage(ROOT, load("study", game, None, params), game, dask)))


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
    from flows.pipeline.stages.playerzero import playerzero_stage

    settings = load("playerzero", None, game, params)
    result = playerzero_stage(ROOT, settings, game, generations, dask)
    best = (result["best"] or {}).get("path", "none")
    typer.echo(f"playerzero/{game}: {result['generation']} generations; best {best}")


@stage_app.command("rebuild")
def rebuild(
    game: GAME,
    name: Annotated[str, typer.Argument(help="The zoo entry's name (params zoo.GAME-NAME).")],
    params: PARAMS = Path("../params-zoo.yaml"),
):
    """zoo/GAME/NAME: a zoo entry from its chain's training (rebuild/dvc.yaml), measured by its
    card's commands, with its card."""
    from flows.pipeline.stages.rebuild import rebuild_stage

    settings = load("rebuild", None, f"{game}-{name}", params)
    typer.echo(str(rebuild_stage(ROOT, settings, game, name, params)))


@stage_app.command("report")
def report(params: PARAMS = DEFAULT_PARAMS):
    """reports/pipeline/README.md and the bar charts."""
    from flows.pipeline.stages.report import report_flow

    typer.echo(str(report_flow(ROOT, load("report", None, None, params))))


def run_command(app: typer.Typer, argv: list[str] | None, prog_name: str,
                user_errors: tuple[type[BaseException], ...] = (),
                stops: tuple[type[BaseException], ...] = ()) -> int:  # fmt: skip
    """Runs a Typer app: a user's error (a bad flag, a GameError such as a params key, a missing
    file, or one of `user_errors`) becomes one stderr line and exit code 2, never a traceback;
    Ctrl-C (or one of `stops`) exit code 130. The command line's `run` uses it too."""
    from engine.protocol import GameError, IllegalActionError

    command = typer.main.get_command(app)
    try:
        code = command.main(args=argv, prog_name=prog_name, standalone_mode=False)
    except typer.Exit as done:
        return done.exit_code
    except typer.Abort:
        print("gridbots: aborted", file=sys.stderr)
        return 130
    except typer.TyperException as problem:  # usage errors: bad flags, missing arguments
        message = problem.format_message() if hasattr(problem, "format_message") else problem
        print(f"gridbots: error: {message}", file=sys.stderr)
        return 2
    except (GameError, IllegalActionError, FileNotFoundError, *user_errors) as problem:
        print(f"gridbots: error: {problem}", file=sys.stderr)
        return 2
    except (KeyboardInterrupt, *stops):  # what was done is kept; a rerun resumes
        print("gridbots: stopped", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    return code if isinstance(code, int) else 0


def run(argv: list[str]) -> int:
    """`gridbots stage ARGV…` (ARGV without the word `stage`), run in this process."""
    return run_command(stage_app, argv, "gridbots stage")
