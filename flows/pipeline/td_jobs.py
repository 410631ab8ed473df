"""The TD study's jobs (pipeline/stages/td.py) run in worker processes with a progress bar. The jobs
themselves (what a configuration is, the work it does) are models.td_sweep's: each a dict of
plain values with its paths absolute, so that on a cluster (a `mapper`: stage_io.fan_out) it runs
on any worker sharing the data root and its result comes back as files there plus a small
dict."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_context
from typing import Any


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

    from models.td_sweep import train_and_measure

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
