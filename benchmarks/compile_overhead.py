"""What numba's compilation costs with and without `engine.numba_patches`, fresh processes,
no cache (each run its own empty NUMBA_CACHE_DIR); the unpatched process is the same run's
reference. Prints JSON.

- `slice`: a process's first kernel with a slice assignment, numba as shipped against the
  fixed-message error path. Every process that compiles a kernel cold pays it once: each stage
  of a cold `dvc repro`, each test process.
- `games` (`--games`): a territory game and a tactics game against random with MCTS, kernels and
  search compiled cold, with numba's literal typing of calls between jitted functions (a helper
  compiled once per constant it is called with) against the patch's plain typing.

    .venv/bin/python benchmarks/compile_overhead.py [--repeats 3] [--games]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

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
GAMES_PROBE = """
import time
{setup}
from agents import make
from engine.match import play_game
from engine.registry import parse_game_spec

started = time.perf_counter()
for spec, agent in (("territory", "mcts:sims=20"), ("tactics:units=2", "mcts:sims=10,per=turn")):
    game = parse_game_spec(spec)
    play_game(game, [make(agent, game, seed=1), make("random", game, seed=2)], seed=1)
print(time.perf_counter() - started)
"""
GAMES_SETUPS = {
    "literal typing (numba as shipped)": (
        "import engine.numba_patches as patches\n"
        "from numba.core import dispatcher\n"
        "dispatcher._DispatcherBase.get_call_template = patches.SHIPPED_CALL_TYPING"
    ),
    "plain typing first (engine.numba_patches)": "import engine.numba_patches",
}


def first_compile_seconds(probe: str, setup: str) -> float:
    with tempfile.TemporaryDirectory() as cache:
        done = subprocess.run(
            [sys.executable, "-c", probe.format(setup=setup)],
            capture_output=True, text=True, check=True,
            env={**os.environ, "NUMBA_CACHE_DIR": cache},
        )  # fmt: skip
    return float(done.stdout.strip().splitlines()[-1])


def compare(probe: str, setups: dict[str, str], repeats: int) -> dict:
    seconds = {name: [] for name in setups}
    for _ in range(repeats):  # interleaved, so load drifts hit both alike
        for name, setup in setups.items():
            seconds[name].append(first_compile_seconds(probe, setup))
    medians = {name: statistics.median(values) for name, values in seconds.items()}
    shipped, patched = medians.values()
    return {
        "seconds": {name: [round(v, 3) for v in values] for name, values in seconds.items()},
        "median_seconds": {name: round(v, 3) for name, v in medians.items()},
        "saved_seconds": round(shipped - patched, 3),
        "patched_over_shipped": round(patched / shipped, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--games", action="store_true", help="also the territory+tactics probe")
    args = parser.parse_args()
    results = {"slice": compare(PROBE, SETUPS, args.repeats)}
    if args.games:
        results["games"] = compare(GAMES_PROBE, GAMES_SETUPS, args.repeats)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
