"""`gridbots stage td-study|td-grid|td-long|td-tournament|td-promote|td-report GAME`: the TD
chain's stages (dvc.yaml runs them; each runs one flow of flows/pipeline/stages/td.py). The stage
commands (flows.pipeline.commands) add this app's commands to their own."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from flows.pipeline.settings import DASK, DEFAULT_PARAMS, PARAMS, ROOT, load

GAME = Annotated[str, typer.Argument(help="Game whose TD chain (params GAME.td) to run.")]
td_app = typer.Typer()


def _run(stage: str, flow, game: str, params: Path, dask: str | None):
    """The stage's flow, its jobs as cluster tasks when it has a Dask address."""
    from flows.pipeline.stage_io import run_flow

    settings = load(stage, game, None, params)
    return run_flow(flow, settings, dask, ROOT, settings, game)


@td_app.command("td-study")
def td_study(game: GAME, params: PARAMS = DEFAULT_PARAMS, dask: DASK = None):
    """td/GAME/study: the study's one-at-a-time sweep, its six matrices, the minimax match."""
    from flows.pipeline.stages.td import study_flow

    study = _run("td-study", study_flow, game, params, dask)
    greedy = study["minimax"]["greedy_openings"]
    typer.echo(
        f"td/{game}/study: {len(study['configs'])} configurations; {study['base']} vs "
        f"{study['minimax']['opponent']}: {greedy['wins']}-{greedy['draws']}-{greedy['losses']}"
    )


@td_app.command("td-grid")
def td_grid(game: GAME, params: PARAMS = DEFAULT_PARAMS, dask: DASK = None):
    """td/GAME/grid: the full factorial grid and its best configuration."""
    from flows.pipeline.stages.td import grid_flow

    summary = _run("td-grid", grid_flow, game, params, dask)
    typer.echo(
        f"td/{game}/grid: {summary['configs']} configurations in {summary['seconds']:.0f} s; "
        f"best {summary['best']}"
    )


@td_app.command("td-long")
def td_long(game: GAME, params: PARAMS = DEFAULT_PARAMS, dask: DASK = None):
    """td/GAME/long: the best configuration trained for long, registered (resumable)."""
    from flows.pipeline.stages.td import long_flow

    runs = _run("td-long", long_flow, game, params, dask)
    for name, run in runs.items():
        version = run["registered"]["version"]
        typer.echo(f"td/{game}/long/{name}: {run['label']}, version {version}")


@td_app.command("td-tournament")
def td_tournament(game: GAME, params: PARAMS = DEFAULT_PARAMS, dask: DASK = None):
    """evaluation/GAME: the TD bots against minimax, MCTS and the other listed specs."""
    from flows.pipeline.stages.td import tournament_flow

    summary = _run("td-tournament", tournament_flow, game, params, dask)
    for rank, row in enumerate(summary["standings"], start=1):
        typer.echo(f"{rank}. {row['spec']}: {row['score']:.3f} over {row['games']} games")


@td_app.command("td-promote")
def td_promote(game: GAME, params: PARAMS = DEFAULT_PARAMS):
    """promotion/GAME.json: the gate for the new GAME-td version."""
    from flows.pipeline.stages.td import promote_flow

    result = promote_flow(ROOT, load("td-promote", game, None, params), game)
    info = result["families"]["td"]
    typer.echo(f"{info['model']}: production = {info['production'] or 'none'}")


@td_app.command("td-report")
def td_report(
    game: GAME,
    out: Annotated[Path, typer.Option("--out", help="Folder for README.md and the PNGs.")],
):
    """The TD section of the report on its own (study 002's figures beside ours), from the
    chain's outputs in this folder; the `report` stage puts the same into reports/."""
    from flows.reports.td import td_section

    out.mkdir(parents=True, exist_ok=True)
    lines = td_section(ROOT, game, out)
    if not lines:
        raise typer.BadParameter(f"td/{game}/study/study.json is missing: run td-study first")
    (out / "README.md").write_text("\n".join(lines).lstrip() + "\n")
    typer.echo(str(out / "README.md"))
