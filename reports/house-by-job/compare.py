"""Before/after comparison of the tiny profile's outputs (issue 68).

    python compare.py BEFORE BEFORE_AGAIN AFTER > comparison.json

Each argument is a copy `repro_tiny.py` ran `dvc repro` in (its `repo/`). For every DVC output
of dvc.lock: its DVC hash before and after, each file that differs, and for those the fields that
differ (JSON paths, Parquet columns, ONNX weights, graph or metadata), beside the fields that
differ between two runs of the old code (BEFORE, BEFORE_AGAIN): a field in both is one that
varies run to run (timings, MLflow run ids), not a change the restructure made.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import yaml


def files_of(root: Path) -> dict[str, dict]:
    """{stage:out: {"md5": DVC's hash, "files": {file: md5}}} of every output in dvc.lock."""
    lock = yaml.safe_load((root / "dvc.lock").read_text())["stages"]
    result = {}
    for stage, entry in sorted(lock.items()):
        for out in entry.get("outs", []):
            path = root / out["path"]
            found = [path] if path.is_file() else sorted(f for f in path.rglob("*") if f.is_file())
            result[f"{stage}:{out['path']}"] = {
                "md5": out.get("md5"),
                "files": {
                    (f.relative_to(path).as_posix() if f != path else "."): hashlib.md5(
                        f.read_bytes()
                    ).hexdigest()
                    for f in found
                },
            }
    return result


def walk(a, b, path=""):
    """JSON paths where a and b differ (list items as `[]`)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            yield from walk(a.get(key), b.get(key), f"{path}.{key}")
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for x, y in zip(a, b, strict=True):
            yield from walk(x, y, f"{path}[]")
    elif a != b:
        yield path


def fields(name: str, x: Path, y: Path) -> list[str]:
    """What differs between two versions of one output file."""
    if name.endswith(".json") or (name == "." and x.suffix == ".json"):
        return sorted(set(walk(json.loads(x.read_text()), json.loads(y.read_text()))))
    if name.endswith(".parquet"):
        import pyarrow.parquet as pq

        a, b = pq.read_table(x), pq.read_table(y)
        if a.schema != b.schema:
            return ["<schema>"]
        return sorted(c for c in a.column_names if not a.column(c).equals(b.column(c)))
    if name.endswith(".onnx"):
        import onnx
        from onnx import numpy_helper

        a, b = onnx.load(x), onnx.load(y)
        out = []
        wa = {i.name: numpy_helper.to_array(i) for i in a.graph.initializer}
        wb = {i.name: numpy_helper.to_array(i) for i in b.graph.initializer}
        if wa.keys() != wb.keys() or any(not np.array_equal(wa[k], wb[k]) for k in wa):
            out.append("<weights>")
        if a.graph.node != b.graph.node:
            out.append("<graph>")
        ma = {p.key: p.value for p in a.metadata_props}
        mb = {p.key: p.value for p in b.metadata_props}
        for key in sorted(set(ma) | set(mb)):
            if ma.get(key) != mb.get(key):
                try:
                    inner = walk(json.loads(ma.get(key, "{}")), json.loads(mb.get(key, "{}")))
                    out += [f"metadata {key}{p}" for p in sorted(set(inner))]
                except ValueError:
                    out.append(f"metadata {key}")
        return out
    return ["<bytes>"]


def covered(field: str, noise: list[str]) -> bool:
    return any(field == n or n.startswith(field + ".") or field.startswith(n + ".") for n in noise)


def main() -> None:
    before, again, after = (Path(p) for p in sys.argv[1:4])
    b1, b2, af = files_of(before), files_of(again), files_of(after)
    rows = {}
    for key in sorted(set(b1) | set(af)):
        if key not in b1 or key not in af:
            rows[key] = {"only": "after" if key in af else "before"}
            continue
        out = key.partition(":")[2]
        f1, f2, fa = b1[key]["files"], b2.get(key, {}).get("files", {}), af[key]["files"]
        row = {"md5_before": b1[key]["md5"], "md5_before_again": b2.get(key, {}).get("md5"),
               "md5_after": af[key]["md5"], "identical": b1[key]["md5"] == af[key]["md5"],
               "files": {}}  # fmt: skip
        for name in sorted(f for f in set(f1) | set(fa) if f1.get(f) != fa.get(f)):
            old, rerun, new = (
                r / out / name if name != "." else r / out for r in (before, again, after)
            )
            if name not in f1 or name not in fa:
                row["files"][name] = {"only": "after" if name in fa else "before"}
                continue
            changed = fields(name, old, new)
            noise = fields(name, old, rerun) if name in f2 else []
            row["files"][name] = {
                "fields_after": changed,
                "fields_between_two_old_runs": noise,
                "changed_by_the_restructure": [f for f in changed if not covered(f, noise)],
            }
        rows[key] = row
    print(json.dumps(rows, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
