"""`gridbots stage neat territory NAME` and `gridbots stage study territory` (dvc.yaml runs them).

They join `gridbots stage` beside the pipeline's generic stages; export, evaluate and promote of
the territory chain are those generic stages.
"""

from __future__ import annotations

import typer

from flows.stage_commands import DEFAULT_PARAMS, GAME, PARAMS, ROOT, _load, stage_app


def register(app: typer.Typer) -> None:
    """Nothing to add at the top level: the commands hang under `gridbots stage`."""


@stage_app.command("neat")
def neat(
    game: GAME,
    name: str = typer.Argument(help="A key of GAME.models (a NEAT training case)."),
    params: PARAMS = DEFAULT_PARAMS,
):
    """trained/GAME/NAME: a NEAT training case, every seed, the champion registered."""
    from flows.territory import neat_flow

    summary = neat_flow(ROOT, _load("neat", game, name, params), name)
    typer.echo(
        f"trained/{game}/{name}: best fitness {summary['metrics']['best_fitness']:.2f} "
        f"(seed {summary['best_seed']}), version {summary['version']}, parity {summary['parity']}"
    )


@stage_app.command("study")
def study(game: GAME, params: PARAMS = DEFAULT_PARAMS):
    """studies/GAME/README.md: the chain's figures beside its study's."""
    from flows.territory import study_flow

    typer.echo(str(study_flow(ROOT, _load("study", game, None, params))))
