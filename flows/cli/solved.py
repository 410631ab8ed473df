"""Commands of PlayerZero: the loop stage, and the Connect 4 solved-position set.

gridbots stage playerzero GAME [--generations N]   the loop (what dvc.yaml runs)
gridbots solved build [--count 1000] [--seed 2026] [--out FILE]
gridbots solved rate SPEC [SPEC …] [--limit N] [--positions FILE] [--json]
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer()

solved_app = typer.Typer(
    help="Connect 4 solved positions: build the set with the exact solver, rate agents on it.",
    no_args_is_help=True,
)
app.add_typer(solved_app, name="solved")


@solved_app.command("build")
def build(
    count: Annotated[int, typer.Option(min=1, help="Positions in the set.")] = 1000,
    seed: Annotated[int, typer.Option(help="Seed of the random games.")] = 2026,
    lo: Annotated[int, typer.Option(min=8, max=40, help="Fewest stones.")] = 12,
    hi: Annotated[int, typer.Option(min=8, max=40, help="Most stones.")] = 34,
    out: Annotated[Path | None, typer.Option(help="Output file (default: shipped set).")] = None,
):
    """Labels random middle/end positions with every column's exact score."""
    from agents.connect4_bench import DEFAULT_FILE, build_positions, write_positions
    from features.store import progress_bar

    if lo > hi:
        raise typer.BadParameter(f"--lo {lo} is above --hi {hi}")
    with progress_bar("solving positions") as progress:
        rows = build_positions(count, seed, lo, hi, progress)
    typer.echo(str(write_positions(out or DEFAULT_FILE, rows)))


@solved_app.command("rate")
def rate(
    specs: Annotated[list[str], typer.Argument(help="Agent specs (policy:model=… included).")],
    positions: Annotated[Path | None, typer.Option(help="Set file (default: shipped).")] = None,
    limit: Annotated[int, typer.Option(min=0, help="First N positions only (0: all).")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable.")] = False,
):
    """Optimal-move rate (best exact score) and outcome rate of agents on the solved set."""
    from agents.connect4_bench import DEFAULT_FILE, agent_rate, read_positions
    from features.store import progress_bar

    rows = read_positions(positions or DEFAULT_FILE, limit)
    results = []
    for spec in specs:
        with progress_bar(spec) as progress:
            results.append(agent_rate(spec, rows, progress=progress))
    if as_json:
        typer.echo(json.dumps(results, indent=2))
        return
    for r in results:
        split = ", ".join(
            f"{name} {v['optimal_rate']:.3f} ({v['positions']})"
            for name, v in r["by_value"].items()
        )
        typer.echo(
            f"{r['spec']}: optimal {r['optimal_rate']:.3f}, outcome kept {r['outcome_rate']:.3f} "
            f"on {r['positions']} positions, {r['ms_per_move_mean']:.1f} ms/move; optimal in "
            f"positions {split}"
        )
