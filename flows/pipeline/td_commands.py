"""The TD chain's old stage commands (study 002), now the generic stages (issue 68): each names
its new command in one line and exits 2; `td-report` still writes the TD section on its own.
The stage commands (flows.pipeline.commands) add this app's commands to their own."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from flows.pipeline.settings import ROOT

GAME = Annotated[str, typer.Argument(help="Game whose TD networks (params GAME.models) to run.")]
td_app = typer.Typer()
#: old command → the command that does its work now
MOVED = {
    "td-study": "study {game}",
    "td-grid": "train {game} KEY (a td model of {game}.models whose sweep is the grid)",
    "td-long": "train {game} KEY (each td model of {game}.models)",
    "td-tournament": "evaluate {game}",
    "td-promote": "promote {game}",
}
LOOSE = {"ignore_unknown_options": True, "allow_extra_args": True}


def _moved(old: str):
    def command(game: GAME, context: typer.Context) -> None:
        from flows.pipeline.stage_io import StageError

        new = MOVED[old].format(game=game)
        raise StageError(f"gridbots stage {old} {game} is now gridbots stage {new}")

    command.__doc__ = f"Moved: gridbots stage {MOVED[old].format(game='GAME')}."
    return command


for _old in MOVED:
    td_app.command(_old, hidden=True, context_settings=LOOSE)(_moved(_old))


@td_app.command("td-report")
def td_report(
    game: GAME,
    out: Annotated[Path, typer.Option("--out", help="Folder for README.md and the PNGs.")],
):
    """The TD section of the report on its own (study 002's figures beside ours), from the
    study's and the td models' outputs in this folder; the `report` stage puts the same into
    reports/."""
    from flows.reports.td import td_section

    out.mkdir(parents=True, exist_ok=True)
    lines = td_section(ROOT, game, out)
    if not lines:
        raise typer.BadParameter(f"studies/{game}/study.json is missing: run study {game} first")
    (out / "README.md").write_text("\n".join(lines).lstrip() + "\n")
    typer.echo(str(out / "README.md"))
