"""Helpers of the TD chain's flows: worker-process jobs with a progress bar, stage outputs,
the long runs and their curve file (pipeline/stages/td.py). Every job is a dict of plain values
with its paths absolute, so that on a cluster (a `mapper`: stage_io.fan_out) it runs on any
worker sharing the data root and its result comes back as files there plus a small dict."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_context
from pathlib import Path
from typing import Any


def read_output(root: Path, game: str, part: str, stage: str) -> dict:
    """A JSON output of an earlier stage of the chain; StageError naming that stage if absent."""
    from flows.pipeline.stage_io import StageError

    path = Path(root) / "td" / game / part
    if not path.is_file():
        raise StageError(f"{path} is missing: run `gridbots stage {stage} {game}` first")
    return json.loads(path.read_text())


def run_jobs(
    jobs: list[dict],
    workers: int,
    title: str,
    work: Callable[[dict], Any] | None = None,
    mapper: Callable[[Callable[[dict], Any], list[dict]], Iterable[Any]] | None = None,
) -> list[Any]:
    """Runs `work` (default: train_and_measure) on every job, `workers` processes at a time
    (or, given a `mapper`, as its cluster tasks), with a progress bar; results in job order."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    from models.td_matches import train_and_measure

    work = work or train_and_measure
    results: list[Any] = [None] * len(jobs)
    columns = (
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, transient=False) as bar:
        task_id = bar.add_task(title, total=len(jobs))
        if mapper is not None:
            for i, result in enumerate(mapper(work, jobs)):
                results[i] = result
                bar.advance(task_id)
        elif workers <= 1 or len(jobs) <= 1:
            for i, job in enumerate(jobs):
                results[i] = work(job)
                bar.advance(task_id)
        else:
            with ProcessPoolExecutor(workers, mp_context=get_context("spawn")) as pool:
                futures = {pool.submit(work, job): i for i, job in enumerate(jobs)}
                for future in as_completed(futures):
                    results[futures[future]] = future.result()
                    bar.advance(task_id)
    return [r for r in results if r is not None]


def job(game: str, params: dict, out: Path, measure: list[str], games: int, seed: int) -> dict:
    return {
        "game": game,
        "params": params,
        "out": str(out),
        "measure": measure,
        "measure_games": games,
        "seed": seed,
        "opening": 4,
    }


def kept_job(job: dict) -> dict:
    """train_and_measure that keeps its result beside its model (OUT/entry.json, written
    last) and returns that one when the same job runs again: a killed sweep resumes where it
    stopped instead of training every configuration again."""
    from flows.pipeline.stage_io import write_json
    from models.td_matches import train_and_measure

    done = Path(job["out"]) / "entry.json"
    if done.is_file():
        entry = json.loads(done.read_text())
        if entry.get("job") == job and Path(entry["artifact"]).is_file():
            return entry
    entry = {**train_and_measure(job), "job": job}
    write_json(done, entry)
    return entry


def long_job(job: dict) -> dict:
    """One long run in a worker process: resumable training with its learning curve."""
    import time

    from engine import parse_game_spec
    from models import td
    from models.td_matches import curve_point

    began = time.perf_counter()
    game = parse_game_spec(job["game"])
    point = curve_point(game, job["curve_opponents"], job["curve_games"], job["params"]["seed"])

    def progress(games: int, metrics: dict) -> None:
        if "curve_games" in metrics:
            scores = ", ".join(
                f"{k[9:]} {v:.3f}" for k, v in metrics.items() if k.startswith("score_vs_")
            )
            print(f"{job['name']}: {games:,} games: {scores}", flush=True)

    result = td.train(
        job["game"],
        job["params"],
        job["out"],
        progress=progress,
        curve=point,
        curve_every=job["curve_every"],
        checkpoint=job["checkpoint"],
    )
    return {
        "label": td.label(result.params),
        "params": result.params,
        "metrics": result.metrics,
        "history": result.history,
        "artifact": str(result.artifact),
        "seconds": time.perf_counter() - began,
    }


def write_curve(path: Path, histories: dict[str, dict[str, list[float]]]) -> None:
    """The learning curves (scores by training games) as one wide CSV for `dvc plots`."""
    rows: dict[float, dict[str, float]] = {}
    columns: list[str] = []
    for name, history in histories.items():
        for key in (k for k in history if k.startswith("score_vs_")):
            column = f"{name}:{key}"
            columns.append(column)
            for games, value in zip(history.get("curve_games", []), history[key], strict=False):
                rows.setdefault(games, {})[column] = value
    lines = [",".join(["games", *columns])]
    for games in sorted(rows):
        cells = [f"{rows[games][c]:.4f}" if c in rows[games] else "" for c in columns]
        lines.append(",".join([f"{games:.0f}", *cells]))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
