"""The generate stage: a dataset's shards fanned out on the task runner, each committed as it
finishes through the store's plan (features.store.plan), so a killed stage resumes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import flow, task

from flows.stage_io import RETRIES, task_runner


@task(**RETRIES)
def run_shard(shard_task: dict[str, Any]) -> dict[str, Any]:
    """One shard into fsynced temporary files (any process, any machine sharing the disk)."""
    from features.store import run_shard as store_run_shard

    return store_run_shard(shard_task)


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
        technique,
        dict(settings["options"]),
        seed=int(settings["seed"]),
        replace=True,  # the stage owns its output: other params mean a new dataset
    )
    futures = [run_shard.submit(shard) for shard in job.tasks]
    for future in futures:  # committed in shard order as they finish
        job.commit(future.result())
    manifest = job.finish()
    return {"counts": manifest["counts"], "content_hash": manifest["content_hash"]}
