"""`gridbots stage study GAME`: a chain's figures beside its study's (studies/GAME); study 003's
comparison exists for territory, any other game gets one line and exit 2."""

from __future__ import annotations

from pathlib import Path

from prefect import flow

from flows.pipeline.stage_io import StageError, atomic_dir

#: the games with a study comparison (flows.reports.territory writes study 003's)
STUDIES = ("territory",)


def study_stage(root: Path, params: dict, game: str) -> Path:
    """The stage: GAME refused before any flow starts when it has no study comparison."""
    if game not in STUDIES:
        raise StageError(f"no study comparison for {game}; studies exist for: {', '.join(STUDIES)}")
    return study_flow(root, params, game)


@flow(name="study")
def study_flow(root: Path, params: dict, game: str) -> Path:
    """studies/GAME: our figures beside the study's (territory: curves, topologies, renders)."""
    from flows.reports.territory import write_study_report

    root = Path(root)
    with atomic_dir(root / "studies" / game) as scratch:
        write_study_report(root, params, scratch)
    return root / "studies" / game / "README.md"
