"""`gridbots train | export | quantize | promote` and `gridbots bots list | show | promote |
export | import`.

Thin shells over models.tracking (runs and sweeps on MLflow) and models.registry (versions,
evidence, the promotion gate). Training already exports: every run logs its ONNX / JSON /
CRFsuite artifact, so `export RUN_ID` fetches a run's artifact as a plain file (for shipping, or
for `onnx:PATH` / `seq:model=PATH` specs) and prints its metadata. Bad input (unknown family or
model, missing alias, wrong encoding, corrupt ONNX) raises ModelError: one stderr line, exit 2.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

app = typer.Typer()

bots_app = typer.Typer(
    help="Registered bots: list, show, promote, export and import bundles.", no_args_is_help=True
)
app.add_typer(bots_app, name="bots")
GAMES = Annotated[int, typer.Option("--games", min=2, help="Gate games (sides swapped).")]
SEED = Annotated[int, typer.Option("--seed", help="First scenario seed of the gate.")]
BASELINE = Annotated[
    str | None,
    typer.Option("--baseline", help="Opponent when nothing is in production yet."),
]


@app.command("train")
def train(
    game: Annotated[str, typer.Argument(help="Game the dataset was generated from.")],
    family: Annotated[str, typer.Argument(help="Model family: lstm | hmm | crf | value-mlp.")],
    data: Annotated[Path, typer.Option("--data", help="Encoded dataset (.npz or .parquet).")],
    param: Annotated[
        list[str] | None, typer.Option("--param", help="key=value, repeatable.")
    ] = None,
    sweep: Annotated[
        list[str] | None,
        typer.Option("--sweep", help="key=v1,v2 (repeatable): one nested run per combination."),
    ] = None,
    experiment: Annotated[
        str | None, typer.Option("--experiment", help="MLflow experiment (default: the game).")
    ] = None,
    register: Annotated[
        bool, typer.Option("--register", help="Register the (best) run as a new version.")
    ] = False,
    out: Annotated[
        Path | None, typer.Option("--out", help="Also keep the artifacts in this folder.")
    ] = None,
    metric: Annotated[
        str | None,
        typer.Option(
            "--metric", help="NAME[:min|max] ranking a sweep (default: held-out loss or accuracy)."
        ),
    ] = None,
) -> None:
    """Trains a family on an encoded dataset; every run (and a sweep's parent) goes to MLflow."""
    from engine import parse_game_spec
    from models.tracking import parse_assignments
    from models.tracking import train as run_training

    outcome = run_training(
        data,
        family,
        parse_assignments(param or [], "--param"),
        sweep or [],
        experiment,
        register,
        out,
        echo=lambda text: typer.echo(text, err=True),
        expect_game=parse_game_spec(game).name,
        metric=metric,
    )
    if outcome.parent_run_id:
        typer.echo(f"sweep run {outcome.parent_run_id}: {len(outcome.runs)} configurations")
    for run in outcome.runs:
        mark = "*" if run is outcome.best and outcome.parent_run_id else "-"
        shown = ", ".join(f"{k}={v:.4g}" for k, v in sorted(run.result.metrics.items()))
        typer.echo(f"{mark} run {run.run_id}: {shown}")
    if outcome.parent_run_id:
        typer.echo(
            f"best: {outcome.best.run_id} by {outcome.metric} ({outcome.direction}) "
            f"= {outcome.best.objective:.4g}"
        )
    typer.echo(f"model: {outcome.best.model_uri}")
    if outcome.version:
        from models.registry import model_name

        name = model_name(outcome.best.dataset["game"], outcome.best.result.family)
        typer.echo(f"registered {name}/{outcome.version}")


@app.command("export")
def export(
    run_id: Annotated[str, typer.Argument(help="MLflow run id of a training run.")],
    out: Annotated[Path, typer.Option("--out", help="Folder for the artifact file.")] = Path(
        "exports"
    ),
) -> None:
    """Copies a run's exported artifact (training already exported it) and prints its metadata."""
    from models.tracking import fetch_run_artifact

    path, info = fetch_run_artifact(run_id, out)
    typer.echo(str(path))
    for key, value in sorted(info.items()):
        typer.echo(f"  {key}: {value}")


@app.command("quantize")
def quantize(
    game: Annotated[str, typer.Argument(help="Game spec the network plays.")],
    model: Annotated[Path, typer.Argument(help="A policy-value network (ONNX).")],
    out: Annotated[Path, typer.Option("--out", help="Where the int8 copy goes.")],
    positions: Annotated[
        int,
        typer.Option(
            "--positions", help="Seeded random-game positions: half calibrate, half check."
        ),
    ] = 400,
    seed: Annotated[int, typer.Option("--seed", help="Seed of those positions.")] = 0,
    min_agreement: Annotated[
        float,
        typer.Option(
            "--min-agreement",
            help="Refuse a copy whose policy argmax agrees less often with the float network's.",
        ),
    ] = 0.9,
) -> None:
    """Writes an int8 copy of a policy-value network for CPU search (models.quantize)."""
    from engine import parse_game_spec
    from models.quantize import quantize as make_copy

    check = make_copy(model, out, parse_game_spec(game), positions, seed, min_agreement)
    typer.echo(str(out))
    for key, value in check.items():
        typer.echo(f"  {key}: {value:g}")


def _print_decision(decision: Any) -> None:
    verdict = "PROMOTED to @production" if decision.promoted else "rejected"
    typer.echo(
        f"{decision.name}/{decision.version} vs {decision.opponent}: "
        f"{decision.wins}/{decision.draws}/{decision.losses} over {decision.games} games, "
        f"score {decision.score:.3f} [95% {decision.low:.3f}, {decision.high:.3f}]: {verdict}"
    )
    if decision.zoo:  # the game's zoo bot, met only after clearing the first match
        z = decision.zoo
        typer.echo(
            f"  and vs the zoo bot {z['opponent']}: {z['wins']}/{z['draws']}/{z['losses']} over "
            f"{z['games']} of {z['planned']} games, score {z['score']:.3f} "
            f"[95% {z['score_low']:.3f}, {z['score_high']:.3f}]: {z['result']}"
        )
    if not decision.promoted:
        where = f"{decision.name}/{decision.previous}" if decision.previous else "nothing"
        typer.echo(f"@production stays on {where}")


def _gate(name: str, version: str | None, games: int, baseline: str | None, seed: int) -> None:
    from models.registry import promote_if_better

    _print_decision(promote_if_better(name, version, games=games, baseline=baseline, seed=seed))


@app.command("promote")
def promote(
    game: Annotated[str, typer.Argument(help="Game name.")],
    family: Annotated[str, typer.Argument(help="Model family.")],
    version: Annotated[
        str | None, typer.Option("--version", help="Candidate version (default: the newest).")
    ] = None,
    games: GAMES = 40,
    baseline: BASELINE = None,
    seed: SEED = 0,
) -> None:
    """The promotion gate: the candidate must beat @production (or the baseline) to replace it."""
    from engine import parse_game_spec
    from models.base import family as lookup
    from models.registry import model_name

    lookup(family)  # an unknown family is named as such, not as a missing model
    _gate(model_name(parse_game_spec(game).name, family), version, games, baseline, seed)


@bots_app.command("promote")
def bots_promote(
    name: Annotated[str, typer.Argument(help="Registered model, e.g. connect4-lstm.")],
    version: Annotated[str, typer.Argument(help="Candidate version.")],
    games: GAMES = 40,
    baseline: BASELINE = None,
    seed: SEED = 0,
) -> None:
    """The promotion gate for one version of a registered model."""
    _gate(name, version, games, baseline, seed)


def _table(models: list[dict[str, Any]]):
    """One line per model: its production version and that version's evidence."""
    from rich import box
    from rich.table import Table

    from models.registry import production_summary

    table = Table(box=box.SIMPLE_HEAD)
    for column in ("model", "production", "promotion score [95%]", "games", "dataset"):
        table.add_column(column, no_wrap=True)
    for model in models:
        bot = production_summary(model)
        count = len(model["versions"])
        if bot is None:
            table.add_row(model["name"], f"none of {count}", "-", "-", "-")
            continue
        score = "-"
        if bot["score"] is not None and bot["low"] is not None:
            score = f"{bot['score']:.3f} [{bot['low']:.3f}, {bot['high']:.3f}]"
        table.add_row(
            model["name"], f"{bot['version']} of {count}", score, bot["games"] or "-",
            bot["dataset"][:12] or "-",
        )  # fmt: skip
    return table


@bots_app.command("list")
def bots_list(as_json: Annotated[bool, typer.Option("--json", help="Machine-readable.")] = False):
    """Every registered model with its versions, aliases and evidence tags."""
    from models.registry import list_models

    models = list_models()
    if as_json:
        typer.echo(json.dumps(models, indent=2))
    elif not models:
        typer.echo("no registered models yet (gridbots train … --register)")
    else:
        from rich.console import Console

        Console().print(_table(models))
        typer.echo("each version's evidence: gridbots bots show NAME")


@bots_app.command("show")
def bots_show(
    name: Annotated[str, typer.Argument(help="Registered model, e.g. connect4-lstm.")],
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable.")] = False,
):
    """One registered model: aliases, and every version's evidence in full."""
    from models.registry import describe

    model = describe(name)
    if as_json:
        typer.echo(json.dumps(model, indent=2))
        return
    aliases = ", ".join(f"@{a} -> {v}" for a, v in sorted(model["aliases"].items()))
    typer.echo(f"{model['name']}  aliases: {aliases or 'none'}")
    for v in model["versions"]:
        typer.echo(f"\nversion {v['version']} {' '.join('@' + a for a in v['aliases'])}".rstrip())
        typer.echo(f"  run {v['run_id']}, created {v['created']}")
        typer.echo(f"  source {v['source']}")
        for group, tags in _evidence_groups(v["tags"]):
            typer.echo(f"  {group}:")
            for key, value in tags:
                typer.echo(f"    {key}: {value}")


#: how `bots show` orders a version's tags: (heading, key prefix)
EVIDENCE_GROUPS = (
    ("promotion", "promotion."),
    ("held-out evaluation", "eval."),
    ("export", "export."),
    ("data", "dataset"),
    ("training", ""),
)


def _evidence_groups(tags: dict[str, str]) -> list[tuple[str, list[tuple[str, str]]]]:
    """The tags under their headings, each key once (the last heading takes the rest)."""
    left, groups = dict(tags), []
    for heading, prefix in EVIDENCE_GROUPS:
        keys = sorted(k for k in left if k.startswith(prefix))
        if keys:
            groups.append((heading, [(k, left.pop(k)) for k in keys]))
    return groups


@bots_app.command("export")
def bots_export(
    reference: Annotated[
        str,
        typer.Argument(help="NAME[@ALIAS|/VERSION] of the registry, or zoo:GAME/NAME (a folder)."),
    ],
    out: Annotated[Path, typer.Option("--out", help="New folder for the bundle.")],
) -> None:
    """Writes a bundle: the bot's files, its card and evidence, and their sha256 (bundle.json)."""
    from models.bundle import MANIFEST, export

    folder = export(reference, out)
    manifest = json.loads((folder / MANIFEST).read_text())
    typer.echo(f"{folder}: {manifest['name']} ({len(manifest['files'])} files, {MANIFEST})")


@bots_app.command("import")
def bots_import(
    folder: Annotated[Path, typer.Argument(help="A bundle folder (gridbots bots export).")],
    name: Annotated[
        str | None, typer.Option("--name", help="Register as GAME-FAMILY (default: the bundle's).")
    ] = None,
    production: Annotated[
        bool,
        typer.Option("--production", help="Make it @production; only where the name has none yet."),
    ] = False,
) -> None:
    """Checks a bundle (hashes, portable formats only, card) and registers a new version."""
    from models.bundle import import_bundle

    done = import_bundle(folder, name, production)
    where = (
        "@production"
        if done["production"]
        else f"not in production (the gate: gridbots bots promote {done['name']} {done['version']})"
    )
    typer.echo(f"registered {done['name']}/{done['version']}, {where}")
