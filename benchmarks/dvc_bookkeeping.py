"""What DVC itself costs over the default profile's pipeline, before and after a change to
dvc.yaml's source deps (issue 68: every stage's exact files, then one stamp per set of files).

Each commit is cloned under benchmarks/out/dvc-bookkeeping/, each pipeline stage's command
replaced by a stand-in that writes its outputs (this script with --stand-in), and `dvc repro`
run there: what is left is DVC's own work (deps hashed, outputs cached, dvc.lock loaded and
rewritten after every stage). Prints JSON: per commit the wall and CPU seconds of `dvc repro`,
the lock's stages, dep entries and bytes, and DVC's own YAML load and dump of it; the C
yardstick (games/s) before and after, and the load average.

    nice -n 10 .venv/bin/python benchmarks/dvc_bookkeeping.py [--before REV] [--after REV]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.neat_generation import yardstick  # noqa: E402

BIN = Path(sys.executable).parent
WORK = ROOT / "benchmarks" / "out" / "dvc-bookkeeping"


def stand_in(outs: list[str]) -> None:
    """A stage's outputs, made: a file where the path has a suffix, else a folder with one."""
    for out in outs:
        path = Path(out)
        if path.suffix:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("placeholder\n")
        else:
            path.mkdir(parents=True, exist_ok=True)
            (path / "placeholder.txt").write_text("placeholder\n")


def stubbed_clone(revision: str, folder: Path) -> None:
    """A clone of `revision` whose pipeline stages run the stand-in (the stamp stage its own)."""
    from ruamel.yaml import YAML

    shutil.rmtree(folder, ignore_errors=True)
    subprocess.run(["git", "clone", "-q", str(ROOT), str(folder)], check=True)
    subprocess.run(["git", "checkout", "-q", revision], cwd=folder, check=True)
    yaml_rt = YAML()
    yaml_rt.width = 4096
    document = yaml_rt.load((folder / "dvc.yaml").read_text())
    for name, stage in document["stages"].items():
        if name == "sources":
            continue
        body = stage["do"] if "foreach" in stage else stage
        entries = [e for field in ("outs", "metrics", "plots") for e in body.get(field) or []]
        outs = [next(iter(e)) if isinstance(e, dict) else str(e) for e in entries]
        body["cmd"] = " ".join([sys.executable, str(Path(__file__).resolve()), "--stand-in", *outs])
    with (folder / "dvc.yaml").open("w") as out:
        yaml_rt.dump(document, out)
    if not (folder / ".dvc").is_dir():
        subprocess.run([BIN / "dvc", "init", "-q"], cwd=folder, check=True)


def measure(revision: str) -> dict:
    folder = WORK / revision.replace("/", "_").replace("~", "-")
    stubbed_clone(revision, folder)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DVC_", "PYTHONPATH"))}
    env.update(PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}", DVC_NO_ANALYTICS="1")
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    done = subprocess.run([BIN / "dvc", "repro", "-q"], cwd=folder, env=env, capture_output=True,
                          text=True)  # fmt: skip
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"dvc repro failed in {folder}:\n{done.stderr[-2000:]}")
    from dvc.utils.serialize import dumps_yaml, parse_yaml

    text = (folder / "dvc.lock").read_text()
    began = time.perf_counter()
    lock = parse_yaml(text, "dvc.lock")
    loaded = time.perf_counter() - began
    began = time.perf_counter()
    dumps_yaml(lock)
    dumped = time.perf_counter() - began
    stages = lock["stages"]
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    head = ["git", "rev-parse", "--short", "HEAD"]
    commit = subprocess.run(head, cwd=folder, capture_output=True, text=True).stdout.strip()
    return {
        "commit": commit,
        "dvc_yaml_lines": len((folder / "dvc.yaml").read_text().splitlines()),
        "stages": len(stages),
        "lock_dep_entries": sum(len(s.get("deps", [])) for s in stages.values()),
        "lock_bytes": len(text.encode()),
        "lock_load_s": round(loaded, 2),
        "lock_dump_s": round(dumped, 2),
        "dvc_repro_wall_s": round(wall, 1),
        "dvc_repro_cpu_s": round(cpu, 1),
        "load_average_at_start": round(load, 2),
    }


def main() -> None:
    if sys.argv[1:2] == ["--stand-in"]:
        stand_in(sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="ba18671~1", help="every stage's exact files")
    parser.add_argument("--after", default="HEAD", help="one stamp per set of files")
    args = parser.parse_args()
    first = yardstick()
    runs = {"before": measure(args.before), "after": measure(args.after)}
    last = yardstick()
    ratio = runs["after"]["dvc_repro_cpu_s"] / runs["before"]["dvc_repro_cpu_s"]
    print(json.dumps({**runs, "after_over_before_cpu": round(ratio, 3),
                      "yardstick_games_per_s": [first, last]}, indent=1))  # fmt: skip


if __name__ == "__main__":
    main()
