"""The test suite's wall-clock on a clean clone, cold then warm, beside the plain-C yardstick run
before and after: `make test` (the whole suite) within 15 minutes on 2 cores, `make test-fast`
(`--tier fast`: every test not marked slow) within 3.

Cold is what CI runs: a `git clone` of the checkout's HEAD (commit first), the checkout's `.venv`
linked in (installing is not timed), `CI=true`, pytest as `make test` runs it (bytecode written,
no pytest cache), so every numba kernel compiles once. Warm repeats it in the same clone with the
kernels now cached in `__pycache__`: the difference is what compiling costs a fresh clone. CPU
seconds are those of every process the run waited for (pytest, its workers, the stages and CLIs
the tests start). pytest's own progress goes to stderr; JSON Lines on stdout, one per run, then
the summary.

    .venv/bin/python benchmarks/suite.py [--tier whole|fast] [--runs cold warm] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import deque
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.neat_generation import yardstick  # noqa: E402

TARGET_S = {"whole": 900.0, "fast": 180.0}  # make test, make test-fast
TIER_ARGS = {"whole": [], "fast": ["-m", "not slow"]}  # as the Makefile runs each


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_suite(clone: Path, name: str, tier: str) -> dict:
    env = {**os.environ, "CI": "true"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # the Makefile clears it: bytecode is written
    # the linked .venv's editable install maps the packages to the checkout: without this, the
    # stages `dvc repro` starts (console scripts, no clone on sys.path) ran the checkout's code
    # against its warm numba cache, not the clone's cold one as CI does
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(clone), env.get("PYTHONPATH")]))
    cpu, start = children_cpu(), time.perf_counter()
    process = subprocess.Popen(
        [str(clone / ".venv" / "bin" / "python"), "-m", "pytest", "-p", "no:cacheprovider",
         *TIER_ARGS[tier]],
        cwd=clone, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    tail: deque[str] = deque(maxlen=40)
    for line in process.stdout:
        sys.stderr.write(line)
        tail.append(line)
    process.wait()
    wall, cpu = time.perf_counter() - start, children_cpu() - cpu
    final = re.compile(r"\d+ (passed|failed|errors?)\b.* in [\d.]+s")  # pytest's last line
    summary = next((t for t in reversed(tail) if final.search(t)), "")
    counts = {k: int(n) for n, k in re.findall(r"(\d+) (passed|failed|errors?|skipped)", summary)}
    pytest_s = re.search(r" in ([\d.]+)s", summary)
    return {
        "run": name,
        "tier": tier,
        "returncode": process.returncode,
        "wall_s": round(wall, 1),
        "pytest_s": float(pytest_s.group(1)) if pytest_s else None,
        "cpu_s": round(cpu, 1),
        "cores_busy": round(cpu / wall, 2),
        **counts,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tier", choices=sorted(TARGET_S), default="whole")
    parser.add_argument("--runs", nargs="+", choices=("cold", "warm"), default=["cold", "warm"])
    parser.add_argument("--keep", action="store_true", help="keep the clone (its path is printed)")
    args = parser.parse_args()
    if not (REPO / ".venv" / "bin" / "python").is_file():
        print("suite: no .venv in the checkout (run `make install` first)", file=sys.stderr)
        return 2
    clone = Path(tempfile.mkdtemp(prefix="gridbots-suite-")) / "repo"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
    (clone / ".venv").symlink_to(REPO / ".venv", target_is_directory=True)
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=clone, check=True,
                          capture_output=True, text=True).stdout.strip()  # fmt: skip
    before = yardstick()
    results = {}
    try:
        for name in args.runs:
            results[name] = run_suite(clone, name, args.tier)
            print(json.dumps({"commit": head, **results[name]}), flush=True)
    finally:
        after = yardstick()
        if args.keep:
            print(f"suite: clone kept at {clone}", file=sys.stderr)
        else:
            shutil.rmtree(clone.parent, ignore_errors=True)
    target = TARGET_S[args.tier]
    summary: dict = {"commit": head, "tier": args.tier, "yardstick_before": before,
                     "yardstick_after": after, "target_s": target}  # fmt: skip
    for name, result in results.items():
        summary[f"{name}_under_target"] = result["pytest_s"] is not None and (
            result["pytest_s"] <= target
        )
    if {"cold", "warm"} <= set(results):
        cold, warm = results["cold"]["cpu_s"], results["warm"]["cpu_s"]
        summary["compile_cpu_s"] = round(cold - warm, 1)
        summary["compile_share_of_cold_cpu"] = round((cold - warm) / cold, 3)
    print(json.dumps(summary), flush=True)
    return max((r["returncode"] for r in results.values()), default=0)


if __name__ == "__main__":
    sys.exit(main())
