"""The zoo-import stage: every zoo entry (zoo/GAME/NAME) into the registry before the trainings.

Each entry registers once under `<game>-<entry>` (models.bundle.import_zoo_entry), as its name's
first production version when the name has none: the candidates the pipeline trains under that
name then face the zoo bot at the promotion gate. A second run registers nothing. The record
(imports/zoo.json) holds no clock time, so an unchanged zoo writes the same bytes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import flow

from flows.pipeline.stage_io import use_tracking, write_json


@flow(name="zoo-import")
def zoo_import_flow(root: Path, params: dict, zoo_root: Path) -> dict[str, Any]:
    """Imports each entry under `zoo_root`; writes imports/zoo.json under `root`."""
    from models import zoo
    from models.bundle import import_zoo_entry

    use_tracking(params, root)
    done = [import_zoo_entry(folder) for folder in zoo.entries(zoo_root)]
    kept = [{k: v for k, v in row.items() if k != "imported"} for row in done]
    write_json(Path(root) / "imports" / "zoo.json", {"entries": kept})
    return {"entries": done}
