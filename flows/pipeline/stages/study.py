"""`gridbots stage study GAME`: a study's reproduction on GAME (studies/GAME): study 003's
comparison for territory (our NEAT figures beside the study's), study 002's design and matrices
for othello (params `othello.study`, flows/pipeline/stages/td.py); any other game gets one line
and exit 2."""

from __future__ import annotations

from pathlib import Path

from prefect import flow

from flows.pipeline.stage_io import StageError, atomic_dir

#: the games with a study (territory: study 003's comparison; othello: study 002's TD design)
STUDIES = ("territory", "othello")


def study_stage(root: Path, params: dict, game: str, dask: str | None = None) -> Path:
    """The stage: GAME refused before any flow starts when it has no study; othello's
    configurations on a Dask cluster when given its address."""
    if game not in STUDIES:
        raise StageError(f"no study comparison for {game}; studies exist for: {', '.join(STUDIES)}")
    if game == "othello":
        from agents.onnx.runtime import process_pool
        from flows.pipeline.stage_io import run_flow
        from flows.pipeline.stages.td import study_flow as td_study_flow

        if not isinstance(params[game].get("study"), dict):
            raise StageError(f"stage study-{game}: key {game}.study is missing")
        workers = int(params["workers"])  # the configurations side by side, one process each
        run_flow(
            td_study_flow, params, dask, root, params, game, processes=workers, pool=process_pool
        )
        return Path(root) / "studies" / game / "study.json"
    return study_flow(root, params, game)


@flow(name="study")
def study_flow(root: Path, params: dict, game: str) -> Path:
    """studies/GAME: our figures beside the study's (territory: curves, topologies, renders)."""
    from flows.reports.territory import write_study_report

    root = Path(root)
    with atomic_dir(root / "studies" / game) as scratch:
        write_study_report(root, params, scratch)
    return root / "studies" / game / "README.md"
