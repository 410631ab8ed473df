"""`gridbots validate` and `gridbots encode`: the gate a dataset passes, and its arrays.

Thin shells over features.validate and features.encode. `validate` exits 0 when every suite
passes and 1 when one fails (a verdict, not an error); bad input (no dataset, a half-written
one, an unknown encoding, an option the encoding does not use) raises DataError, which cli.main
prints as one line with exit code 2.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer()

DATASET = Annotated[Path, typer.Argument(help="Dataset directory (made by gridbots generate).")]


@app.command("validate")
def validate(
    directory: DATASET,
    sample: Annotated[
        int, typer.Option("--sample", min=1, help="Rows per table for the replay checks.")
    ] = 200,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the sample.")] = 0,
    docs: Annotated[
        bool, typer.Option("--docs/--no-docs", help="Write Data Docs HTML next to the JSON.")
    ] = True,
) -> None:
    """Runs the great-expectations suites; writes DIR/validation/result.json (and Data Docs)."""
    from features.validate import validate_dataset

    report = validate_dataset(directory, sample=sample, seed=seed, docs=docs)
    typer.echo(report.summary())
    if not report.success:
        raise typer.Exit(1)


@app.command("encode")
def encode(
    directories: Annotated[
        list[Path],
        typer.Argument(
            help="Dataset directories (made by gridbots generate) of one game, encoded as one file."
        ),
    ],
    encoding: Annotated[
        str,
        typer.Option(
            "--encoding",
            help="quantitative | qualitative | board-codes | board-onehot | count-onehot | planes"
            " | value-planes",
        ),
    ],
    out: Annotated[Path, typer.Option("--out", help="Output file: .npz or .parquet.")],
    length: Annotated[
        int | None, typer.Option("--length", min=1, help="Rounds per sequence (sequences).")
    ] = None,
    augment: Annotated[
        bool, typer.Option("--augment", help="Add every symmetric copy (planes).")
    ] = False,
    plies: Annotated[
        bool,
        typer.Option(
            "--plies",
            help="One round per move, not per turn of every player "
            "(sequences of turn-based games).",
        ),
    ] = False,
    boards: Annotated[
        bool,
        typer.Option(
            "--boards",
            help="Also the board after every round (sequences; with --plies for turn-based "
            "games): sequence models that read the position beside the moves.",
        ),
    ] = False,
    seat: Annotated[
        int | None,
        typer.Option(
            "--seat",
            min=0,
            help="Only this seat's rows (sequences). Each row holds every seat's moves, so a "
            "model of every seat (lstm player=-1 reads seat 0) needs one row a game.",
        ),
    ] = None,
) -> None:
    """Encodes datasets into arrays; the file records the encoding, game and shapes."""
    from features.encode import encode_datasets, save
    from features.encode import encoding as lookup
    from features.errors import DataError

    table, _ = lookup(encoding)
    if out.suffix not in (".npz", ".parquet"):
        raise DataError(f"--out {out} must end in .npz or .parquet")
    options: dict = {}
    if length is not None:
        if table != "sequences":
            raise DataError(f"--length applies to sequence encodings, not {encoding!r}")
        options["length"] = length
    if plies:
        if table != "sequences":
            raise DataError(f"--plies applies to sequence encodings, not {encoding!r}")
        options["plies"] = True
    if boards:
        if table != "sequences":
            raise DataError(f"--boards applies to sequence encodings, not {encoding!r}")
        options["boards"] = True
    if seat is not None:
        if table != "sequences":
            raise DataError(f"--seat applies to sequence encodings, not {encoding!r}")
        options["seat"] = seat
    if augment:
        if encoding != "planes":
            raise DataError(f"--augment applies to the planes encoding, not {encoding!r}")
        options["augment"] = True
    arrays, meta = encode_datasets(directories, encoding, **options)
    save(arrays, meta, out)
    shapes = ", ".join(f"{k} {tuple(v.shape)}" for k, v in arrays.items())
    typer.echo(f"{out}: {encoding} of {meta['game']}, {meta['rows']} rows: {shapes}")
