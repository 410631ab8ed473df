"""The report stage: reports/README.md and its plots."""

from __future__ import annotations

from pathlib import Path

from prefect import flow

from flows.stage_io import atomic_dir


@flow(name="report")
def report_flow(root: Path, params: dict) -> Path:
    from flows.report import write_report

    root = Path(root)
    with atomic_dir(root / "reports") as scratch:
        write_report(root, params["games"], scratch)
    return root / "reports" / "README.md"
