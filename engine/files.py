"""Files written whole or not at all: a temporary name beside the target, then a rename, so a
killed process never leaves half a file (every layer writes its JSON through here)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def write_json(path: Path | str, data: Any, compact: bool = False) -> Path:
    """`data` as JSON at `path`: indented with sorted keys for people and diffs, or `compact`
    (no spaces, keys as given) for large machine files such as NEAT populations."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    if compact:
        text = json.dumps(data, separators=(",", ":"))
    else:
        text = json.dumps(data, indent=2, sort_keys=True, default=str)
    temp.write_text(text + "\n")
    os.replace(temp, path)
    return path
