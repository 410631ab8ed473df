"""The `gridbots` command line (the stable contract of DESIGN.md): one root app that adds each
command group's app, named here.

Every command is a thin shell over engine/agents/features/models functions. Errors a user can
cause (unknown game, illegal history, bad flag) print one line on stderr and exit with code 2.
The program's entry is flows/entry.py: a pipeline stage never loads this module.
"""

from __future__ import annotations

from typing import Annotated

import typer

from flows.cli import cluster, datasets, games, generate, models, pipeline, play, solved, web
from flows.cli.options import UserError

app = typer.Typer(
    name="gridbots",
    help="A factory for game-playing bots on grid games.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
for group in (games, play, generate, datasets, models, pipeline, solved, web, cluster):
    app.add_typer(group.app)  # each module's commands (and its named sub-apps) at the top


@app.callback()
def _options(
    verbose: Annotated[
        bool, typer.Option("--verbose", help="Show the libraries' own warnings and logs.")
    ] = False,
) -> None:
    """A factory for game-playing bots on grid games."""
    from engine.noise import set_verbose

    set_verbose(verbose)


def run(argv: list[str] | None = None) -> int:
    """Runs a command: user errors become one stderr line and exit code 2, never a traceback;
    a person who quits a game ends with 130, what was played printed."""
    from agents.play.human import Quit
    from flows.pipeline.commands import run_command

    return run_command(app, argv, "gridbots", user_errors=(UserError,), stops=(Quit,))
