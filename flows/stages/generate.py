"""The generate stage: a dataset's shards fanned out on the task runner."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from prefect import flow, task

from flows.stage_io import RETRIES, atomic_dir, task_runner


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
    from engine import parse_game_spec
    from features import generate as techniques
    from features import store

    settings = params[game]["datasets"][technique]
    spec, seed = params[game]["spec"], int(settings["seed"])
    options = dict(settings["options"])
    with atomic_dir(Path(root) / "data" / game / technique) as scratch:
        g = parse_game_spec(spec)
        module, tparams = techniques.parse_params(g, technique, options)
        identity = store._identity(g, technique, tparams, seed)
        planned = techniques.num_shards(module, g, tparams)
        stride = techniques.game_id_stride(module, g, tparams)
        manifest = store._open(scratch, g, identity, planned)
        jobs = [
            {
                "game": g.spec(),
                "technique": technique,
                "params": tparams,
                "seed": seed,
                "shard": k,
                "first_game_id": k * stride,
                "root": str(scratch.resolve()),
            }
            for k in range(planned)
        ]
        futures = [run_shard.submit(job) for job in jobs]
        for future in futures:  # commit in shard order, as generate_dataset would
            result = future.result()
            for table, temp in result.pop("temp").items():
                os.replace(temp, store.shard_path(scratch, table, result["shard"]))
            manifest["shards"][str(result["shard"])] = result
        store._save(scratch, manifest)
        # resuming a dataset whose shards are all done only finalises its manifest
        manifest = store.generate_dataset(scratch, spec, technique, options, seed=seed)
    return {"counts": manifest["counts"], "content_hash": manifest["content_hash"]}
