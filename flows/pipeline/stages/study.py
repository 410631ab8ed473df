"""`gridbots stage study territory`: the chain's figures beside study 003's (studies/territory)."""

from __future__ import annotations

from pathlib import Path

from prefect import flow

from flows.pipeline.stage_io import atomic_dir

GAME = "territory"


@flow(name="study")
def study_flow(root: Path, params: dict) -> Path:
    """studies/territory: our figures beside study 003's (curves, topologies, renders)."""
    from flows.reports.territory import write_study_report

    root = Path(root)
    with atomic_dir(root / "studies" / GAME) as scratch:
        write_study_report(root, params, scratch)
    return root / "studies" / GAME / "README.md"
