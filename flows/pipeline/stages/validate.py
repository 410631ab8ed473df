"""The validate stage: the gate every dataset passes before anything reads it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import flow, task

from flows.pipeline.params import stage_label
from flows.pipeline.stage_io import RETRIES, StageError, write_json


@task(**RETRIES)
def validate_dataset(directory: Path, sample: int, seed: int) -> dict[str, Any]:
    from features.validate import validate_dataset as run

    report = run(directory, sample=sample, seed=seed, docs=False, write=False)
    return {"success": report.success, "summary": report.summary(), "failures": report.failures()}


@flow(name="validate")
def validate_flow(root: Path, params: dict, game: str, technique: str) -> dict[str, Any]:
    """The gate: a failing dataset stops the run with the summary and writes no verdict file."""
    settings = params[game]["validation"]
    directory = Path(root) / "data" / game / technique
    verdict = validate_dataset(directory, int(settings["sample"]), int(settings["seed"]))
    if not verdict["success"]:
        raise StageError(f"{stage_label('validate', game, technique)}: {verdict['summary']}")
    from features.store import read_manifest

    manifest = read_manifest(directory)
    verdict.update(content_hash=manifest["content_hash"], counts=manifest["counts"])
    write_json(Path(root) / "validation" / game / f"{technique}.json", verdict)
    return verdict
