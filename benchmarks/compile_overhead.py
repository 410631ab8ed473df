"""What a process pays before its first kernel with a slice assignment runs: numba as shipped
against numba with `engine.numba_patches` (the fixed-message error path), fresh processes, no
cache. Every process that compiles a kernel cold pays the difference once: each stage of a cold
`dvc repro`, each test process. Prints JSON; the unpatched process is the same run's reference.

    .venv/bin/python benchmarks/compile_overhead.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

PROBE = """
import time, numpy as np
{setup}
from numba import njit

@njit
def copy_into(target, source):
    target[:] = source
    return target.sum()

started = time.perf_counter()
copy_into(np.zeros(4), np.ones(4))
print(time.perf_counter() - started)
"""
SETUPS = {"numba as shipped": "", "with engine.numba_patches": "import engine.numba_patches"}


def first_compile_seconds(setup: str) -> float:
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(setup=setup)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return float(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    seconds = {name: [] for name in SETUPS}
    for _ in range(args.repeats):  # interleaved, so load drifts hit both alike
        for name, setup in SETUPS.items():
            seconds[name].append(first_compile_seconds(setup))
    medians = {name: statistics.median(values) for name, values in seconds.items()}
    shipped, patched = medians["numba as shipped"], medians["with engine.numba_patches"]
    print(json.dumps({
        "first_compile_seconds": {name: [round(v, 3) for v in vs] for name, vs in seconds.items()},
        "median_seconds": {name: round(v, 3) for name, v in medians.items()},
        "saved_per_cold_process_seconds": round(shipped - patched, 3),
        "patched_over_shipped": round(patched / shipped, 3),
    }, indent=2))  # fmt: skip


if __name__ == "__main__":
    main()
