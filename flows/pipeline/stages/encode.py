"""The encode stage: a validated dataset into arrays for training."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from prefect import flow, task

from flows.pipeline.stage_io import RETRIES, StageError


def require_validated(root: Path, game: str, technique: str) -> dict[str, Any]:
    """The validation verdict of a dataset; StageError with its summary unless it passed."""
    path = Path(root) / "validation" / game / f"{technique}.json"
    if not path.is_file():
        raise StageError(f"{game}/{technique} has not passed validation ({path} is missing)")
    verdict = json.loads(path.read_text())
    if not verdict.get("success"):
        raise StageError(f"{game}/{technique} failed validation: {verdict.get('summary')}")
    return verdict


@task(**RETRIES)
def encode_dataset(directory: Path, encoding: str, options: dict, out: Path) -> dict[str, Any]:
    from features.encode import encode_dataset as run
    from features.encode import save
    from features.store import read_manifest

    arrays, meta = run(directory, encoding, **options)
    meta["manifest_hash"] = read_manifest(directory)["content_hash"]
    save(arrays, meta, out)
    return {"rows": meta["rows"], "shapes": meta["shapes"]}


@flow(name="encode")
def encode_flow(root: Path, params: dict, game: str, name: str) -> dict[str, Any]:
    settings = params[game]["encodings"][name]
    require_validated(root, game, settings["dataset"])
    out = Path(root) / "encoded" / game / f"{name}.npz"
    out.parent.mkdir(parents=True, exist_ok=True)
    directory = Path(root) / "data" / game / settings["dataset"]
    return encode_dataset(directory, settings["encoding"], dict(settings["options"]), out)
