"""`gridbots generate`: a dataset of one game by one technique, as resumable Parquet shards.

A thin shell over features.store.generate_dataset. Bad input (unknown technique, Y = 0, W
outside [0, 1], a directory holding another command's dataset) raises DataError, which
cli.main prints as one line with exit code 2.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from flows.cli.options import SCENARIO, scenario_options

app = typer.Typer()


@app.command("generate")
def generate(
    game: Annotated[str, typer.Argument(help="Game name, optionally with parameters.")],
    technique: Annotated[
        str, typer.Argument(help="thorough | randomized | battle | imitation | selfplay")
    ],
    out: Annotated[Path, typer.Option("--out", help="Dataset directory (created or resumed).")],
    x: Annotated[int | None, typer.Option("--x", help="X: states / games / depth limit.")] = None,
    y: Annotated[int | None, typer.Option("--y", help="Y: final states per state or game.")] = None,
    z: Annotated[int | None, typer.Option("--z", help="Z: technique-specific (see docs).")] = None,
    w: Annotated[
        float | None, typer.Option("--w", help="W: extra random move probability.")
    ] = None,
    games: Annotated[int | None, typer.Option("--games", help="Games to produce in all.")] = None,
    agents: Annotated[
        str, typer.Option("--agents", help="Agent specs, comma-separated, one per seat.")
    ] = "",
    seed: Annotated[int, typer.Option("--seed", help="Seed of the whole dataset.")] = 0,
    workers: Annotated[int, typer.Option("--workers", min=1, help="Worker processes.")] = 1,
    shard_size: Annotated[
        int | None, typer.Option("--shard-size", help="Games per shard (about).")
    ] = None,
    opening: Annotated[
        int | None,
        typer.Option(
            "--opening",
            min=0,
            help="Random opening plies of every game (battle, "
            "imitation; the scenario option of turn-based duels).",
        ),
    ] = None,
    rotate: Annotated[
        bool, typer.Option("--rotate", help="Imitation: game i seats the agents i places on.")
    ] = False,
    scenario: SCENARIO = None,
) -> None:
    """Generates (or resumes) a dataset: DIR/{games,sequences,positions}/part-*.parquet.
    `--scenario start=random` gives Lazerbike the seeded random starts that `gridbots match`
    and tournaments play from (the default is the symmetric start)."""
    from features.store import generate_dataset, progress_bar

    starts = scenario_options(scenario)
    if opening is not None:
        starts["opening"] = opening

    options = {
        "x": x,
        "y": y,
        "z": z,
        "w": w,
        "games": games,
        "agents": agents or None,
        "shard_size": shard_size,
        "scenario": starts or None,
        "rotate": rotate or None,
    }
    with progress_bar(f"{technique} {game}") as progress:
        manifest = generate_dataset(
            out, game, technique, options, seed=seed, workers=workers, progress=progress
        )
    counts = manifest["counts"]
    typer.echo(
        f"{out}: {counts['games']} games, {counts['sequences']} sequences, "
        f"{counts['positions']} positions in {manifest['planned_shards']} shards "
        f"({manifest['run']['seconds']:.1f} s)"
    )
