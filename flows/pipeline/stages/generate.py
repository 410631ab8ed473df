"""The generate stage: a dataset's shards fanned out on the task runner, each committed as it
finishes through the store's plan (features.store.plan), so a killed stage resumes.

The dataset folder holds the same bytes whoever made it and when; how this run went (each
shard's worker and seconds) goes to metrics/GAME/generate-TECHNIQUE.json."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import flow

from flows.pipeline.stage_io import fan_out, task_runner, write_json


def generate_flow(root: Path, params: dict, game: str, technique: str, dask: str | None = None):
    """A dataset as shards fanned out on the task runner, committed into the manifest."""
    runner = task_runner(params, dask)
    return _generate.with_options(task_runner=runner)(root, params, game, technique)


@flow(name="generate")
def _generate(root: Path, params: dict, game: str, technique: str) -> dict[str, Any]:
    from features import store

    settings = params[game]["datasets"][technique]
    job = store.plan(
        Path(root) / "data" / game / technique,
        params[game]["spec"],
        # a dataset is named after its technique unless it says which (Sokoban's `planner`:
        # imitation with the planner in every seat and no detours)
        str(settings.get("technique", technique)),
        dict(settings["options"]),
        seed=int(settings["seed"]),
        replace=True,  # the stage owns its output: other params mean a new dataset
    )
    # each shard into fsynced temporary files (any process, any machine sharing the disk),
    # committed in shard order as they finish
    for result in fan_out(store.run_shard, job.tasks):
        job.commit(result)
    manifest = job.finish()
    write_json(Path(root) / "metrics" / game / f"generate-{technique}.json", manifest["run"])
    return {"counts": manifest["counts"], "content_hash": manifest["content_hash"]}
