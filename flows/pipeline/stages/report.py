"""The report stage: reports/pipeline/ (README.md and its plots).

The stage owns only that subfolder and replaces it whole: the rest of `reports/` holds files
people keep in git (each study's published figures beside ours), which `dvc repro` must never
touch.
"""

from __future__ import annotations

from pathlib import Path

from prefect import flow

from flows.pipeline.stage_io import atomic_dir

#: the report stage's output, relative to the project root (dvc.yaml `outs` of `report`)
REPORT_DIR = Path("reports") / "pipeline"


@flow(name="report")
def report_flow(root: Path, params: dict) -> Path:
    from flows.reports.pipeline import write_report

    folder = Path(root) / REPORT_DIR
    with atomic_dir(folder) as scratch:
        write_report(root, params["games"], scratch)
        from flows.reports.study000 import (
            write_study000,  # study 000's tables, this profile's scale
        )

        write_study000(root, params, scratch / "study-000.md", scratch / "study-000")
    return folder / "README.md"
