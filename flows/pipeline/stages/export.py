"""The export stage: each trained model (its files in trained/, not MLflow's store) checked
and played once."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from prefect import flow, task

from flows.pipeline.stage_io import (
    RETRIES,
    RUN_IDS,
    SPEC_OF_KIND,
    StageError,
    atomic_dir,
    export_record_path,
    trained_run,
    write_json,
)


@task(**RETRIES)
def export_model(root: Path, game_spec: str, trained: Path, out: Path) -> dict[str, Any]:
    """The best run's artifact as the train stage left it in trained/ (the stage's declared
    input, not MLflow's store), checked, and played for one move."""
    from agents import make
    from engine import parse_game_spec
    from models.export import TOLERANCE
    from models.tracking import read_onnx

    run = trained_run(root, trained.parent.name, trained.name)
    path = trained / run["artifact"]
    if not path.is_file():
        raise StageError(f"{run['name']}: {path} is missing; run its train stage again")
    if run["artifact_kind"] == "onnx":
        read_onnx(path)  # a corrupt file is named here, not where it is next used
    out.mkdir(parents=True, exist_ok=True)
    target = out / path.name
    shutil.copyfile(path, target)
    sidecar = trained / f"{path.name}.json"  # CRFsuite metadata travels beside the model
    if sidecar.is_file():
        shutil.copyfile(sidecar, out / sidecar.name)
    parity = str(run.get("parity", "n/a"))
    if run["artifact_kind"] == "onnx" and not (
        parity not in ("n/a", "") and float(parity) <= TOLERANCE
    ):
        raise StageError(f"{run['name']}: ONNX parity {parity} is not within {TOLERANCE}")
    spec = SPEC_OF_KIND[run["artifact_kind"]].format(path=target.resolve())
    game = parse_game_spec(game_spec)
    state = game.new_initial_state(seed=0)
    player = max(state.current_player(), 0)  # seat 0 at a simultaneous node
    action = make(spec, game, seed=0).step(state, player)
    if action not in state.legal_actions(player):
        raise StageError(f"{run['name']}: the exported model plays an illegal first move")
    return {
        "name": run["name"],
        "family": run["family"],
        "file": target.name,
        "kind": run["artifact_kind"],
        "parity": parity,
        # the run record's (not the output's), where the stage has one beside trained/
        **{key: run[key] for key in ("run_id", "version") if key in run},
    }


@flow(name="export")
def export_flow(root: Path, params: dict, game: str) -> list[dict[str, Any]]:
    root = Path(root)
    with atomic_dir(root / "exports" / game) as scratch:
        futures = [
            export_model.submit(
                root, params[game]["spec"], root / "trained" / game / name, scratch / name
            )
            for name in params[game]["models"]
        ]
        exported = [f.result() for f in futures]
        # the ids live in the trainings' run records (stage_io.trained_run), not in the output
        write_json(scratch / "exports.json", [drop_ids(e) for e in exported])
    # which versions this export took: a later training overwrites its own run record, and the
    # evaluate stage's tournament played these (the leaderboard labels its rows by them)
    ids = [{"name": e["name"], **{k: e[k] for k in RUN_IDS if k in e}} for e in exported]
    write_json(export_record_path(root, game), ids)
    return exported


def drop_ids(entry: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in entry.items() if k not in RUN_IDS}
